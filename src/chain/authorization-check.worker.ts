/**
 * The worker side of authorization-threads.ts: answers batches of EOA signature checks
 * (authorization-check.ts `signedByEoa`) for the main thread, keeping its own cache of recent
 * payers' keys (the pool sends each payer to the same worker). Says it is ready once loaded.
 */
/// <reference lib="deno.worker" />
import { type Authorization, type Domain, signedByEoa } from "./authorization-check.ts";

export interface CheckJob {
  d: Domain;
  a: Authorization;
  s: `0x${string}`;
}

self.onmessage = (e: MessageEvent<{ id: number; jobs: CheckJob[] }>) => {
  const { id, jobs } = e.data;
  self.postMessage({ id, ok: jobs.map((j) => signedByEoa(j.d, j.a, j.s)) });
};

// Loaded: the main thread sends checks here from now on (it answers them itself until then).
self.postMessage({ ready: true });
