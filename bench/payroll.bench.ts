/**
 * Payroll: 1,000 recipients on the local anvil, three ways in one run:
 *   1. our batch, end to end through POST /api/payroll/run (BatchPayout chunks, pipelined),
 *   2. raw viem single USDC transfers, signed locally with explicit nonces and all sent before
 *      any receipt is awaited (pipelined),
 *   3. a naive loop: send one transfer, wait for its receipt, send the next.
 * Each as wall time and a ratio to ours, gas per recipient (receipts' gasUsed), and the peak RSS
 * of this process (the service runs in it) while each ran. Then the largest batch the API takes
 * (5,000 labelled recipients), ours only: time to COMPLETED and the answer's size.
 */
import {
  createPublicClient,
  createWalletClient,
  defineChain,
  encodeFunctionData,
  type Hex,
  http,
} from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { startTestService } from "../tests/helpers/service.ts";
import { createMerchant } from "../tests/helpers/accounts.ts";
import { ANVIL_KEYS } from "../tests/helpers/anvil.ts";
import { TestUSDC } from "../src/chain/contracts/artifacts/index.ts";

const N = Number(Deno.env.get("BENCH_RECIPIENTS") ?? "1000");
const P = "production";
const AMOUNT = 10_000n; // 0.01 USDC each

/** Peak RSS while `fn` runs, sampled every 20 ms. */
async function withPeak<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number; peak: number }> {
  let peak = Deno.memoryUsage().rss;
  const timer = setInterval(() => (peak = Math.max(peak, Deno.memoryUsage().rss)), 20);
  const t0 = performance.now();
  try {
    const value = await fn();
    return { value, ms: performance.now() - t0, peak: Math.max(peak, Deno.memoryUsage().rss) };
  } finally {
    clearInterval(timer);
  }
}

const fresh = (n: number) =>
  Array.from({ length: n }, () => privateKeyToAccount(generatePrivateKey()).address);
const mib = (b: number) => `${(b / 1024 / 1024).toFixed(0)} MiB`;

export async function run() {
  const svc = await startTestService({ env: { RATE_LIMITS: "off", PAYROLL_WAIT_MS: "120000" } });
  try {
    const chain = svc.deps.chain;
    const rt = chain.runtime(P);
    const usdc = chain.contract(P, "TestUSDC");
    const local = defineChain({
      id: rt.chainId,
      name: "local",
      nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
      rpcUrls: { default: { http: [rt.rpcUrl] } },
    });
    const pub = createPublicClient({ chain: local, transport: http(rt.rpcUrl) });
    const m = await createMerchant(svc);
    await chain.mintUsdc({ profile: P, to: m.walletAddress! as `0x${string}`, amount: 10n ** 12n });

    // 1. Our batch through the API.
    const ours = await withPeak(async () => {
      const res = await fetch(`${svc.baseUrl}/api/payroll/run`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": m.apiKey },
        body: JSON.stringify({
          recipients: fresh(N).map((recipientSCA) => ({ recipientSCA, amount: "0.01" })),
        }),
      });
      const body = await res.json();
      if (res.status !== 200 || body.status !== "COMPLETED") {
        throw new Error(`payroll run: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
      }
      return body.batchRef as string;
    });
    const txs = await svc.db.sql<{ gasUsed: bigint; intentKey: string }[]>`
      select gas_used, intent_key from chain_transactions
      where intent_key like ${`payroll:${ours.value}:%`} or intent_key like 'payroll-permit:%'`;
    const oursGas = txs.reduce((s, t) => s + BigInt(t.gasUsed), 0n);
    const chunkTxs = txs.filter((t) => t.intentKey.startsWith("payroll:")).length;

    // The raw senders: two funded anvil accounts with USDC.
    const senders = [ANVIL_KEYS[2], ANVIL_KEYS[3]].map((k) => privateKeyToAccount(k as Hex));
    for (const s of senders) {
      await chain.mintUsdc({ profile: P, to: s.address, amount: 10n ** 12n });
    }
    const transfer = (to: `0x${string}`) =>
      encodeFunctionData({ abi: TestUSDC.abi, functionName: "transfer", args: [to, AMOUNT] });
    const receipts = async (hashes: Hex[]) => {
      let gas = 0n;
      for (const hash of hashes) {
        for (let i = 0;; i++) {
          const r = await pub.getTransactionReceipt({ hash }).catch(() => null);
          if (r) {
            if (r.status !== "success") throw new Error(`transfer ${hash} reverted`);
            gas += r.gasUsed;
            break;
          }
          if (i > 2000) throw new Error(`no receipt for ${hash}`);
          await new Promise((res) => setTimeout(res, 10));
        }
      }
      return gas;
    };

    // 2. Pipelined single transfers with explicit nonces.
    const pipelined = await withPeak(async () => {
      const account = senders[0];
      const nonce = await pub.getTransactionCount({
        address: account.address,
        blockTag: "pending",
      });
      const fees = await pub.estimateFeesPerGas();
      const raws = await Promise.all(
        fresh(N).map((to, i) =>
          account.signTransaction({
            chainId: rt.chainId,
            type: "eip1559",
            nonce: nonce + i,
            to: usdc,
            data: transfer(to),
            gas: 80_000n,
            maxFeePerGas: fees.maxFeePerGas * 2n,
            maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
          })
        ),
      );
      const hashes: Hex[] = [];
      // In nonce order, without waiting for receipts (a node rejects a nonce gap).
      for (const raw of raws) {
        hashes.push(await pub.sendRawTransaction({ serializedTransaction: raw }));
      }
      return await receipts(hashes);
    });

    // 3. Naive: send, wait for the receipt, next.
    const naive = await withPeak(async () => {
      const wallet = createWalletClient({
        account: senders[1],
        chain: local,
        transport: http(rt.rpcUrl),
      });
      let gas = 0n;
      for (const to of fresh(N)) {
        const hash = await wallet.sendTransaction({ to: usdc, data: transfer(to) });
        gas += await receipts([hash]);
      }
      return gas;
    });

    const line = (name: string, r: { ms: number; peak: number }, gas: bigint, extra = "") =>
      console.log(
        `${name.padEnd(46)} ${(r.ms / 1000).toFixed(2).padStart(7)} s  ${
          (r.ms / ours.ms).toFixed(2).padStart(6)
        }× ours  ${String(gas / BigInt(N)).padStart(6)} gas/recipient  peak RSS ${
          mib(r.peak)
        }${extra}`,
      );
    console.log(`${N} recipients, 0.01 USDC each, local anvil (automine)`);
    line(
      "our batch via POST /api/payroll/run",
      ours,
      oursGas,
      `  (${chunkTxs} chunk transactions + the payer's one-time permit)`,
    );
    line("raw viem transfers, pipelined, explicit nonces", pipelined, pipelined.value);
    line("naive send-and-wait loop", naive, naive.value);

    const max = await withPeak(async () => {
      const res = await fetch(`${svc.baseUrl}/api/payroll/run`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": m.apiKey },
        body: JSON.stringify({
          recipients: fresh(5000).map((recipientSCA, i) => ({
            recipientSCA,
            amount: "0.01",
            label: `Employee ${i}`,
          })),
        }),
      });
      const text = await res.text();
      if (res.status !== 200 || JSON.parse(text).status !== "COMPLETED") {
        throw new Error(`payroll run (5,000): ${res.status} ${text.slice(0, 300)}`);
      }
      return text.length;
    });
    console.log(
      `${"our batch, 5,000 labelled recipients (the max)".padEnd(46)} ${
        (max.ms / 1000).toFixed(2).padStart(7)
      } s  answer ${(max.value / 1024).toFixed(0)} KiB  peak RSS ${mib(max.peak)}`,
    );
  } finally {
    await svc.close();
  }
}
