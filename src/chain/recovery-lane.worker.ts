/**
 * The worker side of recovery-lane.ts: says it is ready, waits on the doorbell, answers every
 * slot asked of it with libsecp256k1 (authorization-check.ts `recoversTo`), and wakes the slot's
 * waiter.
 */
/// <reference lib="deno.worker" />
import { recoversTo } from "./authorization-check.ts";
import { ASKED, DOORBELL, layout, NO, READY, STOP, YES } from "./recovery-lane.ts";

self.onmessage = (e: MessageEvent<SharedArrayBuffer>) => {
  const data = new Uint8Array(e.data, 0, layout.stateOffset);
  const states = new Int32Array(e.data, layout.stateOffset, READY + 1);
  // Loaded (this module and libsecp256k1's binding): checks may come here from now on.
  Atomics.store(states, READY, 1);
  Atomics.notify(states, READY);
  let rung = Atomics.load(states, DOORBELL);
  for (;;) {
    let answered = true;
    while (answered) {
      answered = false;
      for (let slot = 0; slot < layout.slots; slot++) {
        if (Atomics.load(states, slot) !== ASKED) continue;
        const at = slot * layout.slotBytes;
        const ok = recoversTo({
          digest: data.slice(at, at + 32),
          rs: data.slice(at + 32, at + 96),
          yParity: data[at + 96],
          from: data.slice(at + 97, at + 117),
        });
        // Only an asked slot is answered: the main thread may have taken it back (stopping).
        if (Atomics.compareExchange(states, slot, ASKED, ok ? YES : NO) === ASKED) {
          Atomics.notify(states, slot);
        }
        answered = true;
      }
    }
    if (Atomics.load(states, STOP) === 1) break;
    // Sleeps until rung again (or a second passes: the stop flag is looked at again).
    Atomics.wait(states, DOORBELL, rung, 1000);
    rung = Atomics.load(states, DOORBELL);
  }
  self.close();
};
