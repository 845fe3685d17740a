/**
 * `deno task bench [section ...]`: measured numbers, each beside a baseline taken in the same
 * run, printed as a ratio. Sections: chain, webhooks, payments, abuse, streams, bridge, payroll, x402,
 * scale, live.
 *
 * Uses DATABASE_URL when set, otherwise an embedded PostgreSQL under .data/bench.
 */
import { startEmbeddedPostgres } from "../src/db/embedded.ts";
import { silentLogger } from "../src/log.ts";

const SECTIONS: Record<string, () => Promise<void>> = {
  chain: async () => (await import("./chain.bench.ts")).run(),
  webhooks: async () => (await import("./webhooks.bench.ts")).run(),
  payments: async () => (await import("./payments.bench.ts")).run(),
  abuse: async () => (await import("./abuse.bench.ts")).run(),
  streams: async () => (await import("./streams.bench.ts")).run(),
  bridge: async () => (await import("./bridge.bench.ts")).run(),
  payroll: async () => (await import("./payroll.bench.ts")).run(),
  x402: async () => (await import("./x402.bench.ts")).run(),
  scale: async () => (await import("./scale.bench.ts")).run(),
  live: async () => (await import("./live.bench.ts")).run(),
};

const wanted = Deno.args.length ? Deno.args : Object.keys(SECTIONS);
for (const w of wanted) {
  if (!SECTIONS[w]) {
    console.error(`unknown section "${w}"; known: ${Object.keys(SECTIONS).join(", ")}`);
    Deno.exit(2);
  }
}

let stop: (() => Promise<void>) | undefined;
if (!Deno.env.get("DATABASE_URL") && !Deno.env.get("TEST_DATABASE_URL")) {
  const db = await startEmbeddedPostgres({ dataDir: "./.data/bench", log: silentLogger });
  Deno.env.set("TEST_DATABASE_URL", db.adminUrl);
  stop = db.stop;
}
console.log(
  `bench on ${Deno.build.os}/${Deno.build.arch}, deno ${Deno.version.deno}, ${navigator.hardwareConcurrency} cpus`,
);
try {
  for (const w of wanted) {
    console.log(`\n== ${w} ==`);
    await SECTIONS[w]();
  }
} finally {
  await stop?.();
}
