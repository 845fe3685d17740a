/**
 * The "M charges" trigger of batched settlement: each process counts the charges it served since
 * its last round, and starts a round (x402.batched.settle.ts) when X402_BATCH_MAX are waiting,
 * without waiting for the X402_BATCH_SECONDS timer: it sends full batches only, and leaves the
 * rest to the next kick or the timer. One round at a time per process; rounds of
 * several processes are serialised per chain by the round's claim.
 */
import type { Deps } from "../../deps.ts";
import { settleAll } from "./x402.batched.settle.ts";

interface KickState {
  served: number;
  running: boolean;
}

const states = new WeakMap<object, KickState>();

export function kickSettlement(deps: Deps, served: number): void {
  let s = states.get(deps.sql);
  if (!s) states.set(deps.sql, s = { served: 0, running: false });
  s.served += served;
  if (s.running || s.served < deps.config.X402_BATCH_MAX) return;
  s.running = true;
  const state = s;
  const run = async () => {
    try {
      while (state.served >= deps.config.X402_BATCH_MAX) {
        state.served = 0;
        await settleAll(deps, { fullOnly: true });
      }
    } catch (e) {
      deps.log.warn("x402 batched settlement round failed", { error: e });
    } finally {
      state.running = false;
    }
  };
  void run();
}
