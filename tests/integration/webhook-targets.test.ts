/** SSRF: in production mode, private and loopback targets are refused without a connection. */
import assert from "node:assert/strict";
import { startTestService } from "../helpers/service.ts";
import { createMerchant } from "../helpers/accounts.ts";
import {
  attemptDelivery,
  emit,
  validateWebhookUrl,
} from "../../src/modules/webhooks/webhooks.service.ts";
import { checkWebhookUrl, isPublicAddress } from "../../src/modules/webhooks/webhooks.targets.ts";
import { DomainError } from "../../src/errors.ts";
import { answerFor } from "../../src/http/error-map.ts";
import { waitFor } from "../helpers/poll.ts";

Deno.test("webhook targets: the SSRF matrix under the public policy", async () => {
  // A TCP listener standing in for anything on loopback: it must never see a connection.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  let connections = 0;
  (async () => {
    for await (const conn of listener) {
      connections++;
      conn.close();
    }
  })();
  const svc = await startTestService({ env: { RATE_LIMITS: "off", WEBHOOK_TARGETS: "public" } });
  try {
    const m = await createMerchant(svc);
    const targets = [
      `https://127.0.0.1:${port}/`,
      `https://[::1]:${port}/`,
      "https://169.254.169.254/latest/meta-data/",
      "https://10.0.0.5/hook",
      "https://100.64.0.1/hook",
      `https://0x7f000001:${port}/`,
      `https://2130706433:${port}/`,
      `https://[::ffff:127.0.0.1]:${port}/`,
      `https://localhost:${port}/`, // a name that resolves to loopback: refused at lookup
      `http://example.com/hook`, // not https
    ];
    for (const url of targets) {
      const id = await svc.db.sql.begin((tx) =>
        emit(svc.deps, tx, {
          merchantId: m.id,
          url,
          event: "payment.settled",
          payload: { reference: "pay_ref_x" },
        })
      );
      // The worker makes the attempt; the refusal is final at once.
      await waitFor(
        async () =>
          (await svc.db.sql`select status from webhook_deliveries where id = ${id}`)[0].status !==
            "pending",
        { what: url },
      );
      assert.equal(await attemptDelivery(svc.deps, id), null, "nothing left to attempt");
      const [d] = await svc.db
        .sql`select status, attempts, last_error, next_attempt_at from webhook_deliveries where id = ${id}`;
      assert.equal(d.status, "undelivered", url);
      assert.equal(d.attempts, 1, `${url}: refused targets are not retried`);
      assert.match(d.lastError, /^refused: /, `${url}: ${d.lastError}`);
      const [a] = await svc.db
        .sql`select outcome, status_code from webhook_attempts where delivery_id = ${id}`;
      assert.equal(a.outcome, "refused");
      assert.equal(a.statusCode, null);
    }
    assert.equal(connections, 0, "no connection reached the loopback listener");

    // The same URLs given on a request are refused at once (when the check can tell statically).
    for (
      const url of [
        "http://example.com/x",
        "https://127.0.0.1/x",
        "not a url",
        "https://user:pw@example.com/",
      ]
    ) {
      assert.throws(
        () => validateWebhookUrl(svc.deps, url),
        (e: unknown) => e instanceof DomainError && answerFor(e).status === 400,
      );
    }
    assert.equal(
      validateWebhookUrl(svc.deps, "https://hooks.example.com/settle"),
      "https://hooks.example.com/settle",
    );
  } finally {
    listener.close();
    await svc.close();
  }
});

Deno.test("webhook targets: address classification", () => {
  for (const a of ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111"]) {
    assert.equal(isPublicAddress(a), true, a);
  }
  for (
    const a of [
      "127.0.0.1",
      "::1",
      "10.1.2.3",
      "172.16.0.1",
      "192.168.1.1",
      "169.254.169.254",
      "100.64.0.1",
      "0.0.0.0",
      "::",
      "fd00:ec2::254",
      "fe80::1",
      "::ffff:7f00:1",
      "64:ff9b::a00:1",
      "2002:a00:1::1",
      "224.0.0.1",
      "255.255.255.255",
      "not-an-ip",
    ]
  ) assert.equal(isPublicAddress(a), false, a);
  assert.equal(
    checkWebhookUrl("http://127.0.0.1:8080/x", "any").ok,
    true,
    "local targets in development",
  );
  assert.equal(checkWebhookUrl("ftp://example.com/", "any").ok, false);
  assert.equal(checkWebhookUrl("https://0x7f000001/", "public").ok, false);
  assert.equal(checkWebhookUrl("https://2130706433/", "public").ok, false);
  // localhost names (RFC 6761) are refused at request time too, not only at delivery.
  for (const u of ["https://localhost/h", "https://localhost./h", "https://foo.LOCALHOST/h"]) {
    assert.equal(checkWebhookUrl(u, "public").ok, false, u);
  }
  assert.equal(checkWebhookUrl("https://notlocalhost.example/h", "public").ok, true);
  assert.equal(checkWebhookUrl("http://localhost:8080/h", "any").ok, true, "development");
});
