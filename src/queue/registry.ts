/**
 * The job registry: each module declares its jobs as data (name, payload schema, handler,
 * queue and worker options) in its `<name>.jobs.ts`, and `src/queue/jobs.ts` lists them all.
 */
import { z } from "zod";
import type { QueueOptions, WorkOptions } from "pg-boss";

export interface JobContext<D> {
  deps: D;
  jobId: string;
  /** 0 on the first attempt. */
  retryCount: number;
  signal: AbortSignal;
}

export interface JobDefinition<T = unknown, D = unknown> {
  name: string;
  schema: z.ZodType<T>;
  handler: (data: T, ctx: JobContext<D>) => Promise<void>;
  /** pg-boss queue options: retryLimit, retryDelay, expireInSeconds, ... */
  queue?: QueueOptions & { policy?: "standard" | "short" | "singleton" | "stately" };
  /** pg-boss worker options: localConcurrency, batchSize, polling. */
  work?: Pick<WorkOptions, "localConcurrency" | "pollingIntervalSeconds" | "batchSize">;
  /** Cron expression for a recurring job (UTC). */
  cron?: string;
}

/** The payload of a recurring job, which carries no data. */
export type NoData = Record<string, never>;
export const noData = z.object({}) as unknown as z.ZodType<NoData>;

/** A recurring job (UTC cron) with no payload: a sweep, a cleanup. */
export function defineCron<D>(
  def: Omit<JobDefinition<NoData, D>, "schema" | "cron" | "handler"> & {
    cron: string;
    handler: (ctx: JobContext<D>) => Promise<void>;
  },
): JobDefinition<NoData, D> {
  return defineJob<NoData, D>({
    ...def,
    schema: noData,
    queue: { policy: "singleton", retryLimit: 0, ...def.queue },
    handler: (_data, ctx) => def.handler(ctx),
  });
}

export function defineJob<T, D>(def: JobDefinition<T, D>): JobDefinition<T, D> {
  if (!/^[a-z][a-z0-9_.-]*$/.test(def.name)) throw new Error(`Bad job name: ${def.name}`);
  return def;
}
