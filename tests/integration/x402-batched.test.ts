/**
 * Batched acceptance on the gateway balance (issue 27, items 1–3) against a real anvil: Circle's
 * unmodified `GatewayClient` (@circle-fin/x402-batching) pays a listing through the batched
 * option of our 402 with its own key, on our vault; the charge is pending until a settlement
 * round carries it on chain. Then 50 buyers × 40 calls against balances that run out midway: no
 * overspend, every success charged once, every refusal charged nothing, chain = database. Then
 * upstream failures, replays, forged signatures and a withdrawal racing pending charges.
 */
import assert from "node:assert/strict";
import { type Hex, toHex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { GatewayClient } from "@circle-fin/x402-batching/client";
import { startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import {
  externalBuyer,
  gatewayProof,
  listApi,
  nameSettler,
  X402_PROFILE,
} from "../helpers/x402.ts";
import { M } from "../../src/http/messages.ts";
import { highS } from "../helpers/signatures.ts";
import { compileRevocable1271 } from "../helpers/erc1271.ts";
import { batchedPayment } from "../helpers/x402-batched.ts";
import { waitFor } from "../helpers/poll.ts";
import { parsePrometheus, sample } from "../helpers/prometheus.ts";
import { settleRound } from "../../src/modules/x402/x402.batched.settle.ts";
import { GatewayVault } from "../../src/chain/contracts/artifacts/index.ts";
import { TRANSFER_WITH_AUTHORIZATION_TYPES } from "../../src/chain/gateway.ts";

const USDC = 1_000_000n;
const PRICE = 10_000n;

Deno.test("x402 batched: Circle's client, 50 buyers × 40 calls, failures", async (t) => {
  const svc = await startTestService({
    env: { RATE_LIMITS: "off", X402_BATCH_SECONDS: "3600", X402_BATCH_MAX: "500" },
    // Its rounds are the test's to run: no every-minute one beside them.
    crons: false,
  });
  let failing = false;
  // Runs once inside the next upstream call, before it answers (a payer acting mid-call).
  let duringCall: (() => Promise<void>) | null = null;
  const upstream = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async () => {
      const during = duringCall;
      duringCall = null;
      await during?.();
      return failing ? new Response("down", { status: 503 }) : Response.json({ ok: true });
    },
  );
  const chain = svc.deps.chain;
  const sql = svc.db.sql;
  const vaultOf = async (a: string) =>
    (await chain.gateway.balance(X402_PROFILE, a.toLowerCase() as `0x${string}`)).available;
  /** Settlement rounds until none of `payer`'s charges is reserved or pending. */
  const settledFor = (payer: string, what = "the payer's charges settled") =>
    waitFor(async () => {
      await settleRound(svc.deps);
      const [open] = await sql`
        select count(*)::int as n from x402_gateway_charges
        where payer = ${payer.toLowerCase()} and status in ('pending', 'reserved')`;
      return open.n === 0;
    }, { timeoutMs: 60_000, what });
  try {
    const seller = await createMerchant(svc);
    const resource = await listApi(svc, seller, {
      slug: "ticks",
      upstreamUrl: `http://127.0.0.1:${upstream.addr.port}/tick`,
    });
    const sellerAddr = seller.walletAddress!.toLowerCase();
    let sellerPaid = 0n;
    /**
     * The listing's totals (x402_listing_totals) against its charges: settled ones are its calls
     * and revenue; refused ones, and released ones once a round has dropped them, its failures.
     */
    const totalsAgree = async () => {
      const [c] = await sql`
        select count(*) filter (where c.status = 'settled')::int as calls,
          count(*) filter (where c.status = 'failed' or (c.status = 'released'
            and not exists (select 1 from x402_gateway_unbatched q where q.charge_id = c.id)))::int
            as failed,
          coalesce(sum(c.amount) filter (where c.status = 'settled'), 0)::bigint as revenue
        from x402_gateway_charges c join x402_listings l on l.id = c.listing_id
        where l.slug = 'ticks'`;
      const [t] = await sql`
        select t.calls::int, t.failed::int, t.revenue from x402_listing_totals t
        join x402_listings l on l.id = t.listing_id where l.slug = 'ticks'`;
      assert.deepEqual(
        { calls: t?.calls ?? 0, failed: t?.failed ?? 0, revenue: BigInt(t?.revenue ?? 0) },
        { calls: c.calls, failed: c.failed, revenue: BigInt(c.revenue) },
        "the listing's totals are its charges'",
      );
      return c;
    };
    /** The listing's row on the seller's dashboard: calls, revenue, failed. */
    const dashboardRow = async () => {
      const page = await api(svc)("GET", "/dashboard/x402", { cookie: seller.cookie });
      assert.equal(page.status, 200);
      const row = page.text.match(/<tr data-listing="ticks">([\s\S]*?)<\/tr>/)?.[1] ?? "";
      const cell = (name: string) =>
        row.match(new RegExp(`data-cell="${name}">([^<]*)<`))?.[1]?.trim();
      return { calls: cell("calls"), revenue: cell("revenue"), failed: cell("failed") };
    };

    await t.step("the 402 offers Circle's batched option on our vault", async () => {
      const r = await fetch(resource);
      assert.equal(r.status, 402);
      await r.body?.cancel();
      const v2 = JSON.parse(atob(r.headers.get("payment-required")!));
      const offer = v2.accepts.find((a: { extra?: { name?: string } }) =>
        a.extra?.name === "GatewayWalletBatched"
      );
      assert.ok(offer, JSON.stringify(v2.accepts));
      assert.equal(offer.scheme, "exact");
      assert.equal(offer.network, "eip155:5042002");
      assert.equal(offer.extra.version, "1");
      assert.equal(
        offer.extra.verifyingContract.toLowerCase(),
        chain.contract(X402_PROFILE, "GatewayVault").toLowerCase(),
      );
      assert.equal(v2.accepts[0].asset, offer.asset);
      assert.equal(v2.accepts[0].extra.verifyingContract, undefined, "standard exact stays first");
    });

    await t.step("Circle's unmodified GatewayClient pays; settled by the next round", async () => {
      const key = generatePrivateKey();
      const buyer = await externalBuyer(svc, key, 1n * USDC);
      await buyer.deposit(100n * PRICE);
      const client = new GatewayClient({
        chain: "arcTestnet",
        privateKey: key,
        rpcUrl: `${svc.baseUrl}/rpc/testnet`,
      });
      const paid = await client.pay(resource);
      assert.equal(paid.status, 200);
      assert.deepEqual(paid.data, { ok: true });
      assert.equal(paid.amount, PRICE);
      const [charge] = await sql`select * from x402_gateway_charges where id = ${paid.transaction}`;
      assert.ok(charge, "the answer names the charge");
      assert.equal(charge.status, "pending");
      assert.equal(charge.payer, buyer.address.toLowerCase());
      assert.equal(await vaultOf(sellerAddr), 0n, "nothing on chain yet");
      const round = await settleRound(svc.deps);
      assert.equal(round.length, 1);
      assert.equal(round[0].settled, 1);
      const [after] = await sql`select * from x402_gateway_charges where id = ${paid.transaction}`;
      assert.equal(after.status, "settled");
      assert.equal(after.txHash, round[0].txHash);
      sellerPaid += PRICE;
      assert.equal(await vaultOf(sellerAddr), sellerPaid);
      assert.equal(await vaultOf(buyer.address), 99n * PRICE);
      assert.equal((await settleRound(svc.deps)).length, 0, "nothing owed: nothing sent");
    });

    await t.step("pending in the seller's balance, the dashboard and /metrics", async () => {
      const key = generatePrivateKey();
      const buyer = await externalBuyer(svc, key, 1n * USDC);
      await buyer.deposit(10n * PRICE);
      const account = privateKeyToAccount(key);
      for (let i = 0; i < 2; i++) {
        const header = await batchedPayment(svc, account, resource, {
          to: sellerAddr,
          value: PRICE,
        });
        const r = await fetch(resource, { headers: { "payment-signature": header } });
        assert.equal(r.status, 200, await r.text());
      }
      // The outside payer's own view, with no credentials: 10 calls deposited, 2 promised.
      const payerView = async () => {
        const r = await api(svc)("GET", `/api/x402/payer/balance?address=${buyer.address}`);
        assert.equal(r.status, 200, r.text);
        return r.json;
      };
      const promised = await payerView();
      assert.equal(promised.address, buyer.address);
      assert.equal((promised.gateway as { available: string }).available, "0.100000");
      assert.deepEqual(promised.pending, { incoming: "0.000000", outgoing: "0.020000" });
      assert.equal(promised.spendable, "0.080000");
      const bad = await api(svc)("GET", "/api/x402/payer/balance?address=0x123");
      assert.equal(bad.status, 400);
      assert.equal(bad.json.error, "address must be a valid EVM address.");
      const bearer = { authorization: `Bearer ${seller.apiKey}` };
      const before = await api(svc)("GET", "/api/x402/seller/balance", { headers: bearer });
      assert.equal(before.status, 200, before.text);
      assert.deepEqual(before.json.pending, { incoming: "0.020000", outgoing: "0.000000" });
      assert.equal(
        (before.json.gateway as { available: string }).available,
        "0.010000",
        "settled: the first call only",
      );
      const page = await api(svc)("GET", "/dashboard/x402", { cookie: seller.cookie });
      assert.equal(page.status, 200);
      assert.match(page.text, /data-pending="gateway">\s*2 \(0\.020000 USDC\)/);
      assert.match(page.text, /data-charge-status="pending"/);
      const gauge = async () =>
        sample(
          parsePrometheus(await (await fetch(`${svc.baseUrl}/metrics`)).text()),
          "settlement_x402_pending_charges",
          { kind: "gateway" },
        );
      assert.equal(await gauge(), 2);
      const [batch] = await settleRound(svc.deps);
      assert.equal(batch.size, 2);
      sellerPaid += 2n * PRICE;
      const after = await api(svc)("GET", "/api/x402/seller/balance", { headers: bearer });
      assert.deepEqual(after.json.pending, { incoming: "0.000000", outgoing: "0.000000" });
      assert.equal((after.json.gateway as { available: string }).available, "0.030000");
      const paidView = await payerView();
      assert.equal((paidView.gateway as { available: string }).available, "0.080000");
      assert.deepEqual(paidView.pending, { incoming: "0.000000", outgoing: "0.000000" });
      assert.equal(paidView.spendable, "0.080000");
      assert.equal(await gauge(), 0);
      const settled = await api(svc)("GET", "/dashboard/x402", { cookie: seller.cookie });
      assert.match(settled.text, /data-batch-status="confirmed"/);
      assert.match(settled.text, /gateway batch<\/td>\s*<td>2<\/td>/);
      // The listing's own row counts the calls settled on the gateway balance (it showed 0).
      assert.deepEqual(await totalsAgree(), { calls: 3, failed: 0, revenue: 3n * PRICE });
      assert.deepEqual(await dashboardRow(), {
        calls: "3",
        revenue: "0.030000 USDC",
        failed: "0",
      });
      // And its latest paid calls list them (it read "No paid calls yet.").
      const calls = settled.text.slice(settled.text.indexOf('id="x402-calls-title"'));
      assert.doesNotMatch(calls, /No paid calls yet/);
      assert.equal(
        calls.match(/<tr data-call-status="SUCCESS">[\s\S]*?class="hint">batched</g)?.length,
        3,
      );
    });

    await t.step("50 buyers × 40 calls, balances running out midway", async () => {
      const BUYERS = 50;
      const CALLS = 40;
      const buyers = await Promise.all(
        Array.from({ length: BUYERS }, async (_, i) => {
          const key = generatePrivateKey();
          const b = await externalBuyer(svc, key, 1n * USDC);
          // Between 5 and 54 calls' worth: most run out before their 40th call.
          const calls = 5n + BigInt(i);
          await b.deposit(calls * PRICE);
          return { key, address: b.address.toLowerCase(), capacity: calls };
        }),
      );
      const results = await Promise.all(buyers.map(async (b) => {
        const account = privateKeyToAccount(b.key);
        let ok = 0;
        let refused = 0;
        // Four calls of each buyer in flight at once: 200 concurrent requests.
        const lane = async (n: number) => {
          for (let i = 0; i < n; i++) {
            const header = await batchedPayment(svc, account, resource, {
              to: sellerAddr,
              value: PRICE,
            });
            const r = await fetch(resource, { headers: { "payment-signature": header } });
            if (r.status === 402) {
              // The reason in both forms: the v1 body as the v2 header.
              const v1 = await r.json();
              const v2 = JSON.parse(atob(r.headers.get("payment-required")!));
              if (v1.error !== v2.error || v2.error !== "insufficient_balance") {
                throw new Error(`refused: v1 ${v1.error}, v2 ${v2.error}`);
              }
              refused++;
              continue;
            }
            await r.body?.cancel();
            if (r.status === 200) ok++;
            else throw new Error(`unexpected ${r.status}`);
          }
        };
        await Promise.all([lane(10), lane(10), lane(10), lane(10)]);
        return { ...b, ok, refused };
      }));
      let total = 0n;
      for (const r of results) {
        const expected = r.capacity < BigInt(CALLS) ? Number(r.capacity) : CALLS;
        assert.equal(r.ok, expected, `buyer with ${r.capacity} calls' worth`);
        assert.equal(r.ok + r.refused, CALLS);
        total += BigInt(r.ok) * PRICE;
      }
      const [db] = await sql`
        select count(*)::int as n, coalesce(sum(amount), 0)::bigint as amount
        from x402_gateway_charges where status in ('pending', 'settled')
          and payer = any(${results.map((r) => r.address)})`;
      assert.equal(BigInt(db.amount), total, "charged = served");
      // Settled (the kick may have started a round already): at most X402_BATCH_MAX a batch.
      await waitFor(async () => {
        await settleRound(svc.deps);
        const [open] = await sql`
          select count(*)::int as n from x402_gateway_charges where status = 'pending'`;
        return open.n === 0;
      }, { timeoutMs: 120_000, what: "every charge settled" });
      const failed = await sql`select error from x402_gateway_batches where status <> 'confirmed'`;
      assert.deepEqual([...failed], []);
      const batches = await sql`select size, settled, tx_hash from x402_gateway_batches`;
      assert.ok(batches.every((b) => b.size <= 500 && b.settled === b.size));
      assert.equal(new Set(batches.map((b) => b.txHash)).size, batches.length);
      const [all] = await sql`
        select count(*)::int as n, sum(amount)::bigint as amount from x402_gateway_charges
        where status = 'settled' and payer = any(${results.map((r) => r.address)})`;
      assert.equal(all.n, db.n);
      const [left] = await sql`
        select count(*)::int as n from x402_gateway_charges where status in ('pending', 'reserved')`;
      assert.equal(left.n, 0);
      sellerPaid += total;
      assert.equal(await vaultOf(sellerAddr), sellerPaid, "the seller got what the database says");
      for (const r of results) {
        const charged = BigInt(r.ok) * PRICE;
        assert.equal(await vaultOf(r.address), r.capacity * PRICE - charged);
        const [c] = await sql`
          select count(*)::int as n, count(distinct tx_hash)::int as txs from x402_gateway_charges
          where payer = ${r.address} and status = 'settled'`;
        assert.equal(c.n, r.ok, "each success charged once");
      }
      const counted = await totalsAgree();
      assert.equal(BigInt(counted.revenue), sellerPaid, "the listing earned what the seller got");
    });

    await t.step("upstream failure, replay, forgery: nothing charged", async () => {
      const key = generatePrivateKey();
      const b = await externalBuyer(svc, key, 1n * USDC);
      await b.deposit(3n * PRICE);
      const account = privateKeyToAccount(key);
      const addr = account.address.toLowerCase();
      failing = true;
      const down = await fetch(resource, {
        headers: {
          "payment-signature": await batchedPayment(svc, account, resource, {
            to: sellerAddr,
            value: PRICE,
          }),
        },
      });
      assert.equal(down.status, 500);
      assert.match(await down.text(), /Upstream API returned 503/);
      failing = false;
      const nonce: Hex = toHex(crypto.getRandomValues(new Uint8Array(32)));
      const header = await batchedPayment(svc, account, resource, {
        to: sellerAddr,
        value: PRICE,
        nonce,
      });
      const first = await fetch(resource, { headers: { "payment-signature": header } });
      await first.body?.cancel();
      assert.equal(first.status, 200);
      const replay = await fetch(resource, { headers: { "payment-signature": header } });
      assert.equal(replay.status, 402);
      assert.equal(
        JSON.parse(atob(replay.headers.get("payment-required")!)).error,
        "invalid_exact_evm_nonce_already_used",
      );
      await replay.body?.cancel();
      const other = privateKeyToAccount(generatePrivateKey());
      const forged = await batchedPayment(svc, other, resource, {
        from: addr,
        to: sellerAddr,
        value: PRICE,
      });
      const f = await fetch(resource, { headers: { "payment-signature": forged } });
      assert.equal(f.status, 402);
      assert.equal(
        JSON.parse(atob(f.headers.get("payment-required")!)).error,
        "invalid_exact_evm_signature",
      );
      await f.body?.cancel();
      // A good payment's signature malleated (a high s): the payer's own key recovers from it,
      // but the vault's ECDSA refuses it, so it would fail its settlement: refused here.
      const good = JSON.parse(
        atob(await batchedPayment(svc, account, resource, { to: sellerAddr, value: PRICE })),
      );
      good.payload.signature = highS(good.payload.signature);
      const m = await fetch(resource, {
        headers: { "payment-signature": btoa(JSON.stringify(good)) },
      });
      assert.equal(m.status, 402);
      assert.equal(
        JSON.parse(atob(m.headers.get("payment-required")!)).error,
        "invalid_exact_evm_signature",
      );
      await m.body?.cancel();
      const short = await batchedPayment(svc, account, resource, {
        to: sellerAddr,
        value: PRICE,
        validFor: 30n,
      });
      const s = await fetch(resource, { headers: { "payment-signature": short } });
      assert.equal(s.status, 402, "a window shorter than the settlement's is refused");
      await s.body?.cancel();
      const rows = await sql`
        select status from x402_gateway_charges where payer = ${addr} order by created_at`;
      assert.deepEqual(rows.map((r) => r.status).sort(), ["pending", "released"]);
      const [acct] = await sql`
        select held from x402_gateway_accounts where payer = ${addr}`;
      assert.equal(BigInt(acct.held), PRICE, "only the served call holds");
      await settleRound(svc.deps);
      assert.equal(await vaultOf(addr), 2n * PRICE);
      // The round dropped the released charge from its queue: a failure of the listing's.
      const [queued] = await sql`
        select count(*)::int as n from x402_gateway_unbatched q
        join x402_gateway_charges c on c.id = q.charge_id where c.payer = ${addr}`;
      assert.equal(queued.n, 0);
      const after = await totalsAgree();
      assert.ok(after.failed >= 1);
      assert.equal((await dashboardRow()).failed, String(after.failed));
    });

    await t.step("a withdrawal started while charges are pending never takes them", async () => {
      const call = api(svc);
      const buyerM = await createMerchant(svc);
      const auth = { authorization: `Bearer ${buyerM.apiKey}` };
      const w = await call("POST", "/api/wallets", {
        headers: { "x-api-key": buyerM.apiKey },
        body: {},
      });
      assert.equal(w.status, 201, w.text);
      const wallet = w.json.wallet as { id: string; address: string };
      const addr = wallet.address.toLowerCase() as `0x${string}`;
      await chain.mintUsdc({ profile: X402_PROFILE, to: addr, amount: 2n * USDC });
      const dep = await call("POST", "/api/x402/gateway/deposit", {
        headers: auth,
        body: { walletId: wallet.id, amount: "1" },
      });
      assert.equal(dep.status, 200, dep.text);
      const account = await chain.walletAccount(wallet.id);
      const payOnce = async () => {
        const header = await batchedPayment(svc, account, resource, {
          to: sellerAddr,
          value: PRICE,
        });
        const r = await fetch(resource, { headers: { "payment-signature": header } });
        await r.body?.cancel();
        return r.status;
      };
      for (let i = 0; i < 30; i++) assert.equal(await payOnce(), 200);
      // 0.30 promised, not on chain yet: the vault would let 1.00 go; we do not.
      const all = await call("POST", "/api/x402/gateway/withdraw", {
        headers: auth,
        body: { walletId: wallet.id, amount: "1" },
      });
      assert.equal(all.status, 400, all.text);
      assert.equal(all.json.withdrawable, "0.700000");
      // The race: a withdrawal of the rest while more calls come in.
      const [out, ...statuses] = await Promise.all([
        call("POST", "/api/x402/gateway/withdraw", {
          headers: auth,
          body: { walletId: wallet.id, amount: "0.6" },
        }),
        ...Array.from({ length: 20 }, payOnce),
      ]);
      assert.ok([200, 400].includes(out.status), out.text);
      const served = statuses.filter((s) => s === 200).length;
      assert.ok(statuses.every((s) => s === 200 || s === 402));
      await settledFor(addr, "the wallet's charges settled");
      const [c] = await sql`
        select count(*) filter (where status = 'settled')::int as settled,
               count(*) filter (where status = 'failed')::int as failed
        from x402_gateway_charges where payer = ${addr}`;
      assert.equal(c.failed, 0, "no charge found the balance gone");
      assert.equal(c.settled, 30 + served);
      const withdrawn = out.status === 200 ? 600_000n : 0n;
      assert.equal(await vaultOf(addr), USDC - withdrawn - BigInt(30 + served) * PRICE);
    });

    await t.step(
      "a payer's own authorization sent to the vault directly cannot take what pending charges were promised",
      async () => {
        const buyer = await externalBuyer(svc, generatePrivateKey(), USDC);
        await buyer.deposit(10n * PRICE);
        for (let i = 0; i < 10; i++) {
          const header = await batchedPayment(svc, buyer.account, resource, {
            to: sellerAddr,
            value: PRICE,
          });
          const r = await fetch(resource, { headers: { "payment-signature": header } });
          await r.body?.cancel();
          assert.equal(r.status, 200);
        }
        // Ten calls served, nothing on chain yet. The payer signs its whole balance over to an
        // address of its own and submits that itself: the vault takes authorizations from its
        // settlers (our relayers) only, so the balance stays for the charges.
        const vault = chain.contract(X402_PROFILE, "GatewayVault");
        const now = BigInt(Math.floor(Date.now() / 1000));
        const drain = {
          from: buyer.address,
          to: privateKeyToAccount(generatePrivateKey()).address,
          value: 10n * PRICE,
          validAfter: 0n,
          validBefore: now + 3600n,
          nonce: toHex(crypto.getRandomValues(new Uint8Array(32))),
        };
        for (const target of ["batched", "gateway"] as const) {
          const signature = await buyer.account.signTypedData({
            domain: chain.gateway.domain(X402_PROFILE, target),
            types: TRANSFER_WITH_AUTHORIZATION_TYPES,
            primaryType: "TransferWithAuthorization",
            message: drain,
          });
          await assert.rejects(
            buyer.wallet.writeContract({
              address: vault,
              abi: GatewayVault.abi,
              functionName: "transferWithAuthorization",
              args: [
                drain.from,
                drain.to,
                drain.value,
                drain.validAfter,
                drain.validBefore,
                drain.nonce,
                signature,
              ],
            }),
            /NotSettler/,
          );
        }
        assert.equal(await vaultOf(buyer.address), 10n * PRICE);
        await settledFor(buyer.address.toLowerCase());
        const [c] = await sql`
          select count(*) filter (where status = 'settled')::int as settled,
                 count(*) filter (where status = 'failed')::int as failed
          from x402_gateway_charges where payer = ${buyer.address.toLowerCase()}`;
        assert.deepEqual({ settled: c.settled, failed: c.failed }, { settled: 10, failed: 0 });
        assert.equal(await vaultOf(buyer.address), 0n);
      },
    );

    await t.step(
      "one vault nonce, two paths (batched, POST /api/x402/pay): taken once, paid once",
      async () => {
        const buyer = await externalBuyer(svc, generatePrivateKey(), USDC);
        await buyer.deposit(100n * PRICE);
        const payer = buyer.address.toLowerCase();
        const newNonce = (): Hex => toHex(crypto.getRandomValues(new Uint8Array(32)));
        const batched = async (nonce: Hex) => {
          const header = await batchedPayment(svc, buyer.account, resource, {
            to: sellerAddr,
            value: PRICE,
            nonce,
          });
          const r = await fetch(resource, { headers: { "payment-signature": header } });
          const required = r.headers.get("payment-required");
          await r.body?.cancel();
          return { status: r.status, error: required ? JSON.parse(atob(required)).error : null };
        };
        const viaPay = async (nonce: Hex) => {
          const { proof } = await gatewayProof(svc, buyer.account, {
            to: sellerAddr,
            value: PRICE,
            nonce,
          });
          const r = await api(svc)("POST", "/api/x402/pay", {
            body: { slug: "ticks", method: "GET", paymentProof: proof },
          });
          return { status: r.status, error: r.json?.error as string | undefined };
        };
        // The pay path spent it on chain: the batched path refuses it.
        const n1 = newNonce();
        assert.equal((await viaPay(n1)).status, 200);
        assert.deepEqual(await batched(n1), {
          status: 402,
          error: "invalid_exact_evm_nonce_already_used",
        });
        // The batched path holds it (pending, not on chain yet): the pay path refuses it.
        const n2 = newNonce();
        assert.equal((await batched(n2)).status, 200);
        assert.deepEqual(await viaPay(n2), { status: 403, error: M.x402ProofUsed });
        // Both at once, ten times: each nonce is taken by exactly one of them.
        const raced = await Promise.all(Array.from({ length: 10 }, async () => {
          const n = newNonce();
          const [a, b] = await Promise.all([batched(n), viaPay(n)]);
          return [a.status, b.status];
        }));
        for (const [a, b] of raced) {
          assert.ok((a === 200) !== (b === 200), `one of the two paths only: ${a}, ${b}`);
          assert.ok(a === 200 || a === 402, String(a));
          assert.ok(b === 200 || b === 403, String(b));
        }
        const batchedServed = 1 + raced.filter(([a]) => a === 200).length;
        await settledFor(payer);
        const [c] = await sql`
          select count(*) filter (where status = 'settled')::int as settled,
                 count(*) filter (where status = 'failed')::int as failed,
                 count(distinct tx_hash) filter (where status = 'settled')::int as txs
          from x402_gateway_charges where payer = ${payer}`;
        assert.deepEqual({ settled: c.settled, failed: c.failed }, {
          settled: batchedServed,
          failed: 0,
        });
        const [paid] = await sql`
          select count(*)::int as n from x402_payments
          where payer = ${payer} and status = 'SUCCESS'`;
        // Every call served was paid for once, on chain: 12 calls, 12 prices.
        assert.equal(batchedServed + paid.n, 12);
        assert.equal(await vaultOf(buyer.address), 100n * PRICE - 12n * PRICE);
      },
    );

    await t.step(
      "a charge whose nonce another payment of the payer's spent is failed, not counted as paid",
      async () => {
        const buyer = await externalBuyer(svc, generatePrivateKey(), USDC);
        await buyer.deposit(10n * PRICE);
        const payer = buyer.address.toLowerCase();
        const nonce: Hex = toHex(crypto.getRandomValues(new Uint8Array(32)));
        const header = await batchedPayment(svc, buyer.account, resource, {
          to: sellerAddr,
          value: PRICE,
          nonce,
        });
        const r = await fetch(resource, { headers: { "payment-signature": header } });
        await r.body?.cancel();
        assert.equal(r.status, 200);
        // Before our settlement, the payer's other authorization with the same nonce (another
        // payee) is relayed by another settler of the vault (one the operator named).
        const vault = chain.contract(X402_PROFILE, "GatewayVault");
        const settler = await externalBuyer(svc, generatePrivateKey(), 1n);
        await nameSettler(svc, settler.address);
        const elsewhere = privateKeyToAccount(generatePrivateKey()).address;
        const now = BigInt(Math.floor(Date.now() / 1000));
        const a = {
          from: buyer.address,
          to: elsewhere,
          value: PRICE,
          validAfter: 0n,
          validBefore: now + 3600n,
          nonce,
        };
        const signature = await buyer.account.signTypedData({
          domain: chain.gateway.domain(X402_PROFILE, "gateway"),
          types: TRANSFER_WITH_AUTHORIZATION_TYPES,
          primaryType: "TransferWithAuthorization",
          message: a,
        });
        const other = await settler.wallet.writeContract({
          address: vault,
          abi: GatewayVault.abi,
          functionName: "transferWithAuthorization",
          args: [a.from, a.to, a.value, a.validAfter, a.validBefore, a.nonce, signature],
        });
        await settler.mined(other);
        await settledFor(payer, "the charge finished");
        const [row] = await sql`
          select status, tx_hash, error from x402_gateway_charges where payer = ${payer}`;
        assert.equal(row.status, "failed", `counted as paid by ${row.txHash}`);
        assert.notEqual(row.txHash, other);
      },
    );

    await t.step(
      "a smart-account payer (ERC-1271) is settled before its answer: revoked mid-call, the answer is withheld",
      async () => {
        const owner = await externalBuyer(svc, generatePrivateKey(), USDC);
        const { abi, bytecode } = compileRevocable1271();
        const deployed = await owner.wallet.deployContract({
          abi,
          bytecode,
          args: [owner.address],
        });
        const receipt = await waitFor(
          () => chain.runtime(X402_PROFILE).client.getTransactionReceipt({ hash: deployed }),
          { what: "the account deployed" },
        );
        const account = receipt.contractAddress!.toLowerCase() as `0x${string}`;
        await owner.depositFor(account, 10n * PRICE);
        const pay = async () => {
          const header = await batchedPayment(svc, owner.account, resource, {
            from: account,
            to: sellerAddr,
            value: PRICE,
          });
          return await fetch(resource, { headers: { "payment-signature": header } });
        };
        // Its owner's signature holds: settled on chain before the answer, which names the
        // transaction.
        const ok = await pay();
        assert.equal(ok.status, 200);
        assert.deepEqual(await ok.json(), { ok: true });
        const receiptHeader = JSON.parse(atob(ok.headers.get("payment-response")!));
        assert.equal(receiptHeader.status, "settled");
        assert.match(receiptHeader.transaction, /^0x[0-9a-f]{64}$/);
        assert.equal(await vaultOf(account), 9n * PRICE);
        // The owner takes the account's signatures back while the upstream works: checked
        // before, refused by the vault after. The call's answer is not given; nothing is paid.
        duringCall = async () => {
          await owner.mined(
            await owner.wallet.writeContract({
              address: account,
              abi,
              functionName: "revoke",
              args: [],
            }),
          );
        };
        const refused = await pay();
        assert.equal(refused.status, 402);
        assert.equal(
          JSON.parse(atob(refused.headers.get("payment-required")!)).error,
          "invalid_exact_evm_signature",
        );
        assert.doesNotMatch(await refused.text(), /"ok":true/);
        assert.equal(duringCall, null, "the upstream was called");
        const rows = await sql`
          select status from x402_gateway_charges where payer = ${account}`;
        assert.deepEqual(rows.map((r) => r.status).sort(), ["failed", "settled"]);
        assert.equal(await vaultOf(account), 9n * PRICE);
      },
    );
  } finally {
    await upstream.shutdown();
    await svc.close();
  }
});
