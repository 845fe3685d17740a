/**
 * `deno task operator:key [label]` issues an operator key: the only credential that
 * `/api/escrow/resolve` (and future operator endpoints) accept, refused everywhere else. The key
 * is shown once, alone on the last line, so `KEY=$(deno task operator:key | tail -n1)` works.
 * `--help` says so and issues nothing; any other `--flag` is refused (it used to become the
 * label of a real key).
 */
import { fail, withDatabase } from "./context.ts";
import { systemClock } from "../clock.ts";
import { issueOperatorKey } from "../modules/keys/keys.service.ts";

const usage = "usage: deno task operator:key [label]\n" +
  "Issues an operator key (the credential of /api/escrow/resolve), shown once on the last line.";
if (Deno.args.some((a) => a === "--help" || a === "-h")) {
  console.log(usage);
  Deno.exit(0);
}
const flag = Deno.args.find((a) => a.startsWith("-"));
if (flag) fail(`Unknown option ${flag}.\n${usage}`);
const label = Deno.args.join(" ").trim() || null;

await withDatabase(async ({ sql }) => {
  const k = await issueOperatorKey({ sql, clock: systemClock }, label);
  console.log(`Operator key ${k.hint}${label ? ` (${label})` : ""} issued; it is shown only once:`);
  console.log(k.key);
});
