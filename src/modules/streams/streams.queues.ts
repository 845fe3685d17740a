/** The streams module's job descriptors (handlers: streams.jobs.ts). */
import { z } from "zod";
import { defineQueue } from "../../queue/registry.ts";

/** Completes one fully streamed stream: pays the receiver's remainder, marks it COMPLETED. */
export const drainStreamQueue = defineQueue<{ streamId: string }>({
  name: "streams.drain",
  schema: z.object({ streamId: z.string().uuid() }),
  queue: { retryLimit: 5, retryDelay: 10 },
});
