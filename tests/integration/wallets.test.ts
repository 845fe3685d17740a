/**
 * Merchant wallets and withdraw: many managed wallets per merchant (the payout wallet among
 * them), balances per chain, withdrawals that mine and move the balance once per
 * Idempotency-Key, and every lookup scoped by merchant.
 */
import assert from "node:assert/strict";
import { startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { M } from "../../src/http/messages.ts";

const USDC = 1_000_000n;
const DEST = "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4";
const dest = DEST.toLowerCase() as `0x${string}`;

type Wallet = {
  id: string;
  address: string;
  label: string | null;
  payout: boolean;
  createdAt: string;
  balances: Record<string, string | null>;
};

Deno.test("merchant wallets and withdraw", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const call = api(svc);
  const chain = svc.deps.chain;
  try {
    const a = await createMerchant(svc);
    const b = await createMerchant(svc);
    const payout = await call("GET", "/api/merchant/wallet", { cookie: a.cookie });
    const payoutId = (payout.json.wallet as { managedWalletId: string }).managedWalletId;
    const key = async (type: string, environment: string) => {
      const r = await call("POST", "/api/keys", { cookie: a.cookie, body: { type, environment } });
      assert.equal(r.status, 201, r.text);
      return (r.json.key as { key: string }).key;
    };
    const testSecret = await key("secret", "test");
    const publishable = await key("publishable", "live");
    let created: Wallet;

    await t.step(
      "the payout wallet is listed, with a zero balance on the session's chain",
      async () => {
        const r = await call("GET", "/api/wallets", { cookie: a.cookie });
        assert.equal(r.status, 200, r.text);
        const list = r.json.wallets as Wallet[];
        assert.equal(list.length, 1);
        assert.equal(list[0].id, payoutId);
        assert.equal(list[0].address, a.walletAddress);
        assert.equal(list[0].payout, true);
        // A session in its default (live) mode: production only (issue 23: balances follow the
        // credential's environment; they showed every chain before).
        assert.deepEqual(list[0].balances, { production: "0.000000" });
      },
    );

    await t.step("POST /api/wallets creates one; the key as x-api-key or bearer", async () => {
      const r = await call("POST", "/api/wallets", {
        headers: { "x-api-key": a.apiKey },
        body: { label: "Refunds" },
      });
      assert.equal(r.status, 201, r.text);
      assert.match(r.headers.get("content-type")!, /application\/json/);
      created = r.json.wallet as Wallet;
      assert.match(created.id, /^[0-9a-f-]{36}$/);
      assert.equal(created.label, "Refunds");
      assert.equal(created.payout, false);
      const bearer = await call("POST", "/api/wallets", {
        headers: { authorization: `Bearer ${testSecret}` },
        body: {},
      });
      assert.equal(bearer.status, 201, bearer.text);
      assert.equal((bearer.json.wallet as Wallet).label, null);
      const list = await call("GET", "/api/wallets", {
        headers: { authorization: `Bearer ${a.apiKey}` },
      });
      assert.deepEqual((list.json.wallets as Wallet[]).map((w) => w.id), [
        payoutId,
        created.id,
        (bearer.json.wallet as Wallet).id,
      ]);
      const one = await call("GET", `/api/wallets/${created.id}`, { cookie: a.cookie });
      assert.equal(one.status, 200);
      assert.deepEqual((one.json.wallet as Wallet).balances, { production: "0.000000" });
      const viaTestKey = await call("GET", `/api/wallets/${created.id}`, {
        headers: { authorization: `Bearer ${testSecret}` },
      });
      assert.deepEqual((viaTestKey.json.wallet as Wallet).balances, { testnet: "0.000000" });
    });

    await t.step("wrong credentials: none 401, publishable 403, long label 400", async () => {
      const none = await call("GET", "/api/wallets");
      assert.deepEqual([none.status, none.json.error], [401, M.authRequired]);
      const pub = await call("GET", "/api/wallets", { headers: { "x-api-key": publishable } });
      assert.deepEqual([pub.status, pub.json.error], [403, M.insufficientPermissions]);
      const long = await call("POST", "/api/wallets", {
        cookie: a.cookie,
        body: { label: "x".repeat(101) },
      });
      assert.deepEqual([long.status, long.json.error], [400, M.walletLabel]);
    });

    await chain.mintUsdc({
      profile: "production",
      to: a.walletAddress!.toLowerCase() as `0x${string}`,
      amount: 50n * USDC,
    });

    await t.step("withdraw from the payout wallet: mined, balance moved", async () => {
      const started = performance.now();
      const r = await call("POST", "/api/merchant/withdraw", {
        cookie: a.cookie,
        body: { amount: "12.5", destinationAddress: DEST },
      });
      const ms = performance.now() - started;
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.success, true);
      assert.equal(r.json.status, "confirmed");
      assert.equal(r.json.amount, "12.500000");
      assert.equal(r.json.recipient, DEST);
      assert.equal(r.json.walletId, payoutId);
      assert.equal(r.json.chain, "production");
      assert.equal(r.json.explorerUrl, `${svc.baseUrl}/explorer/production/tx/${r.json.txHash}`);
      const receipt = await chain.runtime("production").client.getTransactionReceipt({
        hash: r.json.txHash as `0x${string}`,
      });
      assert.equal(receipt.status, "success");
      assert.equal(await chain.usdcBalance("production", dest), 12_500_000n);
      const w = await call("GET", `/api/wallets/${payoutId}`, { cookie: a.cookie });
      assert.equal((w.json.wallet as Wallet).balances.production, "37.500000");
      const [{ n }] = await svc.db.sql`
        select count(*)::int as n from chain_transactions where intent_key like ${`gas:${
        a.walletAddress!.toLowerCase()
      }:%`}`;
      assert.equal(n, 1, "one gas top-up before its first transaction");
      console.log(`first withdraw (with its gas top-up): ${ms.toFixed(0)} ms`);
    });

    await t.step("the same Idempotency-Key twice: one transfer", async () => {
      const send = () =>
        call("POST", "/api/merchant/withdraw", {
          headers: { "x-api-key": a.apiKey, "idempotency-key": "wd-1" },
          body: { amount: "2", destinationAddress: DEST, walletId: payoutId },
        });
      const started = performance.now();
      const first = await send();
      const ms = performance.now() - started;
      assert.equal(first.status, 200, first.text);
      const second = await send();
      assert.equal(second.status, 200, second.text);
      assert.equal(second.headers.get("idempotent-replayed"), "true");
      assert.equal(second.json.txHash, first.json.txHash);
      assert.equal(await chain.usdcBalance("production", dest), 14_500_000n);
      const [{ n }] = await svc.db.sql`
        select count(*)::int as n from chain_transactions
        where intent_key like ${`withdraw:${payoutId}:%`}`;
      assert.equal(n, 2, "the first withdrawal and this one");
      console.log(`withdraw (wallet already has gas): ${ms.toFixed(0)} ms`);
    });

    const vaultBefore = await svc.deps.chain.usdcBalance(
      "production",
      svc.deps.chain.runtime("production").contracts.EscrowVault!,
    );
    await t.step("more than the balance → 400 with the balance", async () => {
      const r = await call("POST", "/api/merchant/withdraw", {
        cookie: a.cookie,
        body: { amount: "35.500001", destinationAddress: DEST },
      });
      assert.equal(r.status, 400, r.text);
      assert.equal(r.json.error, M.withdrawInsufficient);
      assert.equal(r.json.balance, "35.500000");
      // A test key withdraws on the testnet chain, where this wallet holds nothing.
      const onTest = await call("POST", "/api/merchant/withdraw", {
        headers: { authorization: `Bearer ${testSecret}` },
        body: { amount: "1", destinationAddress: DEST },
      });
      assert.deepEqual([onTest.status, onTest.json.balance], [400, "0.000000"]);
    });

    await t.step(
      "to one of the service's contracts (token, vaults) → 400, nothing sent",
      async () => {
        const contracts = svc.deps.chain.runtime("production").contracts;
        for (
          const address of [contracts.TestUSDC!, contracts.EscrowVault!, contracts.StreamVault!]
        ) {
          const r = await call("POST", "/api/merchant/withdraw", {
            cookie: a.cookie,
            body: { amount: "0.5", destinationAddress: address },
          });
          assert.deepEqual([r.status, r.json.error], [400, M.withdrawDestinationContract], address);
        }
        assert.equal(
          await svc.deps.chain.usdcBalance("production", contracts.EscrowVault!),
          vaultBefore,
        );
      },
    );

    await t.step("malformed input → 400 with the field's text", async () => {
      for (
        const [body, text] of [
          [{ amount: "1e3", destinationAddress: DEST }, M.withdrawAmount],
          [{ amount: 5, destinationAddress: DEST }, M.withdrawAmount],
          [{ amount: "1.0000001", destinationAddress: DEST }, M.withdrawAmount],
          [{ amount: "1", destinationAddress: "0x123" }, M.withdrawDestination],
          [{ amount: "1", destinationAddress: "0x" + "0".repeat(40) }, M.withdrawDestination],
          [{ amount: "1", destinationAddress: DEST, walletId: "nope" }, M.withdrawWalletId],
        ] as const
      ) {
        const r = await call("POST", "/api/merchant/withdraw", { cookie: a.cookie, body });
        assert.deepEqual([r.status, r.json.error], [400, text], JSON.stringify(body));
      }
    });

    await t.step("merchant B cannot read or withdraw from A's wallet", async () => {
      for (const id of [payoutId, created.id]) {
        const r = await call("GET", `/api/wallets/${id}`, { cookie: b.cookie });
        assert.deepEqual([r.status, r.json.error], [404, M.walletNotFound]);
        const w = await call("POST", "/api/merchant/withdraw", {
          headers: { "x-api-key": b.apiKey },
          body: { amount: "1", destinationAddress: DEST, walletId: id },
        });
        assert.deepEqual([w.status, w.json.error], [404, M.walletNotFound]);
      }
      const list = await call("GET", "/api/wallets", { cookie: b.cookie });
      const bPayout = await call("GET", "/api/merchant/wallet", { cookie: b.cookie });
      assert.deepEqual(
        (list.json.wallets as Wallet[]).map((w) => w.id),
        [(bPayout.json.wallet as { managedWalletId: string }).managedWalletId],
      );
      const missing = await call("GET", "/api/wallets/not-a-uuid", { cookie: a.cookie });
      assert.equal(missing.status, 404);
      assert.equal(await chain.usdcBalance("production", dest), 14_500_000n);
    });

    await t.step(
      "an external payout wallet → 400: withdrawals are for managed wallets",
      async () => {
        const ext = await createMerchant(svc, { walletProvider: "EXTENSION_WALLET" });
        const r = await call("POST", "/api/merchant/withdraw", {
          headers: { "x-api-key": ext.apiKey },
          body: { amount: "1", destinationAddress: DEST },
        });
        assert.deepEqual([r.status, r.json.error], [400, M.withdrawExternal]);
        assert.match(String(r.json.error), /managed wallets/);
        const list = await call("GET", "/api/wallets", { cookie: ext.cookie });
        assert.deepEqual(list.json.wallets, []);
      },
    );
  } finally {
    await svc.close();
  }
});
