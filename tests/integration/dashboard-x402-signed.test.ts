/**
 * The dashboard's signed withdrawal for an external payout wallet (POST
 * /dashboard/x402/withdraw/signed) over plain HTTP, with what a hostile page could send: no or a
 * wrong CSRF token (403), malformed, NUL-bearing, oversized or missing fields (400 with the
 * relay's text), another wallet's signature (400), and a merchant whose payout wallet is managed
 * (400). Nothing is sent in any of them.
 */
import assert from "node:assert/strict";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { startTestService } from "../helpers/service.ts";
import { api, cookieFrom, createMerchant } from "../helpers/accounts.ts";
import { dashboardClient } from "../helpers/dashboard-client.ts";
import { signedWithdrawal } from "../helpers/x402.ts";
import { M } from "../../src/http/messages.ts";

const PATH = "/dashboard/x402/withdraw/signed";

/** As the page renders text (hono/jsx escaping). */
const escape = (s: string) =>
  s.replaceAll("&", "&amp;").replaceAll('"', "&quot;").replaceAll("'", "&#39;")
    .replaceAll("<", "&lt;").replaceAll(">", "&gt;");

Deno.test("dashboard x402 signed withdrawal: hostile input sends nothing", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const d = dashboardClient(svc);
  const call = api(svc);
  const relayed = async () =>
    (await svc.db.sql`
      select count(*)::int as n from chain_transactions
      where intent_key like 'x402-payer-relay-withdraw%'`)[0].n as number;
  try {
    const e = await createMerchant(svc);
    const wallet = privateKeyToAccount(generatePrivateKey());
    const ch = await call("GET", `/api/merchant/wallet/connect?address=${wallet.address}`, {
      cookie: e.cookie,
    });
    const linked = await call("POST", "/api/merchant/wallet/connect", {
      cookie: `${e.cookie}; ${cookieFrom(ch.headers, "wallet_connect_nonce")}`,
      body: {
        address: wallet.address,
        message: ch.json.message,
        signature: await wallet.signMessage({ message: ch.json.message as string }),
        walletKind: "EXTENSION_WALLET",
      },
    });
    assert.equal(linked.status, 200, linked.text);
    const b = await d.open(e, "/dashboard/x402");
    const good = await signedWithdrawal(svc, wallet, { to: wallet.address, value: 1_000_000n });
    const fields = {
      kind: "withdraw",
      value: good.authorization.value,
      validBefore: good.authorization.validBefore,
      nonce: good.authorization.nonce,
      signature: good.signature,
    };

    await t.step("no or a wrong CSRF token: 403", async () => {
      for (const token of [null, "A".repeat(43)]) {
        const r = await d.post(b, PATH, fields, { token });
        assert.equal(r.status, 403, r.text);
        assert.ok(r.text.includes(escape(M.dashCsrf)));
      }
    });

    await t.step("malformed, NUL, huge, missing, or another key's: 400, nothing sent", async () => {
      const other = await signedWithdrawal(svc, privateKeyToAccount(generatePrivateKey()), {
        account: wallet.address,
        to: wallet.address,
        value: 1_000_000n,
        nonce: good.authorization.nonce,
      });
      const cases: [string, Record<string, string>, string][] = [
        ["a NUL byte in the signature", { ...fields, signature: "0x\u0000" }, ""],
        ["a value past uint256", { ...fields, value: "9".repeat(5000) }, M.x402RelayWithdrawBody],
        ["a nonce of the wrong length", { ...fields, nonce: "0x12" }, M.x402RelayWithdrawBody],
        ["no signature", { ...fields, signature: "" }, M.x402RelayWithdrawBody],
        ["nothing at all", {}, M.x402RelayWithdrawBody],
        ["a start's kind with a withdrawal's signature", { ...fields, kind: "start" }, ""],
        ["another key's signature", { ...fields, signature: other.signature }, ""],
      ];
      for (const [what, body, text] of cases) {
        const r = await d.post(b, PATH, body);
        assert.equal(r.status, 400, `${what}: ${r.status}`);
        if (text) assert.ok(r.text.includes(escape(text)), `${what}: ${text}`);
      }
      assert.equal(await relayed(), 0, "nothing was sent");
    });

    await t.step("a merchant whose payout wallet is managed: 400, nothing sent", async () => {
      const m = await createMerchant(svc);
      const mb = await d.open(m, "/dashboard/x402");
      const r = await d.post(mb, PATH, fields);
      assert.equal(r.status, 400, r.text);
      assert.equal(await relayed(), 0);
    });
  } finally {
    await svc.close();
  }
});
