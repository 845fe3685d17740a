/**
 * The bridge's step jobs (handlers: bridge.jobs.ts). Each step records its result and enqueues
 * the next in one transaction; a step finding the transfer past its own status does nothing, so
 * a duplicate or a late retry is harmless.
 */
import { z } from "zod";
import { defineQueue } from "../../queue/registry.ts";

const payload = z.object({ reference: z.string().min(1).max(64) });

export const burnQueue = defineQueue<{ reference: string }>({
  name: "bridge.burn",
  schema: payload,
  queue: { retryLimit: 5, retryDelay: 2, retryBackoff: true },
});

/**
 * Asks for the attestation; re-enqueues itself with backoff while there is none. `due` is the
 * poll the job was scheduled for (the transfer's `next_attestation_at` then): a job whose poll
 * another has since rescheduled is superseded and ends, so a restart's resume (which sends one
 * without `due`) takes the polling over instead of adding a second chain of polls.
 */
export const attestQueue = defineQueue<{ reference: string; due?: string }>({
  name: "bridge.attest",
  schema: payload.extend({ due: z.string().max(40).optional() }),
  queue: { retryLimit: 10, retryDelay: 2, retryBackoff: true },
});

export const mintQueue = defineQueue<{ reference: string }>({
  name: "bridge.mint",
  schema: payload,
  queue: { retryLimit: 5, retryDelay: 2, retryBackoff: true },
});
