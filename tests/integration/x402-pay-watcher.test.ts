/**
 * POST /api/x402/pay under concurrency on a real anvil and PostgreSQL: calls in flight share
 * settlement transactions, each 200 still carries its `settlement.txHash` (mined, in our table),
 * and the receipts come from the chain's one receipt watcher: no `eth_getTransactionReceipt` per
 * call or per transaction, one `eth_getBlockReceipts` per new block at most, counted by a tiny
 * JSON-RPC proxy in front of the node that the paying process (a second process of the same
 * deployment) talks to.
 */
import assert from "node:assert/strict";
import { generatePrivateKey } from "viem/accounts";
import { startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { waitFor } from "../helpers/poll.ts";
import { forwardRpc } from "../helpers/anvil.ts";
import { externalBuyer, gatewayProof, X402_PROFILE } from "../helpers/x402.ts";

const USDC = 1_000_000n;
const N = 24;

Deno.test("x402 pay: concurrent calls share settlements, one receipt watcher wakes them", async () => {
  const first = await startTestService({ env: { RATE_LIMITS: "off" } });
  const node = first.deps.chain.runtime(X402_PROFILE).rpcUrl;
  const counts = new Map<string, number>();
  let counting = false;
  const proxy = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const body = await req.text();
    if (counting) {
      const parsed = JSON.parse(body);
      for (const c of Array.isArray(parsed) ? parsed : [parsed]) {
        counts.set(c.method, (counts.get(c.method) ?? 0) + 1);
      }
    }
    return await forwardRpc(node, body);
  });
  const svc = await startTestService({
    sameDeploymentAs: first,
    env: { RATE_LIMITS: "off", TESTNET_RPC_URL: `http://127.0.0.1:${proxy.addr.port}` },
  });
  let upstreamCalls = 0;
  const upstream = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, () => {
    upstreamCalls++;
    return Response.json({ ok: true });
  });
  const call = api(svc);
  const rt = svc.deps.chain.runtime(X402_PROFILE);
  const sender = svc.deps.chain.sender;
  try {
    const seller = await createMerchant(svc);
    const sellerAddr = seller.walletAddress!.toLowerCase() as `0x${string}`;
    const r = await call("POST", "/api/x402/listings", {
      headers: { authorization: `Bearer ${seller.apiKey}`, "idempotency-key": "l1" },
      body: {
        slug: "shared",
        upstreamUrl: `http://127.0.0.1:${upstream.addr.port}/x`,
        price: "0.01",
        methods: ["GET"],
      },
    });
    assert.equal(r.status, 201, r.text);
    const buyer = await externalBuyer(svc, generatePrivateKey(), 10n * USDC);
    await buyer.deposit(5n * USDC);
    const pay = async () => {
      const { proof } = await gatewayProof(svc, buyer.account, { to: sellerAddr, value: 10_000n });
      return await call("POST", "/api/x402/pay", {
        body: { slug: "shared", method: "GET", paymentProof: proof },
      });
    };
    // Warm: the watcher's first pass has no history and asks by hash; from then on it follows.
    const warm = await pay();
    assert.equal(warm.status, 200, warm.text);
    counting = true;
    // The first settlement of the burst is held until every call reached the upstream, so the
    // rest queue behind it in the settler and go together.
    sender.opts.hooks = {
      afterRecord: async (row) => {
        if (!row.intentKey.startsWith("x402:")) return;
        await waitFor(() => upstreamCalls >= N + 1 || null, { what: "every call upstream" });
      },
    };
    const blockBefore = await rt.client.getBlockNumber({ cacheTime: 0 });
    const proofs = await Promise.all(
      Array.from(
        { length: N },
        () => gatewayProof(svc, buyer.account, { to: sellerAddr, value: 10_000n }),
      ),
    );
    const results = await Promise.all(proofs.map(({ proof }) =>
      call("POST", "/api/x402/pay", {
        body: { slug: "shared", method: "GET", paymentProof: proof },
      })
    ));
    sender.opts.hooks = undefined;
    const blockAfter = await rt.client.getBlockNumber({ cacheTime: 0 });
    counting = false;

    for (const res of results) assert.equal(res.status, 200, res.text);
    const hashes = results.map((res) =>
      (res.json.settlement as { txHash: string }).txHash.toLowerCase()
    );
    const distinct = [...new Set(hashes)];
    assert.ok(distinct.length < N, `${N} calls in ${distinct.length} transactions`);
    const rows = await svc.db.sql<{ tx_hash: string; status: string }[]>`
      select tx_hash, status from chain_transactions where tx_hash = any(${distinct})`;
    assert.equal(rows.length, distinct.length);
    for (const row of rows) assert.equal(row.status, "confirmed");

    // No receipt asked per call or per transaction; blocks' receipts once per block at most.
    assert.equal(counts.get("eth_getTransactionReceipt") ?? 0, 0, JSON.stringify([...counts]));
    const blocks = Number(blockAfter - blockBefore);
    const byBlock = counts.get("eth_getBlockReceipts") ?? 0;
    assert.ok(byBlock >= 1, "the watcher read the blocks");
    assert.ok(byBlock <= blocks, `${byBlock} block-receipt calls for ${blocks} blocks`);
  } finally {
    sender.opts.hooks = undefined;
    await upstream.shutdown();
    await svc.close();
    await first.close();
    await proxy.shutdown();
  }
});
