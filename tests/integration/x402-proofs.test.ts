/**
 * A merchant's managed wallet and its agent pay x402 calls with nothing but the API (and test
 * USDC from the faucet's mint): deposit into the gateway (an agent from its smart account),
 * POST /api/x402/proofs for a listing, pay a real upstream, the seller is credited, a replay is
 * refused, the rest is withdrawn back. No test code holds a managed wallet's key. Refusals (another
 * merchant's wallet or agent, unknown slug, both or neither payer, validity out of range, an
 * external payout wallet) sign and send nothing.
 */
import assert from "node:assert/strict";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { startTestService } from "../helpers/service.ts";
import { api, cookieFrom, createMerchant } from "../helpers/accounts.ts";
import { X402_PROFILE } from "../helpers/x402.ts";
import { waitFor } from "../helpers/poll.ts";
import { M } from "../../src/http/messages.ts";
import { decodeGatewayProof } from "../../src/modules/x402/x402.rules.ts";

const USDC = 1_000_000n;

Deno.test("x402 payers: a managed wallet and an agent pay through the API alone", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const calls: string[] = [];
  const upstream = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
    calls.push(new URL(req.url).search);
    return Response.json({ quote: 42 });
  });
  const call = api(svc);
  const chain = svc.deps.chain;
  const p = X402_PROFILE;
  const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
  let n = 0;
  const post = (path: string, key: string, body: unknown, headers: Record<string, string> = {}) =>
    call("POST", path, { headers: { ...bearer(key), ...headers }, body });
  const txCount = async () =>
    Number((await svc.db.sql`select count(*)::int as n from chain_transactions`)[0].n);
  const usdcOf = (a: string) => chain.usdcBalance(p, a.toLowerCase() as `0x${string}`);
  /** A paid call with the headers POST /api/x402/proofs answered, as a user sends them. */
  const pay = (headers: Record<string, string>) =>
    call("POST", "/api/x402/pay", {
      headers,
      body: { slug: "quote", method: "GET", params: { symbol: "USDC" } },
    });
  try {
    const [seller, buyer, stranger] = await Promise.all([
      createMerchant(svc),
      createMerchant(svc),
      createMerchant(svc),
    ]);
    const listing = await post("/api/x402/listings", seller.apiKey, {
      slug: "quote",
      upstreamUrl: `http://127.0.0.1:${upstream.addr.port}/quote`,
      price: "0.25",
      methods: ["GET"],
    });
    assert.equal(listing.status, 201, listing.text);
    const sellerGateway = async () => {
      const r = await call("GET", "/api/x402/seller/balance", { headers: bearer(seller.apiKey) });
      assert.equal(r.status, 200, r.text);
      return (r.json.gateway as Record<string, string>).available;
    };
    // Proofs start at our clock's now; the chain's blocks follow the wall clock.
    svc.clock.set(new Date());

    const w = await post("/api/wallets", buyer.apiKey, { label: "x402 buyer" });
    assert.equal(w.status, 201, w.text);
    const wallet = w.json.wallet as { id: string; address: string };

    await t.step("a managed wallet deposits, gets a proof, pays, withdraws the rest", async () => {
      await chain.mintUsdc({
        profile: p,
        to: wallet.address.toLowerCase() as `0x${string}`,
        amount: 5n * USDC,
      });
      const dep = await post("/api/x402/gateway/deposit", buyer.apiKey, {
        walletId: wallet.id,
        amount: "2",
      }, { "idempotency-key": `dep-${n++}` });
      assert.equal(dep.status, 200, dep.text);

      const sent = await txCount();
      const r = await post("/api/x402/proofs", buyer.apiKey, {
        slug: "quote",
        walletId: wallet.id,
      });
      assert.equal(r.status, 201, r.text);
      assert.equal(await txCount(), sent, "a proof sends nothing");
      assert.equal(r.json.payer, wallet.address);
      assert.equal(r.json.payTo, seller.walletAddress);
      assert.equal(r.json.amount, "0.250000");
      assert.equal(r.json.amountUnits, "250000");
      assert.equal(r.json.gatewayBalance, "2.000000");
      const now = Math.floor(svc.clock.now().getTime() / 1000);
      // Ten seconds back (a chain's clock may trail ours); valid until now + validForSeconds.
      assert.equal(r.json.validAfter, now - 10);
      assert.equal(r.json.validBefore, now + 300);
      assert.deepEqual(r.json.headers, { "X-402-Payment-Proof": r.json.proof });
      const decoded = decodeGatewayProof(r.json.proof as string);
      assert.ok(decoded.ok);
      const a = decoded.proof.payload.authorization;
      assert.equal(a.from, wallet.address.toLowerCase());
      assert.equal(a.to, seller.walletAddress!.toLowerCase());
      assert.equal(a.value, 250_000n);
      assert.equal(a.nonce, r.json.nonce);

      const short = await post("/api/x402/proofs", buyer.apiKey, {
        slug: "quote",
        walletId: wallet.id,
        validForSeconds: 60,
      });
      assert.equal(short.status, 201, short.text);
      assert.equal(Number(short.json.validBefore) - Number(short.json.validAfter), 60 + 10);
      assert.notEqual(short.json.nonce, r.json.nonce, "a fresh nonce each time");

      const paid = await pay(r.json.headers as Record<string, string>);
      assert.equal(paid.status, 200, paid.text);
      assert.deepEqual(paid.json.data, { quote: 42 });
      assert.deepEqual(calls, ["?symbol=USDC"]);
      assert.equal(await sellerGateway(), "0.250000");
      const replay = await pay(r.json.headers as Record<string, string>);
      assert.equal(replay.status, 403, replay.text);
      assert.equal(replay.json.error, M.x402ProofUsed);
      assert.equal(calls.length, 1, "a replay never reaches the upstream");

      const b = await call("GET", `/api/x402/gateway/balance?walletId=${wallet.id}`, {
        headers: { "x-api-key": buyer.apiKey },
      });
      assert.equal(b.status, 200, b.text);
      assert.equal(b.json.address, wallet.address);
      assert.deepEqual(b.json.gateway, {
        total: "1.750000",
        available: "1.750000",
        withdrawing: "0.000000",
        withdrawable: "1.750000",
      });
      assert.deepEqual(b.json.wallet, { balance: "3.000000" });

      const before = await txCount();
      const tooMuch = await post("/api/x402/gateway/withdraw", buyer.apiKey, {
        walletId: wallet.id,
        amount: "1.750001",
      });
      assert.equal(tooMuch.status, 400, tooMuch.text);
      assert.equal(tooMuch.json.error, M.x402WithdrawExceeds);
      assert.equal(tooMuch.json.withdrawable, "1.750000");
      assert.equal(await txCount(), before);
      const key = { "idempotency-key": `wd-${n++}` };
      const back = await post("/api/x402/gateway/withdraw", buyer.apiKey, {
        walletId: wallet.id,
        amount: "1.75",
      }, key);
      assert.equal(back.status, 200, back.text);
      assert.equal(back.json.recipient, wallet.address);
      assert.equal(back.json.status, "confirmed");
      assert.equal((back.json.gateway as Record<string, string>).total, "0.000000");
      assert.equal(await usdcOf(wallet.address), 4_750_000n);
      const again = await post("/api/x402/gateway/withdraw", buyer.apiKey, {
        walletId: wallet.id,
        amount: "1.75",
      }, key);
      assert.equal(again.status, 200, again.text);
      assert.equal(again.json.txHash, back.json.txHash, "the retry finds the first withdrawal");
      assert.equal(await usdcOf(wallet.address), 4_750_000n);
    });

    const deployed = await post("/api/agent/deploy", buyer.apiKey, {
      name: "Quoter",
      metadataURI: "ipfs://bafyquoter",
    });
    assert.equal(deployed.status, 201, deployed.text);
    const agent = deployed.json.agent as Record<string, string>;
    const agentId = deployed.json.agentId as string;
    const sca = agent.scaAddress;

    await t.step("an agent deposits from its account, pays as the agent, withdraws", async () => {
      await chain.mintUsdc({
        profile: p,
        to: sca.toLowerCase() as `0x${string}`,
        amount: 3n * USDC,
      });
      const key = { "idempotency-key": `dep-${n++}` };
      const d1 = await post(
        "/api/x402/gateway/deposit",
        buyer.apiKey,
        { agentId, amount: "1" },
        key,
      );
      assert.equal(d1.status, 200, d1.text);
      assert.equal(d1.json.walletAddress, sca);
      assert.equal(d1.json.agentId, agentId);
      assert.equal(d1.json.walletId, agent.managedWalletId);
      assert.equal((d1.json.gateway as Record<string, string>).available, "1.000000");
      const d1again = await post(
        "/api/x402/gateway/deposit",
        buyer.apiKey,
        { agentId, amount: "1" },
        key,
      );
      assert.equal(d1again.json.txHash, d1.json.txHash);
      const d2 = await post("/api/x402/gateway/deposit", buyer.apiKey, {
        fromSCA: sca,
        amount: "0.5",
      });
      assert.equal(d2.status, 200, d2.text);
      assert.equal((d2.json.gateway as Record<string, string>).available, "1.500000");
      assert.equal(await usdcOf(sca), 1_500_000n);

      const sent = await txCount();
      const r = await post("/api/x402/proofs", buyer.apiKey, {
        slug: "quote",
        agentId: agent.tokenId,
      });
      assert.equal(r.status, 201, r.text);
      assert.equal(await txCount(), sent, "a proof sends nothing");
      assert.equal(r.json.payer, sca);
      assert.equal(r.json.agentId, agentId);
      assert.equal(r.json.gatewayBalance, "1.500000");
      const headers = r.json.headers as Record<string, string>;
      assert.equal(headers["X-402-Payment-Proof"], r.json.proof);
      assert.equal(headers["X-Agent-ID"], agentId);
      assert.match(headers["X-Agent-Signature"], /^0x[0-9a-f]{130}$/);

      const paid = await pay(headers);
      assert.equal(paid.status, 200, paid.text);
      assert.deepEqual(paid.json.data, { quote: 42 });
      assert.equal(await sellerGateway(), "0.500000");

      const status = await call("GET", `/api/agent/status?tokenId=${agent.tokenId}`, {
        headers: bearer(buyer.apiKey),
      });
      assert.equal(status.status, 200, status.text);
      const a = status.json.agent as Record<string, unknown>;
      assert.equal(a.paymentCount, 1);
      assert.equal(a.totalPaid, 0.25);
      assert.equal(a.reputation, 100);
      assert.deepEqual(
        (a.recentPayments as { amount: number; status: string }[]).map((x) => [x.amount, x.status]),
        [[0.25, "SUCCESS"]],
      );
      // The operator's feedback lands in the registry through a job: poll the API for it.
      const summary = await waitFor(async () => {
        const rep = await call("GET", `/api/agent/reputation?agentId=${agentId}`, {
          headers: bearer(buyer.apiKey),
        });
        const s = rep.json.reputationSummary as Record<string, number>;
        return s.onChainFeedbackCount === 1 ? s : null;
      }, { what: "the payment's feedback on chain" });
      assert.equal(summary.successfulPayments, 1);
      assert.equal(summary.onChainAverage, 100);

      const dest = privateKeyToAccount(generatePrivateKey()).address;
      const out = await post("/api/x402/gateway/withdraw", buyer.apiKey, {
        agentId,
        amount: "0.5",
        destinationAddress: dest,
      });
      assert.equal(out.status, 200, out.text);
      assert.equal(out.json.recipient, dest);
      assert.equal(out.json.payer, sca);
      assert.equal(await usdcOf(dest), 500_000n);
      // Two withdrawals of the whole balance at once: one is paid, the other is the 400.
      const [w1, w2] = await Promise.all(
        ["a", "b"].map((k) =>
          post("/api/x402/gateway/withdraw", buyer.apiKey, {
            agentId: agent.tokenId,
            amount: "0.75",
          }, { "idempotency-key": `race-${k}` })
        ),
      );
      assert.deepEqual([w1.status, w2.status].sort(), [200, 400], `${w1.text} ${w2.text}`);
      const [rest, refused] = w1.status === 200 ? [w1, w2] : [w2, w1];
      assert.equal(refused.json.error, M.x402WithdrawExceeds, refused.text);
      assert.equal(refused.json.withdrawable, "0.000000");
      assert.equal(rest.json.recipient, sca);
      assert.equal(await usdcOf(sca), 2_250_000n);
      const b = await call("GET", `/api/x402/gateway/balance?agentId=${agentId}`, {
        headers: bearer(buyer.apiKey),
      });
      assert.equal(b.status, 200, b.text);
      assert.equal(b.json.address, sca);
      assert.equal((b.json.gateway as Record<string, string>).total, "0.000000");
      assert.deepEqual(b.json.wallet, { balance: "2.250000" });
    });

    await t.step("refusals sign and send nothing", async () => {
      const before = await txCount();
      const expect = async (
        r: Promise<{ status: number; json: Record<string, unknown>; text: string }>,
        status: number,
        error: string,
      ) => {
        const x = await r;
        assert.equal(x.status, status, x.text);
        assert.equal(x.json.error, error, x.text);
        assert.equal("proof" in x.json, false);
      };
      const proofs = (body: unknown, key = stranger.apiKey) => post("/api/x402/proofs", key, body);
      // Another merchant's wallet and agent: as if they did not exist.
      await expect(proofs({ slug: "quote", walletId: wallet.id }), 404, M.x402PayerWalletNotFound);
      await expect(proofs({ slug: "quote", agentId }), 404, M.x402PayerAgentNotFound);
      await expect(
        proofs({ slug: "quote", agentId: agent.tokenId }),
        404,
        M.x402PayerAgentNotFound,
      );
      await expect(
        proofs({ slug: "quote", walletId: crypto.randomUUID() }),
        404,
        M.x402PayerWalletNotFound,
      );
      await expect(
        proofs({ slug: "quote", agentId: "8004:1:1" }),
        404,
        M.x402PayerAgentNotFound,
      );
      await expect(
        call("GET", `/api/x402/gateway/balance?walletId=${wallet.id}`, {
          headers: bearer(stranger.apiKey),
        }),
        404,
        M.x402PayerWalletNotFound,
      );
      await expect(
        call("GET", `/api/x402/gateway/balance?agentId=${agentId}`, {
          headers: bearer(stranger.apiKey),
        }),
        404,
        M.x402PayerAgentNotFound,
      );
      await expect(
        post("/api/x402/gateway/withdraw", stranger.apiKey, { agentId, amount: "0.01" }),
        404,
        M.x402PayerAgentNotFound,
      );
      await expect(
        post("/api/x402/gateway/withdraw", stranger.apiKey, { walletId: wallet.id, amount: "1" }),
        404,
        M.x402PayerWalletNotFound,
      );
      await expect(
        post("/api/x402/gateway/deposit", stranger.apiKey, { agentId, amount: "0.01" }),
        403,
        M.x402DepositNotControlled,
      );
      await expect(
        post("/api/x402/gateway/deposit", stranger.apiKey, { fromSCA: sca, amount: "0.01" }),
        403,
        M.x402DepositNotControlled,
      );
      // The merchant's own, but wrong requests.
      const own = (body: unknown) => proofs(body, buyer.apiKey);
      await expect(own({ slug: "no-such", walletId: wallet.id }), 404, M.x402ListingNotFound);
      await expect(own({ slug: "quote", walletId: wallet.id, agentId }), 400, M.x402PayerSource);
      await expect(own({ slug: "quote" }), 400, M.x402PayerSource);
      await expect(own({ slug: "quote", agentId: "agent-7" }), 400, M.x402PayerAgentId);
      await expect(own({ walletId: wallet.id }), 400, M.x402ProofSlug);
      for (const validForSeconds of [0, 301, 1.5, -5, "60", null]) {
        await expect(
          own({ slug: "quote", walletId: wallet.id, validForSeconds }),
          400,
          M.x402ValidFor,
        );
      }
      await expect(
        call("GET", "/api/x402/gateway/balance", { headers: bearer(buyer.apiKey) }),
        400,
        M.x402PayerSource,
      );
      const noKey = await call("POST", "/api/x402/proofs", {
        body: { slug: "quote", walletId: wallet.id },
      });
      assert.equal(noKey.status, 401);
      // Keys: a secret key without the x402 scope, and a publishable key, sign nothing.
      const keyOf = async (body: Record<string, unknown>) => {
        const r = await call("POST", "/api/keys", { cookie: buyer.cookie, body });
        assert.equal(r.status, 201, r.text);
        return (r.json.key as { key: string }).key;
      };
      const paymentsOnly = await keyOf({
        type: "secret",
        environment: "test",
        scopes: ["payments"],
      });
      const publishable = await keyOf({ type: "publishable", environment: "test" });
      for (const k of [paymentsOnly, publishable]) {
        await expect(
          proofs({ slug: "quote", walletId: wallet.id }, k),
          403,
          M.insufficientPermissions,
        );
      }
      const scoped = await keyOf({ type: "secret", environment: "test", scopes: ["x402"] });
      const ok = await proofs({ slug: "quote", walletId: wallet.id }, scoped);
      assert.equal(ok.status, 201, ok.text);

      // An external payout wallet: the service holds no key for it.
      const ext = await createMerchant(svc, { walletProvider: "LINK_WALLET" });
      const owner = privateKeyToAccount(generatePrivateKey());
      const challenge = await call("GET", `/api/merchant/wallet/connect?address=${owner.address}`, {
        headers: { "x-api-key": ext.apiKey },
      });
      assert.equal(challenge.status, 200, challenge.text);
      const message = challenge.json.message as string;
      const linked = await call("POST", "/api/merchant/wallet/connect", {
        headers: { "x-api-key": ext.apiKey },
        cookie: cookieFrom(challenge.headers, "wallet_connect_nonce")!,
        body: {
          address: owner.address,
          message,
          signature: await owner.signMessage({ message }),
          walletKind: "HOSTED_WALLET",
        },
      });
      assert.equal(linked.status, 200, linked.text);
      await expect(
        proofs({ slug: "quote", walletId: owner.address }, ext.apiKey),
        400,
        M.x402PayerExternal,
      );
      await expect(
        post("/api/x402/gateway/withdraw", ext.apiKey, { walletId: owner.address, amount: "1" }),
        400,
        M.x402PayerExternal,
      );
      assert.equal(await txCount(), before, "no refusal sent anything");
      assert.equal(calls.length, 2);
    });
  } finally {
    await upstream.shutdown();
    await svc.close();
  }
});
