/**
 * `deno task chain:accept-reset <profile>`: the operator's word that a chain the service refused
 * to start on (our contracts gone, money recorded on it) is really new. The next start archives
 * the old chain's transactions, forgets its contracts and log cursor, and deploys again; it
 * uses the acceptance once. Nothing on chain is touched here.
 */
import { fail, parseArgs, withDatabase } from "./context.ts";
import { acceptReset, countOrphans } from "../chain/reset.ts";

const usage = "usage: deno task chain:accept-reset <profile>   (e.g. production or testnet)";
const { flags, positional } = parseArgs(Deno.args, { usage, flags: ["network"] });
const name = positional[0] ?? flags.network;
if (!name || positional.length + (flags.network ? 1 : 0) > 1) fail(usage);

await withDatabase(async ({ config, sql }) => {
  const profile = config.chain.profiles.find((p) => p.name === name);
  if (!profile) {
    fail(
      `Chain profile "${name}" is not configured (configured: ${
        config.chain.profiles.map((p) => p.name).join(", ")
      }).`,
    );
  }
  const orphans = await countOrphans(sql, profile.chainId);
  await acceptReset(sql, profile.chainId, Deno.env.get("USER") ?? "operator");
  console.log(`Reset of ${profile.name} (chain ${profile.chainId}) accepted for the next start.`);
  console.log(
    `  ${orphans.transactions} transaction(s) will be archived and ${orphans.handledLogs} ` +
      `settled log(s) forgotten if our contracts are still missing then; ` +
      `if they are found, nothing changes.`,
  );
});
