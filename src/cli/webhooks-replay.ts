/**
 * `deno task webhooks:replay <deliveryId>` sends one delivery again (same webhook-id);
 * `deno task webhooks:replay --undelivered --since 2026-11-01T00:00:00Z` every undelivered one
 * created since then. Prints the outcome of each.
 */
import { fail, parseArgs, withCli } from "./context.ts";
import { createQueueForCli } from "./queue.ts";
import { replay, undeliveredSince } from "../modules/webhooks/webhooks.service.ts";

const { flags, positional } = parseArgs(Deno.args);
const usage = "usage: deno task webhooks:replay <deliveryId> | --undelivered --since <ISO time>";
const since = flags.since ? new Date(flags.since) : undefined;
if (flags.undelivered !== "true" && positional.length !== 1) fail(usage);
if (flags.undelivered === "true" && (!since || isNaN(since.getTime()))) fail(usage);

await withCli(async (ctx) => {
  const { deps, stop } = await createQueueForCli(ctx);
  try {
    const ids = positional.length ? positional : await undeliveredSince(ctx, since!);
    if (ids.length === 0) console.log("Nothing to replay.");
    for (const id of ids) {
      try {
        const d = await replay(deps, null, id);
        console.log(
          `${id} ${d.event} → ${d.status}${d.lastStatusCode ? ` (HTTP ${d.lastStatusCode})` : ""}${
            d.lastError ? ` ${d.lastError}` : ""
          }`,
        );
      } catch (e) {
        console.log(`${id} → ${e instanceof Error ? e.message : e}`);
      }
    }
  } finally {
    await stop();
  }
});
