/**
 * Chain: USDC transfers per second on a local anvil through our sender (intent, nonce lock,
 * bookkeeping, receipt polling), sequential and pipelined from one wallet, and relayed calls
 * spread over the relayer pool; against raw viem sendTransaction without bookkeeping (one
 * wallet, explicit nonces) as the baseline, measured in the same run. After the run, every
 * sender's recorded nonces are checked for gaps.
 */
import { createWalletClient, encodeFunctionData, type Hex, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { createTestDatabase } from "../tests/helpers/db.ts";
import { startTestChain } from "../tests/helpers/chain.ts";
import { ANVIL_KEYS } from "../tests/helpers/anvil.ts";
import { TestUSDC } from "../src/chain/contracts/artifacts/index.ts";
import { type Measure, measure, perSecond, row } from "./report.ts";
import { loadavg } from "./payments.bench.ts";
import { createSql } from "../src/db/client.ts";

const N = Number(Deno.env.get("BENCH_TRANSFERS") ?? "200");
const USDC = 1_000_000n;

export async function run() {
  const db = await createTestDatabase();
  // The service's default pool (DATABASE_POOL_MAX=10), not the tests' smaller one.
  const sql = createSql(db.url, { max: 10 });
  const chain = await startTestChain(sql);
  try {
    const rt = chain.runtime("testnet");
    const usdc = chain.contract("testnet", "TestUSDC");
    const ours = await chain.createWallet("test");
    // The baseline signs with one of anvil's funded dev accounts, outside our keystore.
    const rawAccount = privateKeyToAccount(ANVIL_KEYS[1]);
    const to = (await chain.createWallet("test")).address;
    await chain.grantGas("testnet", ours.address, 10n ** 19n);
    for (const address of [ours.address, rawAccount.address]) {
      await chain.mintUsdc({ profile: "testnet", to: address, amount: 1_000_000n * USDC });
    }
    const data = encodeFunctionData({
      abi: TestUSDC.abi,
      functionName: "transfer",
      args: [to, USDC],
    });

    // Baseline: viem wallet client, local account, explicit nonces, no database.
    const wallet = createWalletClient({
      account: rawAccount,
      chain: rt.viemChain,
      transport: http(rt.rpcUrl),
    });
    let nonce = await rt.client.getTransactionCount({ address: rawAccount.address });
    const gas = 60_000n;
    const waitAll = async (hashes: Hex[]) => {
      for (const h of hashes) {
        while (!(await rt.client.getTransactionReceipt({ hash: h }).catch(() => null))) {
          await new Promise((r) => setTimeout(r, 5));
        }
      }
    };
    const rawSeq = await measure("raw viem sendTransaction, sequential", N, async () => {
      for (let i = 0; i < N; i++) {
        const h = await wallet.sendTransaction({ to: usdc, data, gas, nonce: nonce++ });
        await waitAll([h]);
      }
    });
    const send = (i: number, tag: string) =>
      chain.send({
        profile: "testnet",
        from: { walletId: ours.id },
        to: usdc,
        data,
        gas,
        intentKey: `bench:${tag}:${i}`,
      });
    const seq = await measure("our sender, sequential (send + wait)", N, async () => {
      for (let i = 0; i < N; i++) await send(i, "seq");
    });
    // Relayed work (what gasless checkout relays send): intents spread over the relayer pool,
    // each relayer topped up from the operator on first use (warmed up before timing).
    const relayed = (i: number, tag: string) =>
      chain.send({
        profile: "testnet",
        from: "relayer",
        to: usdc,
        data: encodeFunctionData({ abi: TestUSDC.abi, functionName: "transfer", args: [to, 0n] }),
        gas,
        intentKey: `bench:${tag}:${i}`,
      });
    const pool = rt.relayers.length;
    for (let i = 0; i < pool * 8; i++) await relayed(i, "relay-warm");
    // Pipelined: raw, ours and the pool alternate over rounds, so a neighbour's load on this
    // shared machine falls on all three; the ratios are of the summed times.
    const ROUNDS = Number(Deno.env.get("BENCH_ROUNDS") ?? "3");
    const rounds: Array<Record<"raw" | "pipe" | "relay", Measure>> = [];
    for (let r = 0; r < ROUNDS; r++) {
      const raw = await measure("raw viem sendTransaction, pipelined", N, async () => {
        const hashes = await Promise.all(
          Array.from(
            { length: N },
            () => wallet.sendTransaction({ to: usdc, data, gas, nonce: nonce++ }),
          ),
        );
        await waitAll(hashes);
      });
      const pipe = await measure("our sender, one wallet, pipelined", N, async () => {
        await Promise.all(Array.from({ length: N }, (_, i) => send(i, `pipe${r}`)));
      });
      const relay = await measure(`relayer pool (${pool} wallets), pipelined`, N, async () => {
        await Promise.all(Array.from({ length: N }, (_, i) => relayed(i, `relay${r}`)));
      });
      rounds.push({ raw, pipe, relay });
    }
    const total = (k: "raw" | "pipe" | "relay"): Measure => ({
      name: `${rounds[0][k].name} (${ROUNDS} rounds)`,
      ops: rounds.reduce((a, r) => a + r[k].ops, 0),
      ms: rounds.reduce((a, r) => a + r[k].ms, 0),
    });
    const rawPipe = total("raw");
    const pipe = total("pipe");
    const relay = total("relay");

    // No sender may have left a gap: each address's live nonces are one contiguous run.
    const gaps = await db.sql<{ fromAddress: string; n: number; lo: bigint; hi: bigint }[]>`
      select from_address, count(*)::int as n, min(nonce) as lo, max(nonce) as hi
      from chain_transactions where status <> 'failed' group by from_address
      having max(nonce) - min(nonce) + 1 <> count(*)`;
    const used = await db.sql<{ n: number }[]>`
      select count(distinct from_address)::int as n from chain_transactions
      where intent_key like 'bench:relay%' and intent_key not like 'bench:relay-warm:%'`;

    console.log(`${N} transfers per measurement; local anvil (automine); ${loadavg()}`);
    for (const [i, r] of rounds.entries()) {
      console.log(
        `round ${i + 1}: raw ${perSecond(r.raw).toFixed(0)} /s, ours ${
          perSecond(r.pipe).toFixed(0)
        } /s (${(perSecond(r.pipe) / perSecond(r.raw)).toFixed(2)}×), pool ${
          perSecond(r.relay).toFixed(0)
        } /s (${(perSecond(r.relay) / perSecond(r.raw)).toFixed(2)}×)`,
      );
    }
    console.log(row(rawSeq));
    console.log(row(seq, rawSeq));
    console.log(row(rawPipe));
    console.log(row(pipe, rawPipe));
    console.log(row(relay, rawPipe));
    console.log(`relayed transfers went out from ${used[0].n} relayer wallets`);
    console.log(
      gaps.length ? `NONCE GAPS: ${JSON.stringify(gaps)}` : "nonce gaps: none (every sender)",
    );
  } finally {
    await chain.stop();
    await sql.end();
    await db.drop();
  }
}
