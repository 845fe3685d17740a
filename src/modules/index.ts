/**
 * The module list: every domain module declares its HTTP API, pages and jobs here once.
 * Adding a module is one entry.
 */
import type { Hono } from "hono";
import type { Deps } from "../deps.ts";
import type { JobDefinition } from "../queue/registry.ts";
import type { LogHandler } from "../chain/index.ts";
import { chainJobs } from "../chain/jobs.ts";
import { explorerPages } from "../chain/explorer.pages.tsx";

export interface AppModule {
  name: string;
  // deno-lint-ignore no-explicit-any
  api?: (deps: Deps) => Hono<any>;
  // deno-lint-ignore no-explicit-any
  pages?: (deps: Deps) => Hono<any>;
  // deno-lint-ignore no-explicit-any
  jobs?: JobDefinition<any, Deps>[];
  /** Handlers for our contracts' logs, run by the chain module's watcher. */
  logHandlers?: (deps: Deps) => LogHandler[];
}

/** The chain module's own jobs (transaction recovery) and the local explorer pages. */
export const chainModule: AppModule = { name: "chain", jobs: chainJobs, pages: explorerPages };

export const modules: AppModule[] = [chainModule];

export function allJobs(list: AppModule[] = modules): JobDefinition<unknown, Deps>[] {
  return list.flatMap((m) => m.jobs ?? []) as JobDefinition<unknown, Deps>[];
}
