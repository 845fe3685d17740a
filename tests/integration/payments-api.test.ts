/** Payment links, checkout sessions, verify and history: shapes, validation, scoping. */
import assert from "node:assert/strict";
import { startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";

Deno.test("payments API", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const call = api(svc);
  try {
    const m = await createMerchant(svc, { businessName: "Corner Shop" });
    const key = async (type: string, environment: string) =>
      ((await call("POST", "/api/keys", { cookie: m.cookie, body: { type, environment } })).json
        .key as { key: string }).key;
    const testKey = await key("secret", "test");
    const liveKey = await key("secret", "live");
    const pubTest = await key("publishable", "test");

    await t.step(
      "payment link: the spec's response and a PENDING record on production",
      async () => {
        const r = await call("POST", "/api/merchant/payment-link", {
          cookie: m.cookie,
          body: { amount: "12.50", description: "Two coffees" },
        });
        assert.equal(r.status, 201, r.text);
        assert.match(r.json.reference as string, /^pay_ref_[0-9A-Za-z]{20}$/);
        assert.equal(r.json.checkoutUrl, `${svc.baseUrl}/checkout/${r.json.reference}`);
        assert.deepEqual(
          { ...r.json, reference: undefined, checkoutUrl: undefined },
          {
            success: true,
            reference: undefined,
            checkoutUrl: undefined,
            amount: 12.5,
            currency: "USDC",
            description: "Two coffees",
            merchant: "Corner Shop",
            expiresIn: "24 hours",
          },
        );
        const [row] = await svc.db.sql`select * from payments where reference = ${r.json
          .reference as string}`;
        assert.equal(row.status, "PENDING");
        assert.equal(row.amount, 12_500_000n);
        assert.equal(row.chainId, 5042);
        assert.equal(row.payTo, m.walletAddress!.toLowerCase());
        assert.equal(row.expiresAt.getTime() - row.createdAt.getTime(), 24 * 3600 * 1000);
        const list = await call("GET", "/api/merchant/payment-link", { cookie: m.cookie });
        const links = list.json.links as Array<Record<string, unknown>>;
        assert.equal(links[0].reference, r.json.reference);
        assert.deepEqual(Object.keys(links[0]).sort(), [
          "amount",
          "checkoutUrl",
          "createdAt",
          "currency",
          "description",
          "expiresAt",
          "reference",
          "status",
        ]);
      },
    );

    await t.step("bad input: the spec's text and nothing written", async () => {
      const before = (await svc.db.sql`select count(*)::int as n from payments`)[0].n;
      for (
        const amount of [
          "abc",
          "0",
          "0.000000",
          "-5",
          "1.0000001",
          "1e3",
          " 5",
          "5 ",
          "",
          "1,000",
          5,
          null,
        ]
      ) {
        const r = await call("POST", "/api/merchant/payment-link", {
          cookie: m.cookie,
          body: { amount },
        });
        assert.deepEqual(
          [r.status, r.json.error],
          [400, "Valid amount is required."],
          `amount ${JSON.stringify(amount)}`,
        );
      }
      const missing = await call("POST", "/api/merchant/payment-link", {
        cookie: m.cookie,
        body: {},
      });
      assert.equal(missing.json.error, "Valid amount is required.");
      const eur = await call("POST", "/api/merchant/payment-link", {
        cookie: m.cookie,
        body: { amount: "1", currency: "EUR" },
      });
      assert.deepEqual([eur.status, eur.json.error], [400, "currency must be USDC."]);
      const hook = await call("POST", "/api/merchant/payment-link", {
        cookie: m.cookie,
        body: { amount: "1", webhookUrl: "not a url" },
      });
      assert.deepEqual([hook.status, hook.json.error], [
        400,
        "webhookUrl must be a valid public HTTPS URL.",
      ]);
      const noCookie = await call("POST", "/api/merchant/payment-link", {
        headers: { "x-api-key": liveKey },
        body: { amount: "1" },
      });
      assert.deepEqual([noCookie.status, noCookie.json.error], [401, "Not authenticated."]);
      const after = (await svc.db.sql`select count(*)::int as n from payments`)[0].n;
      assert.equal(after, before);
    });

    await t.step("no payout wallet → 400 asking to finish wallet setup", async () => {
      const ext = await createMerchant(svc, { walletProvider: "EXTENSION_WALLET" });
      assert.equal(ext.walletAddress, null);
      const r = await call("POST", "/api/merchant/payment-link", {
        cookie: ext.cookie,
        body: { amount: "3" },
      });
      assert.equal(r.status, 400);
      assert.match(r.json.error as string, /payout wallet/);
    });

    let sessionRef = "";
    await t.step("initialize: the key's prefix picks the chain; 120 minutes", async () => {
      const r = await call("POST", "/api/payments/initialize", {
        headers: { authorization: `Bearer ${testKey}` },
        body: { amount: "7.25", currency: "USDC", description: "Order #7" },
      });
      assert.equal(r.status, 201, r.text);
      sessionRef = r.json.reference as string;
      const data = r.json.data as Record<string, unknown>;
      assert.deepEqual({ ...data, expiresAt: undefined }, {
        amount: 7.25,
        currency: "USDC",
        status: "PENDING",
        description: "Order #7",
        expiresAt: undefined,
      });
      assert.equal(
        new Date(data.expiresAt as string).getTime() - svc.clock.now().getTime(),
        120 * 60 * 1000,
      );
      const [row] = await svc.db
        .sql`select chain_id, kind from payments where reference = ${sessionRef}`;
      assert.deepEqual([row.chainId, row.kind], [5042002, "session"]);
      const pub = await call("POST", "/api/payments/initialize", {
        headers: { "x-api-key": pubTest },
        body: { amount: "1" },
      });
      assert.deepEqual([pub.status, pub.json.error], [403, "Insufficient permissions"]);
      const pubBearer = await call("POST", "/api/payments/initialize", {
        headers: { authorization: `Bearer ${pubTest}` },
        body: { amount: "1" },
      });
      assert.deepEqual([pubBearer.status, pubBearer.json.error], [
        403,
        "Insufficient permissions",
      ]);
      // A publishable key ships in browsers: it verifies one payment, never lists them all.
      const pubList = await call("GET", "/api/payments", { headers: { "x-api-key": pubTest } });
      assert.deepEqual([pubList.status, pubList.json.error], [403, "Insufficient permissions"]);
    });

    await t.step(
      "verify: the record, scoped to the merchant and the key's environment",
      async () => {
        const r = await call("GET", `/api/payments/verify/${sessionRef}`, {
          headers: { "x-api-key": pubTest },
        });
        assert.equal(r.status, 200, r.text);
        const d = r.json.data as Record<string, unknown>;
        for (
          const k of [
            "id",
            "reference",
            "amount",
            "currency",
            "chain",
            "senderEmail",
            "direction",
            "merchant",
            "status",
            "chainTxHash",
            "timestamp",
            "webhookUrl",
          ]
        ) {
          assert.ok(k in d, k);
        }
        assert.deepEqual(
          [d.amount, d.chain, d.senderEmail, d.direction, d.merchant, d.status, d.chainTxHash],
          [7.25, "Settle_Testnet", "pending@checkout", "request", "Corner Shop", "PENDING", null],
        );
        // What only the merchant's own keys read: where its events go, and its metadata.
        svc.clock.advance(1000);
        const privateBits = await call("POST", "/api/payments/initialize", {
          headers: { authorization: `Bearer ${testKey}` },
          body: {
            amount: "0.5",
            currency: "USDC",
            webhookUrl: "https://hooks.example.com/settle?token=s3cret",
            metadata: { customerEmail: "alice@example.com" },
          },
        });
        assert.equal(privateBits.status, 201, privateBits.text);
        const ref = privateBits.json.reference as string;
        const seen = async (key: string) =>
          (await call("GET", `/api/payments/verify/${ref}`, { headers: { "x-api-key": key } }))
            .json.data as Record<string, unknown>;
        const byPublishable = await seen(pubTest);
        assert.equal(byPublishable.webhookUrl, null);
        assert.equal(byPublishable.metadata, null);
        const bySecret = await seen(testKey);
        assert.equal(bySecret.webhookUrl, "https://hooks.example.com/settle?token=s3cret");
        assert.deepEqual(bySecret.metadata, { customerEmail: "alice@example.com" });
        const live = await call("GET", `/api/payments/verify/${sessionRef}`, {
          headers: { "x-api-key": liveKey },
        });
        assert.deepEqual(
          [live.status, live.json.error],
          [404, "Payment not found."],
          "a live key does not see test payments",
        );
        const other = await createMerchant(svc);
        const otherKey = ((await call("POST", "/api/keys", {
          cookie: other.cookie,
          body: { type: "secret", environment: "test" },
        }))
          .json.key as { key: string }).key;
        const foreign = await call("GET", `/api/payments/verify/${sessionRef}`, {
          headers: { "x-api-key": otherKey },
        });
        assert.equal(foreign.status, 404);
      },
    );

    await t.step("history: newest first, status filter, cursor pagination", async () => {
      for (let i = 0; i < 5; i++) {
        svc.clock.advance(1000);
        await call("POST", "/api/payments/initialize", {
          headers: { "x-api-key": testKey },
          body: { amount: `${i + 1}` },
        });
      }
      const first = await call("GET", "/api/payments?limit=4", {
        headers: { "x-api-key": testKey },
      });
      assert.equal(first.status, 200);
      const page1 = first.json.data as Array<{ amount: number; timestamp: string }>;
      assert.deepEqual(page1.map((p) => p.amount), [5, 4, 3, 2]);
      assert.ok(first.json.nextCursor);
      const second = await call("GET", `/api/payments?limit=4&cursor=${first.json.nextCursor}`, {
        headers: { "x-api-key": testKey },
      });
      assert.deepEqual((second.json.data as Array<{ amount: number }>).map((p) => p.amount), [
        1,
        0.5,
        7.25,
      ]);
      assert.equal(second.json.nextCursor, null);
      // The README's template with blanks left in: an empty parameter is an absent one.
      const blanks = await call("GET", "/api/payments?status=&limit=4&cursor=", {
        headers: { "x-api-key": testKey },
      });
      assert.equal(blanks.status, 200, blanks.text);
      assert.deepEqual((blanks.json.data as Array<{ amount: number }>).map((p) => p.amount), [
        5,
        4,
        3,
        2,
      ]);
      const none = await call("GET", "/api/payments?status=SUCCESS", {
        headers: { "x-api-key": testKey },
      });
      assert.deepEqual(none.json.data, []);
      const bad = await call("GET", "/api/payments?status=DONE", {
        headers: { "x-api-key": testKey },
      });
      assert.equal(bad.status, 400);
      const badCursor = await call("GET", "/api/payments?cursor=zzz", {
        headers: { "x-api-key": testKey },
      });
      assert.equal(badCursor.status, 400);
    });

    await t.step("the profile and the dashboard now show real payments", async () => {
      // The session is in its default (live) mode: the profile is production's, like a live key's
      // (issue 23: environments are part of identity); switched to test mode, testnet's.
      const live = await call("GET", "/api/merchant/me", { cookie: m.cookie });
      assert.equal((live.json.stats as Record<string, number>).totalPayments, 1);
      assert.equal((live.json.recentPayments as unknown[]).length, 1);
      await svc.db.sql`update merchant_sessions set mode = 'test' where merchant_id = ${m.id}`;
      const me = await call("GET", "/api/merchant/me", { cookie: m.cookie });
      await svc.db.sql`update merchant_sessions set mode = 'live' where merchant_id = ${m.id}`;
      const stats = me.json.stats as Record<string, number>;
      assert.equal(stats.totalPayments, 7);
      assert.equal(stats.successfulPayments, 0);
      assert.equal(stats.successRate, 0);
      const recent = me.json.recentPayments as Array<Record<string, unknown>>;
      assert.equal(recent.length, 7);
      assert.deepEqual(Object.keys(recent[0]).sort(), [
        "amount",
        "checkoutUrl",
        "currency",
        "reference",
        "status",
        "timestamp",
      ]);
      const dash = await call("GET", "/api/merchant/dashboard", {
        headers: { "x-api-key": testKey },
      });
      assert.equal(
        (dash.json.payments as unknown[]).length,
        7,
        "the test key sees its testnet payments",
      );
    });

    await t.step("idempotent creation", async () => {
      const headers = { "x-api-key": testKey, "idempotency-key": "order-42" };
      const a = await call("POST", "/api/payments/initialize", { headers, body: { amount: "42" } });
      const b = await call("POST", "/api/payments/initialize", { headers, body: { amount: "42" } });
      assert.equal(b.json.reference, a.json.reference);
      assert.equal(b.headers.get("idempotent-replayed"), "true");
      const [{ n }] = await svc.db
        .sql`select count(*)::int as n from payments where amount = 42000000`;
      assert.equal(n, 1);
    });
  } finally {
    await svc.close();
  }
});
