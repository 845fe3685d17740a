/**
 * `deno task webhooks:replay <deliveryId>` sends one delivery again (same webhook-id);
 * `deno task webhooks:replay --undelivered --since 2026-11-01T00:00:00Z` every undelivered one
 * created since then. Prints the outcome of each; exits 1 when any was not delivered (unknown, or
 * its receiver did not take it).
 */
import { fail, parseArgs, withCli } from "./context.ts";
import { createQueueForCli } from "./queue.ts";
import { replay, undeliveredSince } from "../modules/webhooks/webhooks.service.ts";
import { DomainError } from "../errors.ts";
import { ERROR_MAP } from "../http/error-map.ts";

const usage = "usage: deno task webhooks:replay <deliveryId> | --undelivered --since <ISO time>";
const { flags, positional } = parseArgs(Deno.args, {
  usage,
  flags: ["since"],
  switches: ["undelivered"],
});
const since = flags.since ? new Date(flags.since) : undefined;
if (flags.undelivered !== "true" && positional.length !== 1) fail(usage);
if (flags.undelivered === "true" && (!since || isNaN(since.getTime()) || positional.length)) {
  fail(usage);
}
if (flags.since && flags.undelivered !== "true") fail(usage);

let notDelivered = 0;
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
            d.lastError && d.lastError !== `HTTP ${d.lastStatusCode}` ? ` ${d.lastError}` : ""
          }`,
        );
        if (d.status !== "delivered") notDelivered++;
      } catch (e) {
        // The catalog's words for a refusal (`delivery_not_found` → "Delivery not found."), not
        // the code.
        const text = e instanceof DomainError ? ERROR_MAP[e.code].text : String(e);
        console.log(`${id} → ${text}`);
        notDelivered++;
      }
    }
  } finally {
    await stop();
  }
});
// A script that replays and checks the exit code learns whether every delivery went out.
if (notDelivered > 0) {
  console.error(`${notDelivered} of the deliveries asked for were not delivered.`);
  Deno.exit(1);
}
