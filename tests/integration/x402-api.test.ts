/**
 * x402 through the API on a real anvil and PostgreSQL with a real upstream HTTP server: listings,
 * the 402 answer, paid calls (data unchanged, balances moved on chain, the attempt recorded with
 * its agent), every refusal before anything is broadcast (replay, expiry, amount, payee, balance),
 * concurrent identical proofs settling once, an upstream failure charging nothing, the outbound
 * guard, verify, deposits, seller balance and withdrawals.
 */
import assert from "node:assert/strict";
import { getAddress } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { catchUpClock, startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { waitFor } from "../helpers/poll.ts";
import {
  externalBuyer,
  gatewayProof,
  nameSettler,
  registerAgent,
  X402_PROFILE,
} from "../helpers/x402.ts";
import { M } from "../../src/http/messages.ts";
import { paymentsByAgent } from "../../src/modules/x402/x402.service.ts";
import { reconcilePending } from "../../src/modules/x402/x402.reconcile.ts";
import { deposit } from "../../src/modules/x402/x402.gateway.ts";
import type { MerchantRow } from "../../src/modules/merchants/merchants.types.ts";
import { defaultAgentPort } from "../../src/modules/x402/x402.types.ts";
import { callUpstream } from "../../src/modules/x402/x402.upstream.ts";
import { batchingSettler } from "../../src/modules/x402/x402.settler.ts";
import { decodeGatewayProof } from "../../src/modules/x402/x402.rules.ts";
import { createListingBody } from "../../src/modules/x402/x402.schemas.ts";
import { x402Profile } from "../../src/modules/x402/x402.context.ts";
import { GatewayVault } from "../../src/chain/contracts/artifacts/index.ts";

const USDC = 1_000_000n;

interface UpstreamCall {
  method: string;
  url: URL;
  body: string;
}

function startUpstream() {
  const calls: UpstreamCall[] = [];
  const state = {
    calls,
    answer: (_c: UpstreamCall): Response | Promise<Response> =>
      Response.json({ temperature: 21.5, unit: "C", tags: ["x", null] }),
  };
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const call = { method: req.method, url: new URL(req.url), body: await req.text() };
    calls.push(call);
    return state.answer(call);
  });
  return {
    ...state,
    state,
    url: `http://127.0.0.1:${server.addr.port}`,
    close: () => server.shutdown(),
  };
}

Deno.test("x402 API: listings, pay, refusals, races, verify, balances", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const upstream = startUpstream();
  const call = api(svc);
  const chain = svc.deps.chain;
  try {
    const seller = await createMerchant(svc);
    const other = await createMerchant(svc);
    const bearer = { authorization: `Bearer ${seller.apiKey}` };
    const sellerAddr = seller.walletAddress!.toLowerCase() as `0x${string}`;
    const buyer = await externalBuyer(svc, generatePrivateKey(), 100n * USDC);
    await buyer.deposit(10n * USDC);
    // The buyer is also an ERC-8004 agent (its own wallet), so it may pay as that agent.
    const buyerAgent = await registerAgent(svc, buyer.account);
    // Settlements and relays only: a relayer's first use adds its gas top-up (`gas:…`).
    const txCount = async () =>
      Number(
        (await svc.db.sql`select count(*)::int as n from chain_transactions
        where intent_key not like ${"gas:%"}`)[0].n,
      );
    const gatewayOf = (a: string) => chain.gateway.balance(X402_PROFILE, a as `0x${string}`);
    let n = 0;
    const post = (path: string, body: unknown, headers: Record<string, string> = bearer) =>
      call("POST", path, { headers: { ...headers, "idempotency-key": `k${n++}` }, body });
    const pay = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
      call("POST", "/api/x402/pay", { body, headers });
    const merchantById = async (id: string) =>
      (await svc.db.sql<MerchantRow[]>`select * from merchants where id = ${id}`)[0];
    const proofFor = (over: Partial<Parameters<typeof gatewayProof>[2]> = {}) =>
      gatewayProof(svc, buyer.account, { to: sellerAddr, value: 10_000n, ...over });
    /**
     * Another settler of the vault (one the operator named: another deployment's relayer, a
     * script) relays a proof on the vault itself, outside this service's records: the mined
     * hash. Anyone else is refused by the vault (its settlers only: docs/decisions.md).
     */
    const relayDirectly = async (proof: string) => {
      const d = decodeGatewayProof(proof);
      assert.ok(d.ok);
      const a = d.proof.payload.authorization;
      const vault = chain.contract(X402_PROFILE, "GatewayVault");
      const relayer = await externalBuyer(svc, generatePrivateKey(), 1n);
      const submit = () =>
        relayer.wallet.writeContract({
          address: vault,
          abi: GatewayVault.abi,
          functionName: "transferWithAuthorization",
          args: [
            a.from,
            a.to,
            a.value,
            a.validAfter,
            a.validBefore,
            a.nonce,
            d.proof.payload.signature,
          ],
        });
      await assert.rejects(submit(), /NotSettler/);
      await nameSettler(svc, relayer.address);
      const hash = await submit();
      await relayer.mined(hash);
      return hash;
    };

    await t.step("listings: create 201, refusals, public list", async () => {
      const r = await post("/api/x402/listings", {
        slug: "weather",
        upstreamUrl: `${upstream.url}/weather`,
        price: "0.01",
        methods: ["GET", "POST"],
        description: "Current weather",
      });
      assert.equal(r.status, 201, r.text);
      const listing = r.json.listing as Record<string, unknown>;
      assert.equal(listing.price, "0.010000");
      assert.equal(listing.seller, seller.walletAddress);
      assert.equal(listing.network, "eip155:5042002");
      const dup = await post("/api/x402/listings", {
        slug: "weather",
        upstreamUrl: `${upstream.url}/x`,
        price: "1",
        methods: ["GET"],
      }, { authorization: `Bearer ${other.apiKey}` });
      assert.equal(dup.status, 409);
      assert.equal(dup.json.error, M.x402SlugTaken);
      const bad = await post("/api/x402/listings", {
        slug: "Bad Slug",
        upstreamUrl: upstream.url,
        price: "1",
        methods: ["GET"],
      });
      assert.equal(bad.status, 400);
      assert.equal(bad.json.error, M.x402Slug);
      const zero = await post("/api/x402/listings", {
        slug: "free",
        upstreamUrl: upstream.url,
        price: "0",
        methods: ["GET"],
      });
      assert.equal(zero.status, 400);
      assert.equal(zero.json.error, M.x402Price);
      const list = await call("GET", "/api/x402/listings");
      assert.equal(list.status, 200);
      const listings = list.json.listings as Record<string, unknown>[];
      assert.deepEqual(listings.map((l) => l.slug), ["weather"]);
      assert.equal("upstreamUrl" in listings[0], false, "the upstream stays private");
      const noKey = await call("POST", "/api/x402/listings", { body: { slug: "x" } });
      assert.equal(noKey.status, 401);
    });

    await t.step("no proof: 402 with what to pay", async () => {
      const r = await pay({ slug: "weather", method: "GET" });
      assert.equal(r.status, 402, r.text);
      assert.equal(r.json.error, M.x402PaymentRequired);
      assert.deepEqual(r.json.payment, {
        x402Version: 1,
        scheme: "gateway",
        network: "eip155:5042002",
        payTo: seller.walletAddress,
        amount: "10000",
        listingSlug: "weather",
        domain: {
          name: "GatewayVault",
          version: "1",
          chainId: 5042002,
          verifyingContract: getAddress(
            svc.deps.chain.gateway.domain(X402_PROFILE, "gateway").verifyingContract,
          ),
        },
      });
      const unknown = await pay({ slug: "nope", method: "GET" });
      assert.equal(unknown.status, 404);
      assert.equal(unknown.json.error, M.x402ListingNotFound);
      // No slug is a missing field, named as such (the field checks come before any lookup).
      for (const body of [{ method: "GET" }, { slug: "", method: "GET" }, {}]) {
        const missing = await pay(body);
        assert.equal(missing.status, 400, missing.text);
        assert.match(missing.headers.get("content-type")!, /application\/json/);
        assert.equal(missing.json.error, M.x402ProofSlug);
        assert.match(missing.json.error as string, /^slug is required/);
      }
      const wrongMethod = await pay({ slug: "weather", method: "DELETE" });
      assert.equal(wrongMethod.status, 400);
      assert.equal(wrongMethod.json.error, M.x402MethodNotAllowed);
    });

    let settledProof = "";
    await t.step(
      "a paid GET: upstream body unchanged, balances moved, attempt recorded",
      async () => {
        const before = {
          buyer: await gatewayOf(buyer.address),
          seller: await gatewayOf(sellerAddr),
        };
        const { proof } = await proofFor();
        const r = await pay(
          { slug: "weather", method: "GET", params: { city: "Lisbon", days: 2 } },
          { "X-402-Payment-Proof": proof, "X-Agent-ID": buyerAgent },
        );
        assert.equal(r.status, 200, r.text);
        assert.deepEqual(r.json.data, { temperature: 21.5, unit: "C", tags: ["x", null] });
        const s = r.json.settlement as Record<string, string>;
        assert.equal(s.amount, "0.010000");
        assert.equal(s.listingSlug, "weather");
        assert.match(s.txHash, /^0x[0-9a-f]{64}$/);
        const last = upstream.calls.at(-1)!;
        assert.equal(last.method, "GET");
        assert.equal(last.url.pathname, "/weather");
        assert.equal(last.url.searchParams.get("city"), "Lisbon");
        assert.equal(last.url.searchParams.get("days"), "2");
        const after = {
          buyer: await gatewayOf(buyer.address),
          seller: await gatewayOf(sellerAddr),
        };
        assert.equal(after.buyer.available, before.buyer.available - 10_000n);
        assert.equal(after.seller.available, before.seller.available + 10_000n);
        const agent = await paymentsByAgent(svc.deps, buyerAgent);
        assert.equal(agent.payments.length, 1);
        const p = agent.payments[0];
        assert.equal(p.status, "SUCCESS");
        assert.equal(p.payer, buyer.address.toLowerCase());
        assert.equal(p.payee, sellerAddr);
        assert.equal(p.amount, 10_000n);
        assert.equal(p.txHash, s.txHash);
        assert.equal(p.agentId, buyerAgent);
        // The agent's feedback goes on chain from a job: let it land before later steps count
        // transactions.
        const tokenId = BigInt(buyerAgent.split(":")[2]);
        await waitFor(
          async () => (await chain.agents.summary(X402_PROFILE, tokenId)).count === 1n,
          {
            what: "the agent's feedback on chain",
          },
        );
        assert.deepEqual(agent.totals, {
          count: 1,
          settledCount: 1,
          failedCount: 0,
          settledAmount: 10_000n,
        });
        settledProof = proof;
      },
    );

    await t.step("a paid POST forwards params as the JSON body", async () => {
      const { proof } = await proofFor();
      const r = await pay({
        slug: "weather",
        method: "POST",
        params: { q: [1, 2] },
        paymentProof: proof,
      });
      assert.equal(r.status, 200, r.text);
      const last = upstream.calls.at(-1)!;
      assert.equal(last.method, "POST");
      assert.deepEqual(JSON.parse(last.body), { q: [1, 2] });
    });

    await t.step("refused before broadcast: replay, expired, amount, payee, garbage", async () => {
      const sent = await txCount();
      const calls = upstream.calls.length;
      const replay = await pay({ slug: "weather", method: "GET", paymentProof: settledProof });
      assert.equal(replay.status, 403, replay.text);
      assert.equal(replay.json.error, M.x402ProofUsed);
      const now = BigInt(Math.floor(svc.clock.now().getTime() / 1000));
      const expired = await proofFor({ validAfter: now - 301n, validBefore: now + 600n });
      const e = await pay({ slug: "weather", method: "GET", paymentProof: expired.proof });
      assert.equal(e.status, 403);
      assert.equal(e.json.error, M.x402ProofExpired);
      const amount = await proofFor({ value: 9_999n });
      const a = await pay({ slug: "weather", method: "GET", paymentProof: amount.proof });
      assert.equal(a.status, 403);
      assert.equal(a.json.error, M.x402ProofAmount);
      const payee = await proofFor({ to: other.walletAddress! });
      const p = await pay({ slug: "weather", method: "GET", paymentProof: payee.proof });
      assert.equal(p.status, 403);
      assert.equal(p.json.error, M.x402ProofPayee);
      const garbage = await pay({ slug: "weather", method: "GET", paymentProof: "not-a-proof" });
      assert.equal(garbage.status, 403);
      assert.equal(garbage.json.error, M.x402ProofInvalid);
      // Signed by someone else than `from`.
      const forged = await gatewayProof(svc, privateKeyToAccount(generatePrivateKey()), {
        to: sellerAddr,
        value: 10_000n,
      });
      const json = JSON.parse(atob(forged.proof));
      json.payload.authorization.from = buyer.address;
      const f = await pay({
        slug: "weather",
        method: "GET",
        paymentProof: btoa(JSON.stringify(json)),
      });
      assert.equal(f.status, 403);
      assert.equal(f.json.error, M.x402ProofInvalid);
      const agent = await pay(
        { slug: "weather", method: "GET", paymentProof: (await proofFor()).proof },
        { "X-Agent-ID": "8004:abc" },
      );
      assert.equal(agent.status, 400);
      assert.equal(agent.json.error, M.x402AgentIdField);
      // validBefore too close to settle in time, or beyond what any record holds (2^255).
      // validBefore passed while the timestamp is recent: said so, not "more than 5 minutes old".
      const lapsed = await proofFor({ validAfter: now - 20n, validBefore: now - 5n });
      const l = await pay({ slug: "weather", method: "GET", paymentProof: lapsed.proof });
      assert.equal(l.status, 403, l.text);
      assert.equal(l.json.error, M.x402ProofInvalid);
      assert.equal(l.json.hint, "validBefore has passed");
      const soon = await proofFor({ validBefore: now + 3n });
      const s = await pay({ slug: "weather", method: "GET", paymentProof: soon.proof });
      assert.equal(s.status, 403, s.text);
      assert.equal(s.json.error, M.x402ProofInvalid);
      assert.match(String(s.json.hint), /at least 6 seconds/);
      const far = await proofFor({ validBefore: 2n ** 255n });
      const fr = await pay({ slug: "weather", method: "GET", paymentProof: far.proof });
      assert.equal(fr.status, 403, fr.text);
      assert.equal(fr.json.hint, "validBefore is too far in the future");
      const fv = await call("POST", "/api/x402/verify", {
        headers: bearer,
        body: { proof: far.proof },
      });
      assert.equal(fv.status, 200, fv.text);
      assert.equal(fv.json.valid, false);
      assert.equal(await txCount(), sent, "nothing was broadcast");
      assert.equal(upstream.calls.length, calls, "the upstream was not called");
    });

    await t.step(
      "an upstream slower than the proof's time left: cut off in time to settle, nothing charged",
      async () => {
        const sent = await txCount();
        const before = await gatewayOf(buyer.address);
        const release = Promise.withResolvers<Response>();
        const answer = upstream.state.answer;
        upstream.state.answer = () => release.promise;
        try {
          const now = BigInt(Math.floor(svc.clock.now().getTime() / 1000));
          // 8 s left: the upstream gets what remains before the settlement's 5 s margin.
          const { proof, nonce } = await proofFor({ validBefore: now + 8n });
          const r = await pay({ slug: "weather", method: "GET", paymentProof: proof });
          assert.equal(r.status, 500, r.text);
          assert.equal(r.json.error, M.x402UpstreamUnreachable);
          assert.deepEqual(await gatewayOf(buyer.address), before);
          assert.equal(await txCount(), sent, "nothing was broadcast");
          const [row] = await svc.db.sql`select status from x402_payments where nonce = ${nonce}`;
          assert.equal(row.status, "FAILED");
        } finally {
          release.resolve(Response.json({ late: true }));
          upstream.state.answer = answer;
        }
      },
    );

    await t.step("an ERC-1271 smart account pays (its owner signs); verify agrees", async () => {
      const owner = await externalBuyer(svc, generatePrivateKey(), 5n * USDC);
      const sca = await owner.deploy1271(owner.address);
      await owner.depositFor(sca, 1n * USDC);
      const before = await gatewayOf(sellerAddr);
      const { proof } = await gatewayProof(svc, owner.account, {
        from: sca,
        to: sellerAddr,
        value: 10_000n,
      });
      const v = await call("POST", "/api/x402/verify", { headers: bearer, body: { proof } });
      assert.equal(v.json.valid, true, v.text);
      assert.equal(v.json.payer, getAddress(sca));
      const r = await pay({ slug: "weather", method: "GET", paymentProof: proof });
      assert.equal(r.status, 200, r.text);
      assert.equal((await gatewayOf(sca)).available, 1n * USDC - 10_000n);
      assert.equal((await gatewayOf(sellerAddr)).available, before.available + 10_000n);
      // The owner's key signing for itself is not the account's signature.
      const forged = await gatewayProof(svc, privateKeyToAccount(generatePrivateKey()), {
        from: sca,
        to: sellerAddr,
        value: 10_000n,
      });
      const f = await pay({ slug: "weather", method: "GET", paymentProof: forged.proof });
      assert.equal(f.status, 403);
      assert.equal(f.json.error, M.x402ProofInvalid);
    });

    await t.step("no gateway balance: 400 with both balances", async () => {
      const poor = privateKeyToAccount(generatePrivateKey());
      await chain.mintUsdc({
        profile: X402_PROFILE,
        to: poor.address.toLowerCase() as `0x${string}`,
        amount: 3n * USDC,
      });
      const { proof } = await gatewayProof(svc, poor, { to: sellerAddr, value: 10_000n });
      const r = await pay({ slug: "weather", method: "GET", paymentProof: proof });
      assert.equal(r.status, 400, r.text);
      assert.equal(r.json.error, M.x402NoGatewayBalance);
      assert.equal(r.json.walletBalance, "3.000000");
      assert.equal(r.json.gatewayBalance, "0.000000");
    });

    await t.step(
      "two different proofs racing for a balance that covers one: one is paid",
      async () => {
        const lean = await externalBuyer(svc, generatePrivateKey(), 1n * USDC);
        await lean.deposit(10_000n);
        const proofs = [
          await gatewayProof(svc, lean.account, { to: sellerAddr, value: 10_000n }),
          await gatewayProof(svc, lean.account, { to: sellerAddr, value: 10_000n }),
        ];
        const results = await Promise.all(
          proofs.map((p) => pay({ slug: "weather", method: "GET", paymentProof: p.proof })),
        );
        assert.deepEqual(results.map((r) => r.status).sort(), [200, 400]);
        const refused = results.find((r) => r.status === 400)!;
        assert.ok(
          ([M.x402InsufficientGatewayBalance, M.x402NoGatewayBalance] as string[]).includes(
            refused.json.error as string,
          ),
          refused.text,
        );
        assert.deepEqual(await gatewayOf(lean.address), {
          available: 0n,
          withdrawing: 0n,
          withdrawable: 0n,
        });
      },
    );

    await t.step("50 identical proofs at once settle once", async () => {
      const sent = await txCount();
      const before = await gatewayOf(buyer.address);
      const { proof } = await proofFor();
      // The claims' group commit keeps identical (payer, nonce) apart: one per statement.
      const results = await Promise.all(
        Array.from(
          { length: 50 },
          () => pay({ slug: "weather", method: "GET", paymentProof: proof }),
        ),
      );
      const statuses = results.map((r) => r.status).sort();
      assert.deepEqual(
        statuses,
        [200, ...Array(49).fill(403)],
        results.filter((r) => r.status !== 403).map((r) => r.text).join("\n"),
      );
      for (const r of results.filter((r) => r.status === 403)) {
        assert.equal(r.json.error, M.x402ProofUsed);
      }
      assert.equal(await txCount(), sent + 1);
      assert.equal((await gatewayOf(buyer.address)).available, before.available - 10_000n);
    });

    await t.step(
      "settlements that arrive while one is in flight share one transaction",
      async () => {
        const settler = batchingSettler(svc.deps);
        const item = async (signer = buyer.account) => {
          const { proof } = await gatewayProof(svc, signer, { to: sellerAddr, value: 10_000n });
          const d = decodeGatewayProof(proof);
          assert.ok(d.ok);
          return {
            attemptId: crypto.randomUUID(),
            authorization: d.proof.payload.authorization,
            signature: d.proof.payload.signature,
          };
        };
        const [a, b, c] = [await item(), await item(), await item()];
        // Signed by someone else: the vault skips it, the rest of its batch settles.
        const bad = await item(privateKeyToAccount(generatePrivateKey()));
        bad.authorization.from = buyer.address.toLowerCase() as `0x${string}`;
        const before = await gatewayOf(buyer.address);
        const sent = await txCount();
        const results = await Promise.allSettled([a, b, bad, c].map((i) => settler.settle(i)));
        const [ra, rb, rbad, rc] = results;
        assert.equal(ra.status, "fulfilled");
        assert.equal(rb.status, "fulfilled");
        assert.equal(rc.status, "fulfilled");
        assert.equal(rbad.status, "rejected");
        assert.equal((rbad.reason as { code?: string }).code, "x402_settlement_failed");
        const hash = (r: PromiseSettledResult<string>) =>
          (r as PromiseFulfilledResult<string>).value;
        assert.notEqual(hash(ra), hash(rb), "the first goes alone");
        assert.equal(hash(rb), hash(rc), "the ones that waited go together");
        assert.equal(await txCount(), sent + 2);
        assert.equal((await gatewayOf(buyer.address)).available, before.available - 30_000n);
        // Left PENDING by a crash: the sweep finds each one's batch by its nonce in the signed
        // bytes; the settled one becomes SUCCESS with the batch's hash, the skipped one FAILED.
        const old = new Date(svc.clock.now().getTime() - 10 * 60_000);
        for (const i of [c, bad]) {
          await svc.db.sql`insert into x402_payments (scheme, chain_id, payer, payee, amount,
              nonce, valid_after, valid_before, status, created_at)
            values ('gateway', 5042002, ${i.authorization.from}, ${sellerAddr}, 10000,
              ${i.authorization.nonce}, 0, 1, 'PENDING', ${old})`;
        }
        const swept = await reconcilePending({ ...svc.deps, agents: defaultAgentPort });
        assert.deepEqual(swept, { settled: 1, failed: 1, waiting: 0 });
        const rows = await svc.db.sql`select nonce, status, tx_hash from x402_payments
          where nonce in ${svc.db.sql([c.authorization.nonce, bad.authorization.nonce])}`;
        const by = Object.fromEntries(rows.map((x) => [x.nonce, x]));
        assert.equal(by[c.authorization.nonce].status, "SUCCESS");
        assert.equal(by[c.authorization.nonce].txHash, hash(rc));
        assert.equal(by[bad.authorization.nonce].status, "FAILED");
      },
    );

    await t.step("upstream 503: 500, nothing charged, the nonce stays usable", async () => {
      const sent = await txCount();
      const before = { buyer: await gatewayOf(buyer.address), seller: await gatewayOf(sellerAddr) };
      upstream.state.answer = () => new Response("busy", { status: 503 });
      const { proof, nonce } = await proofFor();
      const r = await pay({ slug: "weather", method: "GET", paymentProof: proof });
      assert.equal(r.status, 500, r.text);
      assert.equal(r.json.success, false);
      assert.equal(r.json.error, "Upstream API returned 503");
      assert.deepEqual(await gatewayOf(buyer.address), before.buyer);
      assert.deepEqual(await gatewayOf(sellerAddr), before.seller);
      assert.equal(await txCount(), sent);
      const [row] = await svc.db.sql`
        select status, upstream_status from x402_payments where nonce = ${nonce}`;
      assert.deepEqual({ ...row }, { status: "FAILED", upstreamStatus: 503 });
      upstream.state.answer = () => Response.json({ ok: true });
      const again = await pay({ slug: "weather", method: "GET", paymentProof: proof });
      assert.equal(again.status, 200, again.text);
      assert.deepEqual(again.json.data, { ok: true });
    });

    await t.step(
      "stale PENDING attempts follow their settlement, or fail and free the nonce",
      async () => {
        // A settled call whose row a crash left PENDING: it becomes SUCCESS with its transaction.
        const { proof: paidProof, nonce: paidNonce } = await proofFor();
        const paid = await pay({ slug: "weather", method: "GET", paymentProof: paidProof });
        assert.equal(paid.status, 200, paid.text);
        const old = new Date(svc.clock.now().getTime() - 10 * 60_000);
        await svc.db.sql`update x402_payments set status = 'PENDING', tx_hash = null,
        created_at = ${old} where nonce = ${paidNonce}`;
        // A call that died during its upstream request: claimed, never settled.
        const { proof, nonce } = await proofFor();
        const total = await gatewayOf(buyer.address);
        await svc.db.sql`insert into x402_payments (scheme, chain_id, payer, payee, amount, nonce,
          valid_after, valid_before, status, created_at, listing_slug)
        values ('gateway', 5042002, ${buyer.address.toLowerCase()}, ${sellerAddr}, 10000, ${nonce},
          0, 1, 'PENDING', ${old}, 'weather')`;
        const blocked = await pay({ slug: "weather", method: "GET", paymentProof: proof });
        assert.equal(blocked.status, 403, "the PENDING row holds the nonce");
        const fresh = await svc.db.sql`insert into x402_payments (scheme, chain_id, payer, payee,
          amount, nonce, valid_after, valid_before, status, created_at)
        values ('gateway', 5042002, ${buyer.address.toLowerCase()}, ${sellerAddr}, 10000,
          ${"0x" + "ab".repeat(32)}, 0, 1, 'PENDING', ${svc.clock.now()}) returning id`;
        const r = await reconcilePending({ ...svc.deps, agents: defaultAgentPort });
        assert.deepEqual(r, { settled: 1, failed: 1, waiting: 0 });
        const rows = await svc.db.sql`
        select nonce, status, tx_hash from x402_payments where nonce in ${
          svc.db.sql([paidNonce, nonce])
        }`;
        const by = Object.fromEntries(rows.map((x) => [x.nonce, x]));
        assert.equal(by[paidNonce].status, "SUCCESS");
        assert.equal(by[paidNonce].txHash, (paid.json.settlement as { txHash: string }).txHash);
        assert.equal(by[nonce].status, "FAILED");
        const [young] = await svc.db.sql`select status from x402_payments where id = ${
          fresh[0].id
        }`;
        assert.equal(young.status, "PENDING", "a recent attempt is left alone");
        await svc.db.sql`delete from x402_payments where id = ${fresh[0].id}`;
        assert.deepEqual(await gatewayOf(buyer.address), total, "nothing was charged");
        const again = await pay({ slug: "weather", method: "GET", paymentProof: proof });
        assert.equal(again.status, 200, again.text);
      },
    );

    await t.step(
      "a PENDING attempt whose proof another settler relayed directly on the vault: SUCCESS",
      async () => {
        // Paid to another seller, so the seller's balance the later steps count stays as it is.
        const payee = other.walletAddress!.toLowerCase() as `0x${string}`;
        const { proof, nonce } = await proofFor({ to: payee });
        const d = decodeGatewayProof(proof);
        assert.ok(d.ok);
        const a = d.proof.payload.authorization;
        const old = new Date(svc.clock.now().getTime() - 10 * 60_000);
        // Our attempt: claimed, then the process died before its relay was signed.
        await svc.db.sql`insert into x402_payments (scheme, chain_id, payer, payee, amount, nonce,
          valid_after, valid_before, status, created_at, listing_slug)
        values ('gateway', 5042002, ${a.from}, ${payee}, ${a.value}, ${nonce},
          ${a.validAfter}, ${a.validBefore}, 'PENDING', ${old}, 'weather')`;
        // Meanwhile another settler relays the proof on the contract itself.
        const before = await gatewayOf(payee);
        const hash = await relayDirectly(proof);
        assert.equal((await gatewayOf(payee)).available, before.available + a.value);
        const r = await reconcilePending({ ...svc.deps, agents: defaultAgentPort });
        assert.deepEqual(r, { settled: 1, failed: 0, waiting: 0 });
        const [row] = await svc.db.sql`select status, tx_hash from x402_payments
          where nonce = ${nonce}`;
        assert.deepEqual({ ...row }, { status: "SUCCESS", txHash: hash });
      },
    );

    await t.step("the outbound guard (production's public policy) refuses loopback", async () => {
      const schema = createListingBody("public");
      const refused = schema.safeParse({
        slug: "internal",
        upstreamUrl: "https://127.0.0.1/admin",
        price: "1",
        methods: ["GET"],
      });
      assert.equal(refused.success, false);
      assert.equal(
        schema.safeParse({
          slug: "plain",
          upstreamUrl: "http://api.example.com/",
          price: "1",
          methods: ["GET"],
        }).success,
        false,
        "http is refused",
      );
      const calls = upstream.calls.length;
      const literal = await callUpstream(new URL(`${upstream.url}/x`), { method: "GET" }, {
        timeoutMs: 5_000,
        policy: "public",
      });
      assert.equal(literal.ok, false);
      assert.equal(!literal.ok && literal.refused, true);
      // A name that resolves to loopback is refused in the socket's own lookup.
      const named = await callUpstream(
        new URL(`https://localhost:${new URL(upstream.url).port}/x`),
        { method: "GET" },
        { timeoutMs: 5_000, policy: "public" },
      );
      assert.equal(!named.ok && named.refused, true, JSON.stringify(named));
      assert.equal(upstream.calls.length, calls);
      // And through POST /api/x402/pay: 500, nothing charged, with the guard switched on.
      const config = svc.deps.config as { WEBHOOK_TARGETS: "public" | "any" };
      config.WEBHOOK_TARGETS = "public";
      try {
        const sent = await txCount();
        const { proof } = await proofFor();
        const r = await pay({ slug: "weather", method: "GET", paymentProof: proof });
        assert.equal(r.status, 500, r.text);
        assert.equal(r.json.error, M.x402UpstreamUnreachable);
        assert.equal(await txCount(), sent);
      } finally {
        config.WEBHOOK_TARGETS = "any";
      }
      assert.equal(upstream.calls.length, calls);
    });

    await t.step("verify: garbage, settleable, settled, another seller's", async () => {
      const v = (proof: unknown, key = seller.apiKey) =>
        call("POST", "/api/x402/verify", {
          headers: { authorization: `Bearer ${key}` },
          body: { proof },
        });
      const invalid = {
        success: true,
        valid: false,
        settled: false,
        amount: "0.000000",
        payer: "0x0000000000000000000000000000000000000000",
        timestamp: 0,
      };
      assert.deepEqual((await v("garbage")).json, invalid);
      const fresh = await proofFor();
      const auth = JSON.parse(atob(fresh.proof)).payload.authorization;
      const good = await v(fresh.proof);
      assert.equal(good.status, 200);
      assert.deepEqual(good.json, {
        success: true,
        valid: true,
        settled: false,
        amount: "0.010000",
        payer: buyer.address,
        timestamp: Number(auth.validAfter),
      });
      const settled = await v(settledProof);
      assert.equal(settled.json.valid, true);
      assert.equal(settled.json.settled, true);
      assert.deepEqual((await v(fresh.proof, other.apiKey)).json, invalid);
      const now = BigInt(Math.floor(svc.clock.now().getTime() / 1000));
      const old = await proofFor({ validAfter: now - 400n, validBefore: now + 100n });
      assert.deepEqual((await v(old.proof)).json, invalid);
      const missing = await v(undefined);
      assert.equal(missing.status, 400);
      const apiKeyHeader = await call("POST", "/api/x402/verify", {
        headers: { "x-api-key": seller.apiKey },
        body: { proof: "x" },
      });
      assert.equal(apiKeyHeader.status, 401, "bearer only");
    });

    await t.step("gateway deposit from a managed wallet, then it pays", async () => {
      const w = await post("/api/wallets", {}, { "x-api-key": other.apiKey });
      assert.equal(w.status, 201, w.text);
      const wallet = w.json.wallet as { id: string; address: string };
      await chain.mintUsdc({
        profile: X402_PROFILE,
        to: wallet.address.toLowerCase() as `0x${string}`,
        amount: 5n * USDC,
      });
      const poor = await post("/api/x402/gateway/deposit", { walletId: wallet.id, amount: "6" }, {
        authorization: `Bearer ${other.apiKey}`,
      });
      assert.equal(poor.status, 400);
      assert.equal(poor.json.error, M.x402DepositInsufficient);
      const foreign = await post("/api/x402/gateway/deposit", { walletId: wallet.id, amount: "1" });
      assert.equal(foreign.status, 403);
      const r = await post(
        "/api/x402/gateway/deposit",
        { fromSCA: wallet.address, amount: "2.5" },
        {
          authorization: `Bearer ${other.apiKey}`,
        },
      );
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.json.gateway, {
        total: "2.500000",
        available: "2.500000",
        withdrawing: "0.000000",
        withdrawable: "2.500000",
      });
      assert.equal(
        await chain.usdcBalance(X402_PROFILE, wallet.address.toLowerCase() as `0x${string}`),
        2_500_000n,
      );
      const account = await chain.walletAccount(wallet.id);
      const { proof } = await gatewayProof(svc, account, { to: sellerAddr, value: 10_000n });
      const paid = await pay({ slug: "weather", method: "GET", paymentProof: proof });
      assert.equal(paid.status, 200, paid.text);
      // A retry with the same Idempotency-Key after a 408 (not stored by the idempotency layer)
      // reaches the service again: it finds the first deposit instead of making a second.
      const m = await merchantById(other.id);
      const once = await deposit(svc.deps, m, { walletId: wallet.id, amount: 500_000n }, "dep-1");
      const again = await deposit(svc.deps, m, { walletId: wallet.id, amount: 500_000n }, "dep-1");
      assert.equal(again.txHash, once.txHash);
      assert.equal(
        await chain.usdcBalance(X402_PROFILE, wallet.address.toLowerCase() as `0x${string}`),
        2_000_000n,
      );
    });

    await t.step("seller balance and withdraw", async () => {
      const b = await call("GET", "/api/x402/seller/balance", { headers: bearer });
      assert.equal(b.status, 200, b.text);
      const g = await gatewayOf(sellerAddr);
      assert.equal(g.available, 120_000n, "nine settled calls and three batched settlements");
      assert.deepEqual(b.json.gateway, {
        total: "0.120000",
        available: "0.120000",
        withdrawing: "0.000000",
        withdrawable: "0.120000",
      });
      assert.equal((b.json.wallet as { balance: string }).balance, "0.000000");
      const byAddress = await call(
        "GET",
        `/api/x402/seller/balance?sellerAddress=${buyer.address}`,
        {
          headers: bearer,
        },
      );
      assert.equal(byAddress.status, 200);
      assert.equal((byAddress.json.wallet as { balance: string }).balance, "90.000000");
      const badAddr = await call("GET", "/api/x402/seller/balance?sellerAddress=0x12", {
        headers: bearer,
      });
      assert.equal(badAddr.status, 400);

      const sent = await txCount();
      const tooMuch = await post("/api/x402/seller/balance/withdraw", { amount: "0.120001" });
      assert.equal(tooMuch.status, 400, tooMuch.text);
      assert.equal(tooMuch.json.error, M.x402WithdrawExceeds);
      assert.equal(tooMuch.json.withdrawable, "0.120000");
      const otherChain = await post("/api/x402/seller/balance/withdraw", {
        amount: "0.01",
        destinationChain: "Solana_Devnet",
      });
      assert.equal(otherChain.status, 400);
      assert.equal(otherChain.json.error, M.x402DestinationChain);
      // Into the gateway vault itself: stranded there; refused before anything is signed.
      const intoVault = await post("/api/x402/seller/balance/withdraw", {
        amount: "0.01",
        destinationAddress: svc.deps.chain.runtime(x402Profile(svc.deps)).contracts.GatewayVault,
      });
      assert.deepEqual([intoVault.status, intoVault.json.error], [
        400,
        M.withdrawDestinationContract,
      ]);
      assert.equal(await txCount(), sent);

      const dest = privateKeyToAccount(generatePrivateKey()).address;
      const w = await post("/api/x402/seller/balance/withdraw", {
        amount: "0.03",
        destinationAddress: dest,
      });
      assert.equal(w.status, 200, w.text);
      assert.equal(w.json.amount, "0.030000");
      assert.equal(w.json.sourceChain, "settleTestnet");
      assert.equal(w.json.destinationChain, "settleTestnet");
      assert.equal(w.json.recipient, dest);
      assert.equal(w.json.status, "confirmed");
      assert.equal(w.json.explorerUrl, chain.explorerTxUrl(X402_PROFILE, w.json.txHash as string));
      assert.equal(
        await chain.usdcBalance(X402_PROFILE, dest.toLowerCase() as `0x${string}`),
        30_000n,
      );
      assert.equal((await gatewayOf(sellerAddr)).available, 90_000n);
      // Two at once for more than half each: one is paid, the other is a 400 (never a revert).
      const sentBefore = await txCount();
      const racing = await Promise.all([
        post("/api/x402/seller/balance/withdraw", { amount: "0.05" }),
        post("/api/x402/seller/balance/withdraw", { amount: "0.05" }),
      ]);
      assert.deepEqual(racing.map((r) => r.status).sort(), [200, 400], JSON.stringify(racing));
      const refused = racing.find((r) => r.status === 400)!;
      assert.equal(refused.json.error, M.x402WithdrawExceeds);
      assert.equal(refused.json.withdrawable, "0.040000");
      assert.equal(await txCount(), sentBefore + 1, "one withdrawal sent");
      assert.equal((await gatewayOf(sellerAddr)).available, 40_000n);
      const self = await post("/api/x402/seller/balance/withdraw", { amount: "0.04" });
      assert.equal(self.status, 200, self.text);
      assert.equal(self.json.recipient, seller.walletAddress);
      assert.equal(await chain.usdcBalance(X402_PROFILE, sellerAddr), 90_000n);
      assert.equal((await gatewayOf(sellerAddr)).available, 0n);
    });

    await t.step(
      "a proof relayed on the vault by another settler first: 403 used, no upstream, no trace",
      async () => {
        // The chain's nonce is read while the claim is written: the claim taken meanwhile must
        // leave neither its attempt nor its hold on the payer's mirror behind. (Last: the seller
        // is paid 0.01 more than the steps above count.)
        const { proof, nonce } = await proofFor();
        const d = decodeGatewayProof(proof);
        assert.ok(d.ok);
        const a = d.proof.payload.authorization;
        await relayDirectly(proof);
        const held = async () =>
          (await svc.db.sql`select held from x402_gateway_accounts
            where chain_id = 5042002 and payer = ${a.from}`)[0]?.held ?? 0n;
        const heldBefore = await held();
        const calls = upstream.calls.length;
        const r = await pay({ slug: "weather", method: "GET", paymentProof: proof });
        assert.equal(r.status, 403, r.text);
        assert.equal(r.json.error, M.x402ProofUsed);
        assert.equal(upstream.calls.length, calls, "the upstream was not called");
        const rows = await svc.db.sql`select id from x402_payments where nonce = ${nonce}`;
        assert.equal(rows.length, 0, "no attempt is left");
        assert.equal(await held(), heldBefore, "nothing is held for it");
      },
    );

    await t.step(
      "a proof dated ahead of our clock waits for its validAfter: paid once, the replay refused",
      async () => {
        await catchUpClock(svc);
        const now = BigInt(Math.floor(svc.clock.now().getTime() / 1000));
        const validAfter = now + 3n;
        const calls = upstream.calls.length;
        const { proof } = await proofFor({ validAfter, validBefore: now + 600n });
        // The same proof twice at once (a client retrying): one pays, the other is refused.
        const both = await Promise.all([
          pay({ slug: "weather", method: "GET", paymentProof: proof }),
          pay({ slug: "weather", method: "GET", paymentProof: proof }),
        ]);
        const ok = both.filter((r) => r.status === 200);
        assert.equal(ok.length, 1, both.map((r) => r.text).join("\n"));
        const refused = both.find((r) => r.status !== 200)!;
        assert.equal(refused.status, 403, refused.text);
        assert.equal(refused.json.error, M.x402ProofUsed);
        assert.equal(upstream.calls.length, calls + 1, "the upstream was called once");
        const receipt = await chain.runtime(X402_PROFILE).client.getTransactionReceipt({
          hash: (ok[0].json.settlement as { txHash: `0x${string}` }).txHash,
        });
        assert.equal(receipt.status, "success");
        const block = await chain.runtime(X402_PROFILE).client.getBlock({
          blockNumber: receipt.blockNumber,
        });
        assert.ok(block.timestamp >= validAfter, "settled once the vault takes it");
      },
    );
  } finally {
    await upstream.close();
    await svc.close();
  }
});
