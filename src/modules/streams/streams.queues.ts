/** The streams module's job descriptors (handlers: streams.jobs.ts). */
import { z } from "zod";
import { defineQueue } from "../../queue/registry.ts";

/** Completes one fully streamed stream: pays the receiver's remainder, marks it COMPLETED. */
export const drainStreamQueue = defineQueue<{ streamId: string; resends?: number }>({
  name: "streams.drain",
  // resends: how often the drain may be sent again if the end has not come on chain yet.
  schema: z.object({
    streamId: z.string().uuid(),
    resends: z.number().int().min(0).max(100).optional(),
  }),
  queue: { retryLimit: 5, retryDelay: 10 },
});
