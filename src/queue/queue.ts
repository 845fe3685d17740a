/**
 * pg-boss in the application database. Jobs are sent inside the caller's postgres.js transaction
 * when one is given, so a rolled-back write enqueues nothing.
 */
import { PgBoss, type SendOptions } from "pg-boss";
import type { Db } from "../db/client.ts";
import type { Logger } from "../log.ts";
import type { JobDefinition, JobDescriptor } from "./registry.ts";

export interface SendJobOptions {
  /** Enqueue inside this transaction. */
  tx?: Db;
  startAfter?: Date | number;
  singletonKey?: string;
  /** A stable id makes sending twice a no-op. */
  id?: string;
  retryLimit?: number;
  priority?: number;
  /** The job's group (a tenant): a worker's `groupConcurrency` bounds each group's jobs at once. */
  group?: string;
}

// deno-lint-ignore no-explicit-any
type AnyJob<T = any, D = any> = JobDefinition<T, D>;

export interface Queue {
  readonly boss: PgBoss;
  send<T>(job: JobDescriptor<T> | string, data: T, opts?: SendJobOptions): Promise<string | null>;
  /**
   * The queue's jobs waiting to start more than `withinMs` from now start now; how many. For a
   * round queued by a process with a longer interval than this one's (a `stately` queue keeps
   * that one and drops every newer send, the cron's too, until it has run).
   */
  hasten(job: JobDescriptor | string, withinMs: number): Promise<number>;
  /**
   * Creates the queues of these jobs; with `work`, also starts their workers; with `crons`
   * (default true), schedules the jobs that have one (a test that runs the rounds itself turns
   * them off: a minute's turn would run one beside it).
   */
  register<D>(
    // deno-lint-ignore no-explicit-any
    jobs: AnyJob<any, D>[],
    deps: D,
    opts?: { work?: boolean; crons?: boolean },
  ): Promise<void>;
  /** `graceful` (default): waits up to `timeoutMs` for jobs in flight. */
  stop(opts?: { timeoutMs?: number; graceful?: boolean }): Promise<void>;
}

export const QUEUE_SCHEMA = "pgboss";

/** The adapter pg-boss needs to run its statements on a postgres.js transaction. */
export function txAdapter(tx: Db) {
  return {
    executeSql: async (text: string, values?: unknown[]) => {
      // deno-lint-ignore no-explicit-any
      const rows = await tx.unsafe(text, (values ?? []) as any[]);
      return { rows: [...rows] };
    },
  };
}

export interface QueueStartOptions {
  url: string;
  log: Logger;
  max?: number;
  schema?: string;
  /**
   * Every queue's jobs carry a heartbeat of this many seconds (pg-boss, at least 10): the worker
   * running a job refreshes it every half of this, and the supervisor fails (retries) a job whose
   * heartbeat stopped, so a job in flight when its process died runs again this long after, not
   * at its expiry. Default 15.
   */
  heartbeatSeconds?: number;
  /** How often the supervisor looks for jobs whose heartbeat stopped or that expired. Default 10. */
  superviseSeconds?: number;
}

export async function startQueue(opts: QueueStartOptions): Promise<Queue> {
  const log = opts.log.child({ component: "queue" });
  const schema = opts.schema ?? QUEUE_SCHEMA;
  const heartbeatSeconds = opts.heartbeatSeconds ?? 15;
  const superviseSeconds = opts.superviseSeconds ?? 10;
  const boss = new PgBoss({
    connectionString: opts.url,
    schema,
    max: opts.max ?? 5,
    application_name: "settlement-queue",
    useListenNotify: true,
    // A pass claims each queue for monitorIntervalSeconds: both set how often it runs.
    superviseIntervalSeconds: superviseSeconds,
    monitorIntervalSeconds: superviseSeconds,
  });
  boss.on("error", (e: unknown) => log.error("queue error", { error: e }));
  await boss.start();
  const schemas = new Map<string, JobDescriptor>();

  const queue: Queue = {
    boss,
    async send(job, data, o = {}) {
      const name = typeof job === "string" ? job : job.name;
      const def = typeof job === "string" ? schemas.get(name) : job;
      const payload = def ? def.schema.parse(data) : data;
      const options: SendOptions = {};
      if (o.tx) options.db = txAdapter(o.tx);
      if (o.startAfter !== undefined) {
        options.startAfter = o.startAfter instanceof Date
          ? o.startAfter
          : Math.max(0, Math.ceil(o.startAfter / 1000));
      }
      if (o.singletonKey) options.singletonKey = o.singletonKey;
      if (o.id) options.id = o.id;
      if (o.retryLimit !== undefined) options.retryLimit = o.retryLimit;
      if (o.priority !== undefined) options.priority = o.priority;
      if (o.group !== undefined) options.group = { id: o.group };
      return await boss.send(name, payload as object, options);
    },
    async hasten(job, withinMs) {
      const name = typeof job === "string" ? job : job.name;
      const { rows } = await boss.getDb().executeSql(
        `update ${schema}.job set start_after = now()
         where name = $1 and state in ('created', 'retry')
           and start_after > now() + make_interval(secs => $2::float8 / 1000)
         returning id`,
        [name, withinMs],
      );
      return rows.length;
    },
    async register(jobs, deps, { work = true, crons = true } = {}) {
      for (const def of jobs) {
        schemas.set(def.name, def);
        const { policy, ...queueOptions } = def.queue ?? {};
        const options = { notify: true, heartbeatSeconds, ...queueOptions };
        await boss.createQueue(def.name, { policy, ...options });
        // A queue created by an earlier version keeps its options until told otherwise.
        await boss.updateQueue(def.name, options);
        if (def.cron && crons) await boss.schedule(def.name, def.cron, {}, { tz: "UTC" });
        if (!work) continue;
        // Batches of up to 10, run concurrently and settled one by one; a full batch makes the
        // worker fetch again at once (otherwise it waits for the next poll or notification).
        await boss.work<unknown>(
          def.name,
          {
            pollingIntervalSeconds: 1,
            // With NOTIFY on, pg-boss polls every 30 s by default; delayed jobs (retries,
            // expiries) need the poll, so keep it at a second.
            notifyPollingIntervalSeconds: 1,
            batchSize: 10,
            burstWhenBatchFull: true,
            perJobResults: true,
            ...def.work,
          },
          (batch) =>
            Promise.all(batch.map(async (job) => {
              try {
                const data = def.schema.parse(job.data ?? {});
                await def.handler(data, {
                  deps,
                  jobId: job.id,
                  retryCount: job.retryCount,
                  signal: job.signal,
                });
                return { id: job.id, status: "completed" as const };
              } catch (e) {
                log.error("job failed", {
                  job: def.name,
                  jobId: job.id,
                  retryCount: job.retryCount,
                  error: e,
                });
                return { id: job.id, status: "failed" as const, output: { message: String(e) } };
              }
            })),
        );
      }
    },
    async stop({ timeoutMs = 10_000, graceful = true } = {}) {
      await boss.stop({ graceful, timeout: timeoutMs, close: true });
      log.info("queue stopped");
    },
  };
  return queue;
}
