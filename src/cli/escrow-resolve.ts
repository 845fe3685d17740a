/**
 * `deno task escrow:resolve <reference> released|refunded`: the operator settles a DISPUTED
 * escrow from the shell, as POST /api/escrow/resolve does (the chain's operator is the arbiter).
 */
import { fail, parseArgs, withCli } from "./context.ts";
import { createQueueForCli } from "./queue.ts";
import { resolve } from "../modules/escrow/escrow.service.ts";
import { DomainError } from "../errors.ts";
import { answerFor } from "../http/error-map.ts";

const usage = "usage: deno task escrow:resolve <reference> released|refunded";
const { positional } = parseArgs(Deno.args, { usage });
const [reference, outcome] = positional;
if (positional.length !== 2 || (outcome !== "released" && outcome !== "refunded")) fail(usage);

let failed = false;
await withCli(async (ctx) => {
  const { deps, stop } = await createQueueForCli(ctx);
  try {
    const r = await resolve(deps, reference, outcome as "released" | "refunded");
    console.log(`${reference} → ${r.escrow.status} (${outcome}) ${r.txHash}`);
    console.log(r.explorerUrl);
  } catch (e) {
    if (!(e instanceof DomainError)) throw e;
    console.error(`${reference}: ${answerFor(e).message}`);
    failed = true;
  } finally {
    await stop();
  }
});
if (failed) Deno.exit(1);
