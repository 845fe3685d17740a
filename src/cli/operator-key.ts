/**
 * `deno task operator:key [label]` issues an operator key: the only credential that
 * `/api/escrow/resolve` (and future operator endpoints) accept, refused everywhere else. The key
 * is shown once, alone on the last line, so `KEY=$(deno task operator:key | tail -n1)` works.
 */
import { withDatabase } from "./context.ts";
import { systemClock } from "../clock.ts";
import { issueOperatorKey } from "../modules/keys/keys.service.ts";

const label = Deno.args.join(" ").trim() || null;

await withDatabase(async ({ sql }) => {
  const k = await issueOperatorKey({ sql, clock: systemClock }, label);
  console.log(`Operator key ${k.hint}${label ? ` (${label})` : ""} issued; it is shown only once:`);
  console.log(k.key);
});
