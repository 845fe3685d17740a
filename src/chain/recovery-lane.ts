/**
 * libsecp256k1's recoveries on a worker thread, handed over through shared memory: a paid call's
 * signature check (~80 µs of recovery and hashing) leaves the event loop for ~8 µs of writing a
 * slot and waking the worker, where a message each way (authorization-threads.ts's path for
 * machines without the binding) cost ~65 µs. One worker: its recoveries keep up with more paid
 * calls than the event loop can serve.
 *
 * The shared buffer holds SLOTS slots of 128 bytes (digest 32, r ‖ s 64, y parity 1, the expected
 * signer 20) and, after them, one Int32 per slot for its state (FREE → ASKED by this thread →
 * YES or NO by the worker), a doorbell the worker waits on, a stop flag, and a ready flag the
 * worker sets once it has loaded. This thread waits on a slot's state with `Atomics.waitAsync`,
 * so the answer arrives as a task of the event loop. Where the lane cannot answer (no worker, not
 * loaded yet, every slot taken, the lane stopped with checks in flight) the recovery runs inline:
 * the same answer, on this thread. The worker takes ~300 ms to load; a check asked meanwhile
 * (the first paid calls after a start) is answered at once rather than after it.
 */
import { recoversTo, type RecoveryJob } from "./authorization-check.ts";

export const SLOTS = 256;
const SLOT_BYTES = 128;
export const FREE = 0;
export const ASKED = 1;
export const YES = 2;
export const NO = 3;
/** Set by this thread on checks it answered itself (the lane stopped under them). */
const ABANDONED = 4;
/**
 * Index of the doorbell (a counter the worker waits on), of the stop flag and of the ready flag
 * (set to 1 by the worker when it has loaded) in the states.
 */
export const DOORBELL = SLOTS;
export const STOP = SLOTS + 1;
export const READY = SLOTS + 2;
const STATES = SLOTS + 3;

export const layout = { slots: SLOTS, slotBytes: SLOT_BYTES, stateOffset: SLOTS * SLOT_BYTES };

interface Lane {
  worker: Worker;
  data: Uint8Array;
  states: Int32Array;
  free: number[];
  /** The job in each taken slot, to answer inline if the lane stops under it. */
  jobs: (RecoveryJob | null)[];
}

let lane: Lane | null = null;
/** A worker failed to load: every check inline from then on. */
let broken = false;

/** How checks were answered since the process started: by the worker, or inline. */
export const recoveryLaneCounts = { worker: 0, inline: 0 };

function inline(job: RecoveryJob): boolean {
  recoveryLaneCounts.inline++;
  return recoversTo(job);
}

function start(): Lane | null {
  if (broken) return null;
  try {
    const buffer = new SharedArrayBuffer(layout.stateOffset + 4 * STATES);
    const worker = new Worker(new URL("./recovery-lane.worker.ts", import.meta.url), {
      type: "module",
    });
    const started: Lane = {
      worker,
      data: new Uint8Array(buffer, 0, layout.stateOffset),
      states: new Int32Array(buffer, layout.stateOffset, STATES),
      free: Array.from({ length: SLOTS }, (_, i) => SLOTS - 1 - i),
      jobs: new Array(SLOTS).fill(null),
    };
    worker.onerror = (e) => {
      // A worker that cannot run (its module failed to load): recover inline from now on.
      e.preventDefault();
      broken = true;
      stopRecoveryLane();
    };
    worker.postMessage(buffer);
    return started;
  } catch {
    broken = true;
    return null;
  }
}

/** Whether libsecp256k1 recovers `job.from`, on the lane's worker when it can take the job. */
export function recoversToOffThread(job: RecoveryJob): Promise<boolean> {
  lane ??= start();
  const l = lane;
  if (!l || Atomics.load(l.states, READY) !== 1) return Promise.resolve(inline(job));
  const slot = l.free.pop();
  if (slot === undefined) return Promise.resolve(inline(job));
  const at = slot * SLOT_BYTES;
  l.data.set(job.digest, at);
  l.data.set(job.rs, at + 32);
  l.data[at + 96] = job.yParity;
  l.data.set(job.from, at + 97);
  l.jobs[slot] = job;
  Atomics.store(l.states, slot, ASKED);
  Atomics.add(l.states, DOORBELL, 1);
  Atomics.notify(l.states, DOORBELL);
  const settle = (): boolean | Promise<boolean> => {
    const state = Atomics.load(l.states, slot);
    if (state === ASKED) {
      // Not answered yet (the first look, or a wake-up that was not the answer): wait for it.
      const waited = Atomics.waitAsync(l.states, slot, ASKED);
      return waited.async ? waited.value.then(settle) : settle();
    }
    if (state === ABANDONED) return inline(job); // the lane stopped; its slots are not reused
    l.jobs[slot] = null;
    Atomics.store(l.states, slot, FREE);
    l.free.push(slot);
    recoveryLaneCounts.worker++;
    return state === YES;
  };
  return Promise.resolve(settle());
}

/**
 * Starts the lane if it is not running and resolves once its worker has loaded (true), or false
 * where there is no worker (it failed to start) or the lane was stopped meanwhile.
 */
export async function recoveryLaneReady(): Promise<boolean> {
  lane ??= start();
  const l = lane;
  if (!l) return false;
  while (lane === l && Atomics.load(l.states, READY) !== 1) {
    const waited = Atomics.waitAsync(l.states, READY, 0, 100);
    if (waited.async) await waited.value;
  }
  return lane === l;
}

/**
 * Stops the worker (a service stopping; it would keep the process alive). Checks in flight are
 * answered inline; the next check starts a new lane.
 */
export function stopRecoveryLane(): void {
  const l = lane;
  lane = null;
  if (!l) return;
  Atomics.store(l.states, STOP, 1);
  Atomics.add(l.states, DOORBELL, 1);
  Atomics.notify(l.states, DOORBELL);
  l.worker.terminate();
  for (let slot = 0; slot < SLOTS; slot++) {
    if (l.jobs[slot] === null) continue;
    // Wakes the waiter of a job the worker did not answer; an answered one keeps its answer.
    if (Atomics.compareExchange(l.states, slot, ASKED, ABANDONED) === ASKED) {
      Atomics.notify(l.states, slot);
    }
  }
}
