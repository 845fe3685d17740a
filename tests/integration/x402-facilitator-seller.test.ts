/**
 * Our facilitator behind a seller we did not write: a Hono app protected by the unmodified
 * `@x402/hono` payment middleware, whose `x402ResourceServer` (`@x402/core`) runs the unmodified
 * `@x402/evm` batch-settlement server scheme against `/api/x402/facilitator` with the seller's API
 * key. The unmodified `@x402/evm` client pays it many times after one deposit (relayed by our
 * facilitator), and the scheme's channel manager claims the vouchers and settles the seller through
 * our facilitator: the seller is paid on chain what the calls cost. And the same middleware
 * with the `exact` server scheme: each call verified and settled by our facilitator before the
 * answer.
 */
import assert from "node:assert/strict";
import { Hono } from "hono";
import { createPublicClient, getAddress, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { wrapFetchWithPayment, x402Client } from "@x402/fetch";
import { toClientEvmSigner } from "@x402/evm";
import { BatchSettlementEvmScheme as ClientScheme } from "@x402/evm/batch-settlement/client";
import { BatchSettlementEvmScheme as ServerScheme } from "@x402/evm/batch-settlement/server";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { paymentMiddleware, x402ResourceServer } from "@x402/hono";
import { startTestService } from "../helpers/service.ts";
import { createMerchant } from "../helpers/accounts.ts";
import { facilitatorClient, X402_PROFILE } from "../helpers/x402.ts";
import { X402BatchSettlement } from "../../src/chain/contracts/artifacts/index.ts";
import { BATCH_SETTLEMENT_ADDRESS } from "../../src/chain/channels.ts";

const USDC = 1_000_000n;
const PRICE = 10_000n;
const NETWORK = "eip155:5042002" as const;

/**
 * A seller's own server: a Hono app whose `GET /{path}` answers `body` behind the unmodified
 * payment middleware, priced at PRICE of our USDC in `scheme`, its resource server given.
 */
function sellerServer(
  resourceServer: x402ResourceServer,
  r: { scheme: string; payTo: `0x${string}`; usdc: `0x${string}`; path: string; body: unknown },
): Deno.HttpServer<Deno.NetAddr> {
  const app = new Hono();
  app.use(paymentMiddleware(
    {
      [`GET /${r.path}`]: {
        accepts: {
          scheme: r.scheme,
          network: NETWORK,
          payTo: r.payTo,
          price: {
            amount: PRICE.toString(),
            asset: r.usdc,
            extra: { name: "USD Coin", version: "2" },
          },
        },
        description: `The ${r.path}`,
      },
    },
    resourceServer,
  ));
  app.get(`/${r.path}`, (c) => c.json(r.body));
  return Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, app.fetch);
}

Deno.test("x402 facilitator: a seller on the standard server middleware is paid through it", async (t) => {
  const svc = await startTestService({
    env: { RATE_LIMITS: "off", X402_CHANNEL_CLAIM_SECONDS: "3600" },
    // Its rounds are the test's to run: no every-minute one beside them.
    crons: false,
  });
  const chain = svc.deps.chain;
  const rt = chain.runtime(X402_PROFILE);
  const pub = createPublicClient({ transport: http(rt.rpcUrl) });
  const usdc = getAddress(chain.contract(X402_PROFILE, "TestUSDC"));
  const usdcOf = (a: string) => chain.usdcBalance(X402_PROFILE, a.toLowerCase() as `0x${string}`);
  let seller: Deno.HttpServer<Deno.NetAddr> | undefined;
  try {
    const merchant = await createMerchant(svc);
    const payTo = getAddress(merchant.walletAddress!);
    const facilitator = facilitatorClient(svc, merchant.apiKey);
    // The seller's own server: the standard middleware, the standard scheme, our facilitator.
    const scheme = new ServerScheme(payTo);
    const resourceServer = new x402ResourceServer(facilitator).register(NETWORK, scheme);
    seller = sellerServer(resourceServer, {
      scheme: "batch-settlement",
      payTo,
      usdc,
      path: "weather",
      body: { weather: "sunny" },
    });
    const resource = `http://127.0.0.1:${seller.addr.port}/weather`;

    const buyer = privateKeyToAccount(generatePrivateKey());
    await chain.mintUsdc({ profile: X402_PROFILE, to: buyer.address, amount: 2n * USDC });
    const client = new x402Client().register(
      NETWORK,
      new ClientScheme(toClientEvmSigner(buyer, pub)),
    );
    client.setSpendControls({
      allowedAssets: [{ network: NETWORK, asset: usdc, maxAmountPerPayment: "1000000" }],
    });
    const pay = wrapFetchWithPayment(fetch, client);
    const calls = 10;

    await t.step(`${calls} paid calls after one deposit our facilitator relayed`, async () => {
      for (let i = 0; i < calls; i++) {
        const r = await pay(resource);
        assert.equal(r.status, 200, await r.clone().text());
        assert.deepEqual(await r.json(), { weather: "sunny" });
      }
      const deposits = await svc.db.sql`
        select count(*)::int as n from chain_transactions where intent_key like 'x402ch:deposit:%'`;
      assert.equal(deposits[0].n, 1);
    });

    await t.step("the scheme's channel manager claims and settles through us", async () => {
      const manager = scheme.createChannelManager(facilitator, NETWORK, usdc);
      const claimed = await manager.claim();
      assert.ok(claimed.length >= 1, JSON.stringify(claimed));
      await manager.settle();
      assert.equal(await usdcOf(payTo), PRICE * BigInt(calls));
      const [id] = (await svc.db.sql`select channel_id from x402_channels`).map((r) =>
        r.channelId as `0x${string}`
      );
      const [, totalClaimed] = await pub.readContract({
        address: BATCH_SETTLEMENT_ADDRESS,
        abi: X402BatchSettlement.abi,
        functionName: "channels",
        args: [id],
      });
      assert.equal(totalClaimed, PRICE * BigInt(calls));
    });
  } finally {
    await seller?.shutdown();
    await svc.close();
  }
});

Deno.test("x402 facilitator: a seller on the standard middleware takes exact payments through it", async () => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const chain = svc.deps.chain;
  const usdc = getAddress(chain.contract(X402_PROFILE, "TestUSDC"));
  const usdcOf = (a: string) => chain.usdcBalance(X402_PROFILE, a.toLowerCase() as `0x${string}`);
  let seller: Deno.HttpServer<Deno.NetAddr> | undefined;
  try {
    const merchant = await createMerchant(svc);
    const payTo = getAddress(merchant.walletAddress!);
    const resourceServer = new x402ResourceServer(facilitatorClient(svc, merchant.apiKey))
      .register(NETWORK, new ExactEvmScheme());
    seller = sellerServer(resourceServer, {
      scheme: "exact",
      payTo,
      usdc,
      path: "quote",
      body: { quote: "to be or not to be" },
    });

    const buyer = privateKeyToAccount(generatePrivateKey());
    await chain.mintUsdc({ profile: X402_PROFILE, to: buyer.address, amount: USDC });
    const client = new x402Client();
    registerExactEvmScheme(client, { signer: buyer });
    client.setSpendControls({
      allowedAssets: [{ network: NETWORK, asset: usdc, maxAmountPerPayment: "1000000" }],
    });
    const pay = wrapFetchWithPayment(fetch, client);
    for (let i = 1n; i <= 3n; i++) {
      const r = await pay(`http://127.0.0.1:${seller.addr.port}/quote`);
      assert.equal(r.status, 200, await r.clone().text());
      assert.deepEqual(await r.json(), { quote: "to be or not to be" });
      // Settled on chain by our facilitator before the seller answered.
      assert.equal(await usdcOf(payTo), i * PRICE);
    }
    assert.equal(await usdcOf(buyer.address), USDC - 3n * PRICE);
  } finally {
    await seller?.shutdown();
    await svc.close();
  }
});
