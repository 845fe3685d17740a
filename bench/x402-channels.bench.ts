/**
 * x402 batch-settlement (issue 27, item 4): buyers pay a listing through `/x402/{slug}` with the
 * unmodified `@x402/evm` client (one deposit opens each channel, then vouchers only; each paid
 * call is the client's two requests, the 402 and the paid one), beside the upstream called
 * directly at the same concurrency; then one claim round collects every voucher. Prints calls
 * per second, latency, and gas per payment and per channel of the claim transaction.
 */
import { createPublicClient, getAddress, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { wrapFetchWithPayment, x402Client } from "@x402/fetch";
import { toClientEvmSigner } from "@x402/evm";
import {
  BatchSettlementEvmScheme,
  computeChannelId,
  signVoucher,
} from "@x402/evm/batch-settlement/client";
import type { PaymentRequirements } from "@x402/core/types";
import { startTestService } from "../tests/helpers/service.ts";
import { api, createMerchant } from "../tests/helpers/accounts.ts";
import { claimRound } from "../src/modules/x402/x402.channels.claims.ts";
import { encodeHeader } from "../src/modules/x402/x402.exact.ts";
import { percentile } from "./report.ts";
import { DEPLOYED_POLLING } from "./deployed.ts";

const BUYERS = Number(Deno.env.get("BENCH_X402_CHANNELS") ?? "20");
const CALLS = Number(Deno.env.get("BENCH_X402_CHANNEL_CALLS") ?? "25");
const NETWORK = "eip155:5042002" as const;

async function timed(jobs: (() => Promise<boolean>)[][]) {
  const latencies: number[] = [];
  let failures = 0;
  const t0 = performance.now();
  await Promise.all(jobs.map(async (queue) => {
    for (const job of queue) {
      const s = performance.now();
      if (!(await job())) failures++;
      latencies.push(performance.now() - s);
    }
  }));
  const ms = performance.now() - t0;
  return { rate: latencies.length / (ms / 1000), latencies, failures, ops: latencies.length };
}

const fmt = (name: string, r: Awaited<ReturnType<typeof timed>>, base?: { rate: number }) =>
  `${name.padEnd(44)} ${r.rate.toFixed(1).padStart(8)} /s  p50 ${
    percentile(r.latencies, 50).toFixed(1)
  } ms  p99 ${percentile(r.latencies, 99).toFixed(1)} ms  (${r.ops} calls, ${r.failures} failed)` +
  (base ? `  ${(r.rate / base.rate).toFixed(3)}× of direct` : "");

export async function run() {
  const upstream = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () => Response.json({ temperature: 21.5 }),
  );
  // The claim job runs when the bench says. Rate limits as a user has them (on): the client's 402
  // offers and its paid calls are not counted.
  const svc = await startTestService({
    env: {
      LOG_LEVEL: "error",
      DATABASE_POOL_MAX: "20",
      X402_CHANNEL_CLAIM_SECONDS: "3600",
      ...DEPLOYED_POLLING,
    },
  });
  try {
    const chain = svc.deps.chain;
    const rt = chain.runtime("testnet");
    const pub = createPublicClient({ transport: http(rt.rpcUrl) });
    const usdc = getAddress(chain.contract("testnet", "TestUSDC"));
    const m = await createMerchant(svc);
    const upstreamUrl = `http://127.0.0.1:${upstream.addr.port}/weather`;
    const listed = await api(svc)("POST", "/api/x402/listings", {
      headers: { authorization: `Bearer ${m.apiKey}` },
      body: { slug: "channels", upstreamUrl, price: "0.001", methods: ["GET"] },
    });
    if (listed.status !== 201) throw new Error(listed.text);
    const resource = `${svc.baseUrl}/x402/channels`;
    const buyers = await Promise.all(Array.from({ length: BUYERS }, async () => {
      const account = privateKeyToAccount(generatePrivateKey());
      await chain.mintUsdc({ profile: "testnet", to: account.address, amount: 1_000_000n });
      const scheme = new BatchSettlementEvmScheme(toClientEvmSigner(account, pub));
      const client = new x402Client().register(NETWORK, scheme);
      client.setSpendControls({
        allowedAssets: [{ network: NETWORK, asset: usdc, maxAmountPerPayment: "100000" }],
      });
      return { account, scheme, pay: wrapFetchWithPayment(fetch, client) };
    }));
    const direct = await timed(buyers.map(() =>
      Array.from({ length: CALLS }, () => async () => {
        const r = await fetch(upstreamUrl);
        await r.body?.cancel();
        return r.ok;
      })
    ));
    const paid = await timed(
      buyers.map(({ pay }) =>
        Array.from({ length: CALLS }, () => async () => {
          const r = await pay(resource);
          await r.body?.cancel();
          return r.status === 200;
        })
      ),
    );
    // The server's share: vouchers signed beforehand, one request per call (the channels are open).
    const offer = await fetch(resource);
    await offer.body?.cancel();
    const requirement = JSON.parse(atob(offer.headers.get("payment-required")!)).accepts
      .find((a: { scheme: string }) => a.scheme === "batch-settlement") as PaymentRequirements;
    const headers = await Promise.all(buyers.map(async ({ account, scheme }) => {
      const channelConfig = scheme.buildChannelConfig(requirement);
      const channelId = computeChannelId(channelConfig, NETWORK);
      const out: string[] = [];
      for (let i = 1; i <= CALLS; i++) {
        const max = String(BigInt(requirement.amount) * BigInt(CALLS + i));
        const voucher = await signVoucher(account, channelId, max, NETWORK);
        out.push(encodeHeader({
          x402Version: 2,
          accepted: requirement,
          payload: { type: "voucher", channelConfig, voucher },
        }));
      }
      return out;
    }));
    const presigned = await timed(headers.map((list) =>
      list.map((header) => async () => {
        const r = await fetch(resource, { headers: { "payment-signature": header } });
        await r.body?.cancel();
        return r.status === 200;
      })
    ));
    const [{ deposits, depositGas }] = await svc.db.sql`
      select count(*)::int as deposits, coalesce(sum(gas_used), 0)::bigint as deposit_gas
      from chain_transactions where intent_key like 'x402ch:deposit:%'`;
    const round = await claimRound(svc.deps);
    const receipts = await Promise.all(
      round.transactions.map((x) => pub.getTransactionReceipt({ hash: x.txHash as `0x${string}` })),
    );
    const gas = receipts.reduce((s, r) => s + r.gasUsed, 0n);
    const payments = round.transactions.reduce((s, x) => s + x.charges, 0);
    const channels = round.transactions.reduce((s, x) => s + x.channels, 0);
    console.log(
      `batch-settlement: ${BUYERS} buyers × ${CALLS} calls, @x402/evm client (402 + paid request ` +
        `per call), one deposit per channel, vouchers checked locally`,
    );
    console.log(fmt("upstream called directly", direct));
    console.log(fmt("GET /x402/{slug}, @x402/evm client", paid, direct));
    console.log(fmt("GET /x402/{slug}, pre-signed vouchers", presigned, direct));
    console.log(
      `channel deposits: ${deposits} transactions, ${
        depositGas / BigInt(deposits || 1)
      } gas each ` +
        `(once per channel)`,
    );
    console.log(
      `channel claims: ${round.transactions.length} transaction(s) for ${channels} channels and ` +
        `${payments} payments (receivers settled in it): ${gas} gas, ` +
        `${payments ? gas / BigInt(payments) : 0n} gas per payment, ` +
        `${channels ? gas / BigInt(channels) : 0n} per channel`,
    );
  } finally {
    await svc.close();
    await upstream.shutdown();
  }
}
