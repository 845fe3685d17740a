/**
 * EOA signature checks for paid calls (authorization-check.ts). With libsecp256k1's binding the
 * digest is built here and the recovery (~80 µs with its hash) goes to the recovery lane's worker
 * through shared memory (recovery-lane.ts, ~8 µs of this thread), where the machine has a core to
 * spare; on one core it runs inline. Without the binding, noble's check is ~0.25–0.5 ms of pure
 * CPU, more than the rest of a paid call's work on the one JavaScript thread, so it runs on worker
 * threads: one per spare core (at least one, at most four), each payer always on the same worker
 * so its cached key table is hit, the checks of one event-loop turn in one message per worker.
 * Same answers either way; where a worker cannot be used (it failed to start, it has not loaded
 * yet, or the pool was stopped with checks in flight), the check runs inline: the first paid
 * calls after a start do not wait the workers' ~0.3 s start.
 */
import {
  type Authorization,
  authorizationRecoveryJob,
  type Domain,
  nativeRecovery,
  recoversTo,
  type RecoveryJob,
  signedByEoa,
} from "./authorization-check.ts";
import { recoversToOffThread, stopRecoveryLane } from "./recovery-lane.ts";
import type { CheckJob } from "./authorization-check.worker.ts";

interface Waiting {
  job: CheckJob;
  resolve: (ok: boolean) => void;
}

interface Lane {
  worker: Worker;
  /** The worker has loaded (its first message): until then this lane's checks run inline. */
  ready: boolean;
  /** Resolves true when the worker has loaded, false if the pool stops first. */
  loaded: PromiseWithResolvers<boolean>;
  queued: Waiting[];
  inFlight: Map<number, Waiting[]>;
}

/** libsecp256k1's recoveries go to the recovery lane's thread where there is a core to spare. */
const LANE = (navigator.hardwareConcurrency ?? 1) > 1;
const SIZE = Math.max(1, Math.min(4, (navigator.hardwareConcurrency ?? 2) - 1));
let lanes: Lane[] | null = null;
let broken = false;
let nextId = 0;
let flushScheduled = false;

/** How checks on this path were answered since the process started: by a worker, or inline. */
export const authorizationThreadCounts = { worker: 0, inline: 0 };

function inline(w: Waiting) {
  authorizationThreadCounts.inline++;
  w.resolve(signedByEoa(w.job.d, w.job.a, w.job.s));
}

function start(): Lane[] | null {
  if (broken) return null;
  try {
    return Array.from({ length: SIZE }, () => {
      const worker = new Worker(new URL("./authorization-check.worker.ts", import.meta.url), {
        type: "module",
      });
      const lane: Lane = {
        worker,
        ready: false,
        loaded: Promise.withResolvers<boolean>(),
        queued: [],
        inFlight: new Map(),
      };
      worker.onmessage = (e: MessageEvent<{ id: number; ok: boolean[] } | { ready: true }>) => {
        if ("ready" in e.data) {
          lane.ready = true;
          lane.loaded.resolve(true);
          return;
        }
        const batch = lane.inFlight.get(e.data.id);
        if (!batch) return;
        lane.inFlight.delete(e.data.id);
        const ok = e.data.ok;
        authorizationThreadCounts.worker += batch.length;
        batch.forEach((w, i) => w.resolve(ok[i] === true));
      };
      worker.onerror = (e) => {
        // A worker that cannot run (its module failed to load): check inline from now on.
        e.preventDefault();
        broken = true;
        stopAuthorizationThreads();
      };
      return lane;
    });
  } catch {
    broken = true;
    return null;
  }
}

function flush() {
  flushScheduled = false;
  if (!lanes) return;
  for (const lane of lanes) {
    if (!lane.queued.length) continue;
    const id = nextId++;
    const batch = lane.queued;
    lane.queued = [];
    lane.inFlight.set(id, batch);
    lane.worker.postMessage({ id, jobs: batch.map((w) => w.job) });
  }
}

function laneOf(all: Lane[], from: string): Lane {
  return all[Number.parseInt(from.slice(-6), 16) % all.length] ?? all[0];
}

/** `signedByEoa`: off the event loop where it can be (see above), else inline. */
export function checkSignedByEoa(
  d: Domain,
  a: Authorization,
  signature: `0x${string}`,
): Promise<boolean> {
  if (nativeRecovery) {
    if (!LANE) return Promise.resolve(signedByEoa(d, a, signature));
    const job = authorizationRecoveryJob(d, a, signature);
    return job ? recoversToOffThread(job) : Promise.resolve(false);
  }
  return signedByEoaOffThread(d, a, signature);
}

/**
 * Whether libsecp256k1 recovers `job.from` from a prepared digest and signature (another typed
 * message's check, a channel's voucher): on the recovery lane where there is a core to spare.
 * False without the binding: the caller checks its own slower way then.
 */
export function recoversToSigner(job: RecoveryJob): Promise<boolean> {
  if (!nativeRecovery) return Promise.resolve(false);
  return LANE ? recoversToOffThread(job) : Promise.resolve(recoversTo(job));
}

/** `signedByEoa` on a worker thread. */
export function signedByEoaOffThread(
  d: Domain,
  a: Authorization,
  signature: `0x${string}`,
): Promise<boolean> {
  lanes ??= start();
  return new Promise((resolve) => {
    const w: Waiting = {
      job: { d: { ...d }, a: { ...a }, s: signature },
      resolve,
    };
    const lane = lanes && laneOf(lanes, a.from);
    // No pool, or its worker still loading (~0.3 s after a start): answered here, at once.
    if (!lane?.ready) return inline(w);
    lane.queued.push(w);
    if (!flushScheduled) {
      flushScheduled = true;
      queueMicrotask(flush);
    }
  });
}

/**
 * Starts the pool if it is not running and resolves once every worker has loaded (true), or
 * false where there is no pool (it failed to start) or it was stopped meanwhile. For tests.
 */
export async function authorizationThreadsReady(): Promise<boolean> {
  lanes ??= start();
  const all = lanes;
  if (!all) return false;
  const loaded = await Promise.all(all.map((l) => l.loaded.promise));
  return lanes === all && loaded.every((ok) => ok);
}

/**
 * Stops the workers (a service stopping; they would keep the process alive). Checks still queued
 * or in flight are answered inline; the next check starts the pool again.
 */
export function stopAuthorizationThreads(): void {
  stopRecoveryLane();
  const all = lanes;
  lanes = null;
  if (!all) return;
  for (const lane of all) {
    lane.loaded.resolve(false);
    lane.worker.terminate();
    lane.queued.forEach(inline);
    for (const batch of lane.inFlight.values()) batch.forEach(inline);
  }
}
