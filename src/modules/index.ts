/**
 * The module list: every domain module declares its HTTP API, pages and jobs here once.
 * Adding a module is one entry.
 */
import type { Hono } from "hono";
import type { Deps } from "../deps.ts";
import type { JobDefinition } from "../queue/registry.ts";

export interface AppModule {
  name: string;
  // deno-lint-ignore no-explicit-any
  api?: (deps: Deps) => Hono<any>;
  // deno-lint-ignore no-explicit-any
  pages?: (deps: Deps) => Hono<any>;
  // deno-lint-ignore no-explicit-any
  jobs?: JobDefinition<any, Deps>[];
}

export const modules: AppModule[] = [];

export function allJobs(list: AppModule[] = modules): JobDefinition<unknown, Deps>[] {
  return list.flatMap((m) => m.jobs ?? []) as JobDefinition<unknown, Deps>[];
}
