/**
 * The job registry. A job has two halves: its descriptor (name, payload schema, queue options),
 * which is all a sender needs and lives in the module's `<name>.queues.ts`, and its definition
 * (descriptor + handler + worker options) in `<name>.jobs.ts`. A service enqueues with the
 * descriptor and so never imports the handlers that call back into it. `src/modules/index.ts`
 * lists every module's definitions.
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

/** What a sender needs to enqueue a job: the queue's name, payload schema and options. */
export interface JobDescriptor<T = unknown> {
  name: string;
  schema: z.ZodType<T>;
  /** pg-boss queue options: retryLimit, retryDelay, expireInSeconds, ... */
  queue?: QueueOptions & { policy?: "standard" | "short" | "singleton" | "stately" };
}

export interface JobDefinition<T = unknown, D = unknown> extends JobDescriptor<T> {
  handler: (data: T, ctx: JobContext<D>) => Promise<void>;
  /** pg-boss worker options: localConcurrency, batchSize, polling, a group's share. */
  work?: Pick<
    WorkOptions,
    | "localConcurrency"
    | "pollingIntervalSeconds"
    | "notifyPollingIntervalSeconds"
    | "batchSize"
    | "groupConcurrency"
  >;
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

/** A job's descriptor, for `<name>.queues.ts`; its handler joins it with `defineJob`. */
export function defineQueue<T>(descriptor: JobDescriptor<T>): JobDescriptor<T> {
  if (!/^[a-z][a-z0-9_.-]*$/.test(descriptor.name)) {
    throw new Error(`Bad job name: ${descriptor.name}`);
  }
  return descriptor;
}

export function defineJob<T, D>(def: JobDefinition<T, D>): JobDefinition<T, D> {
  defineQueue(def);
  return def;
}
