/**
 * The stop sequence of a service, bounded: steps run in the reverse order of the start, each
 * within what is left of SHUTDOWN_TIMEOUT_MS. A step that does not finish in time (a request that
 * never ends, a pool wedged by a stuck transaction) is abandoned and the stop is *forced*: the
 * remaining steps run in their forced form (the pool is ended at once, local chain nodes are
 * killed) within a short grace, so the process always ends, and says so (main.ts exits 1).
 */
import type { Logger } from "./log.ts";

/** After the timeout, how long the forced steps (end the pool, kill nodes) get in all. */
export const FORCE_GRACE_MS = 5_000;

export interface StepContext {
  /** The stop already ran out of time: act at once (end, kill), do not wait for work. */
  forced: boolean;
  /** Milliseconds this step may take (it is abandoned after them). */
  budgetMs: number;
}

export interface StepOptions {
  /**
   * Once the stop is forced, how long this step's forced form may take; 0 (the default): the
   * step only waits for work to finish, and is skipped when forced.
   */
  forcedMs?: number;
  /** Runs when the step itself ran out of time (the step keeps running in the background). */
  onTimeout?: () => Promise<void>;
}

interface Step extends StepOptions {
  name: string;
  run: (ctx: StepContext) => Promise<void>;
}

export interface StopResult {
  forced: boolean;
  /** The steps that did not finish in time. */
  abandoned: string[];
}

export class StopSequence {
  #steps: Step[] = [];

  /** Adds a step; steps run last-added first. */
  add(name: string, run: (ctx: StepContext) => Promise<void>, opts: StepOptions = {}): void {
    this.#steps.push({ name, run, ...opts });
  }

  async run(timeoutMs: number, log: Logger): Promise<StopResult> {
    const deadline = Date.now() + timeoutMs;
    const hardDeadline = deadline + FORCE_GRACE_MS;
    const abandoned: string[] = [];
    let forced = false;
    for (const step of this.#steps.splice(0).reverse()) {
      if (!forced && Date.now() >= deadline) forced = true;
      if (forced && !step.forcedMs) {
        abandoned.push(step.name);
        continue;
      }
      const budgetMs = forced
        ? Math.min(step.forcedMs!, Math.max(hardDeadline - Date.now(), 250))
        : deadline - Date.now();
      const outcome = await within(
        step.run({ forced, budgetMs }).then(() => "done" as const, (e) => e as Error),
        Math.max(budgetMs, 0),
      );
      if (outcome === "done") continue;
      if (outcome === "timeout") {
        abandoned.push(step.name);
        if (!forced) {
          log.warn("shutdown timed out; abandoning work still in flight", {
            step: step.name,
            timeoutMs,
          });
        }
        forced = true;
        if (step.onTimeout) {
          await within(
            step.onTimeout().catch((e) =>
              log.error("shutdown step failed", { step: step.name, error: e })
            ),
            Math.min(step.forcedMs || 1000, Math.max(hardDeadline - Date.now(), 250)),
          );
        }
      } else log.error("shutdown step failed", { step: step.name, error: outcome });
    }
    return { forced, abandoned };
  }
}

function within<T>(p: Promise<T>, ms: number): Promise<T | "timeout"> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}
