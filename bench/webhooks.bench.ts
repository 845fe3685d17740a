/**
 * Webhooks: deliveries per second through the whole engine (emit in a transaction → pg-boss →
 * signed HTTP POST to a local receiver → attempt bookkeeping), beside raw pg-boss send + an
 * empty handler at the same worker concurrency as the baseline.
 */
import { startTestService } from "../tests/helpers/service.ts";
import { startReceiver } from "../tests/helpers/receiver.ts";
import { emit } from "../src/modules/webhooks/webhooks.service.ts";
import { defineJob } from "../src/queue/registry.ts";
import { z } from "zod";
import { measure, row } from "./report.ts";

const N = Number(Deno.env.get("BENCH_WEBHOOKS") ?? "1000");

export async function run() {
  const svc = await startTestService({ env: { RATE_LIMITS: "off", CHAINS: "testnet" } });
  const receiver = startReceiver();
  try {
    const [m] = await svc.db.sql<{ id: string }[]>`
      insert into merchants (email, business_name, password_hash, verified_at)
      values ('bench@example.com', 'Bench', 'x', now()) returning id`;

    let processed = 0;
    const done = Promise.withResolvers<void>();
    const rawJob = defineJob({
      name: "bench.raw",
      schema: z.object({ i: z.number() }),
      work: { localConcurrency: 8 },
      handler: () => {
        if (++processed === N) done.resolve();
        return Promise.resolve();
      },
    });
    await svc.deps.queue.register([rawJob], svc.deps);
    const raw = await measure("raw pg-boss send + empty handler", N, async () => {
      for (let i = 0; i < N; i += 50) {
        await svc.db.sql.begin(async (tx) => {
          for (let j = i; j < Math.min(N, i + 50); j++) {
            await svc.deps.queue.send(rawJob, { i: j }, { tx });
          }
        });
      }
      await done.promise;
    });

    const engine = await measure("webhook engine: emit → deliver → record", N, async () => {
      for (let i = 0; i < N; i += 50) {
        await svc.db.sql.begin(async (tx) => {
          for (let j = i; j < Math.min(N, i + 50); j++) {
            await emit(svc.deps, tx, {
              merchantId: m.id,
              url: `${receiver.url}/bench`,
              event: "payment.settled",
              payload: {
                reference: `pay_ref_${j}`,
                amount: 1,
                currency: "USDC",
                status: "SUCCESS",
              },
            });
          }
        });
      }
      while (true) {
        const [{ n }] = await svc.db
          .sql`select count(*)::int as n from webhook_deliveries where status = 'delivered'`;
        if (n >= N) break;
        await new Promise((r) => setTimeout(r, 20));
      }
    });
    console.log(row(raw));
    console.log(row(engine, raw));
    console.log(`receiver got ${receiver.received.length} requests for ${N} deliveries`);
  } finally {
    await receiver.close();
    await svc.close();
  }
}
