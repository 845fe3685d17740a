/**
 * Bridge: burn → mint on local chains (testnet + Base_Sepolia anvils), 20 transfers one after
 * another through the API and the pg-boss step jobs, p50/p99, and where the time goes: each
 * step's segment from the transfer's own timestamps (system clock), beside the same three steps
 * called directly in-process (no queue hops) for 5 more transfers.
 */
import { loadConfig } from "../src/config.ts";
import { systemClock } from "../src/clock.ts";
import { silentLogger } from "../src/log.ts";
import { startService } from "../src/service.ts";
import { testConfig } from "../tests/helpers/service.ts";
import { createTestDatabase } from "../tests/helpers/db.ts";
import { cookieFrom } from "../tests/helpers/accounts.ts";
import { attestStep, burnStep, mintStep } from "../src/modules/bridge/bridge.steps.ts";
import { percentile } from "./report.ts";

const N = Number(Deno.env.get("BENCH_BRIDGE_TRANSFERS") ?? "20");
const DIRECT = 5;
const SOURCE = "Base_Sepolia";
const RECIPIENT = "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4";

export async function run() {
  const db = await createTestDatabase();
  const base = testConfig({ DATABASE_URL: db.url, RATE_LIMITS: "off" });
  const config = loadConfig({
    APP_ENV: "test",
    PORT: String(base.PORT),
    HOST: "127.0.0.1",
    BASE_URL: base.BASE_URL,
    DATA_DIR: base.DATA_DIR,
    JWT_SECRET: base.JWT_SECRET!,
    WALLET_MASTER_KEY: base.WALLET_MASTER_KEY!,
    DATABASE_URL: db.url,
    RATE_LIMITS: "off",
    LOG_LEVEL: "error",
    CHAINS: "testnet",
    CHAIN_POLL_INTERVAL_MS: "50",
  });
  const svc = await startService(config, {
    log: silentLogger,
    clock: systemClock,
    persistChains: false,
  });
  const url = config.BASE_URL;
  try {
    const session = await fetch(`${url}/api/consumer/session`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    const cookie = cookieFrom(session.headers, "consumer_token")!;
    const wallet = (await session.json()).account.walletAddress as `0x${string}`;
    const t0 = performance.now();
    await svc.deps.chain.ensure(SOURCE);
    console.log(`${SOURCE} started on first use in ${(performance.now() - t0).toFixed(0)} ms`);
    await svc.deps.chain.faucet(SOURCE, wallet, 1_000_000_000n);

    const refs: string[] = [];
    const wall: number[] = [];
    for (let i = 0; i < N + 1; i++) {
      const s = performance.now();
      const res = await fetch(`${url}/api/cctp/transfer`, {
        method: "POST",
        headers: { "content-type": "application/json", cookie },
        body: JSON.stringify({
          fromChain: SOURCE,
          toChain: "Settle_Testnet",
          amount: "1",
          recipient: RECIPIENT,
        }),
      });
      const body = await res.json();
      if (res.status !== 202) throw new Error(`transfer: ${res.status} ${JSON.stringify(body)}`);
      for (;;) {
        const st = await (await fetch(
          `${url}/api/cctp/transfer/status?reference=${body.reference}`,
        )).json();
        if (st.status === "minted") break;
        if (st.status === "failed") throw new Error(`failed: ${st.error}`);
        await new Promise((r) => setTimeout(r, 5));
      }
      // The first one pays the wallet's gas top-up: a warm-up, not measured.
      if (i > 0) {
        refs.push(body.reference);
        wall.push(performance.now() - s);
      }
    }
    const rows = await svc.deps.sql<
      { createdAt: Date; burnedAt: Date; attestedAt: Date; mintedAt: Date }[]
    >`
      select created_at, burned_at, attested_at, minted_at from bridge_transfers
      where reference = any(${refs})`;
    const seg = (f: (r: typeof rows[number]) => number) => rows.map(f);
    const report = (name: string, v: number[]) =>
      console.log(
        `${name.padEnd(46)} p50 ${percentile(v, 50).toFixed(1).padStart(7)} ms   p99 ${
          percentile(v, 99).toFixed(1).padStart(7)
        } ms`,
      );
    console.log(`\n${N} transfers of 1 USDC, ${SOURCE} → Settle_Testnet, one at a time:`);
    report("burn → mint (burned_at → minted_at)", seg((r) => +r.mintedAt - +r.burnedAt));
    report("request → minted (client wall clock)", wall);
    console.log("where the time goes:");
    report("  created → burned (job hop, approve + burn)", seg((r) => +r.burnedAt - +r.createdAt));
    report("  burned → attested (job hop, attester)", seg((r) => +r.attestedAt - +r.burnedAt));
    report(
      "  attested → minted (job hop, receiveMessage)",
      seg((r) => +r.mintedAt - +r.attestedAt),
    );

    // Gas of one transfer's transactions (receipts of the last measured one).
    const last = refs[refs.length - 1];
    const gas = await svc.deps.sql<{ intentKey: string; txHash: string; chainId: number }[]>`
      select intent_key, tx_hash, chain_id from chain_transactions
      where intent_key like ${`bridge:${last}:%`} order by created_at`;
    for (const g of gas) {
      const profile = g.chainId === svc.deps.chain.chainId("testnet") ? "testnet" : SOURCE;
      const r = await svc.deps.chain.runtime(profile).client.getTransactionReceipt({
        hash: g.txHash as `0x${string}`,
      });
      console.log(`gas ${g.intentKey.split(":").pop()!.padEnd(8)} ${r.gasUsed} (${profile})`);
    }

    // The same steps called directly: what the chain and the database cost without the queue.
    const direct: { burn: number; attest: number; mint: number }[] = [];
    for (let i = 0; i < DIRECT; i++) {
      const ref = await svc.deps.sql.begin(async (tx) => {
        const [row] = await tx<{ reference: string }[]>`
          insert into bridge_transfers (reference, direction, consumer_id, wallet_id, from_chain,
            to_chain, source_domain, destination_domain, amount, sender, recipient, status,
            created_at, updated_at)
          select 'bridge_direct_' || ${i}::text || '_' || md5(random()::text), 'inbound',
            consumer_id, wallet_id, from_chain, to_chain, source_domain, destination_domain,
            amount, sender, recipient, 'pending', now(), now()
          from bridge_transfers where reference = ${refs[0]}
          returning reference`;
        return row.reference;
      });
      const a = performance.now();
      await burnStep(svc.deps, ref);
      const b = performance.now();
      await attestStep(svc.deps, ref);
      const c = performance.now();
      await mintStep(svc.deps, ref);
      const d = performance.now();
      direct.push({ burn: b - a, attest: c - b, mint: d - c });
    }
    console.log(`the same steps called in-process (${DIRECT} transfers, no queue hops):`);
    report("  burn step (approve + burn, receipts)", direct.map((d) => d.burn));
    report("  attest step (read receipt, sign)", direct.map((d) => d.attest));
    report("  mint step (receiveMessage, receipt)", direct.map((d) => d.mint));
    report("  burn → mint in-process", direct.map((d) => d.attest + d.mint));
  } finally {
    await svc.stop("bench done");
    await db.drop();
  }
}
