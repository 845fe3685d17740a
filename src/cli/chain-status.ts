/** `deno task chain:status`: heads, cursors, contracts and transactions in flight per chain. */
import { fail, parseArgs, withCli } from "./context.ts";
import { transactionStatus } from "../chain/status.ts";
import { describeRpcUrl } from "../chain/profiles.ts";

const usage = "usage: deno task chain:status\n" +
  "Prints each chain's head, log cursor, operator, contracts and transactions in flight.";
if (parseArgs(Deno.args, { usage }).positional.length) fail(usage);

await withCli(async ({ chain, sql }) => {
  for (const profile of chain.profiles()) {
    const rt = chain.runtime(profile);
    const head = await rt.client.getBlockNumber().catch((e) => `unreachable (${e.message})`);
    const cursor = await chain.watcher.cursor(rt);
    console.log(
      `${profile} (chain ${rt.chainId}) ${rt.node ? "local node" : "remote"} ${
        describeRpcUrl(rt.rpcUrl)
      }`,
    );
    console.log(
      `  head ${head}, log cursor ${
        cursor ?? "not started"
      }, confirmations ${rt.profile.confirmations}`,
    );
    const op = await chain.operatorGas(profile).catch(() => null);
    console.log(
      `  operator ${rt.operator?.address ?? "(none configured)"}` +
        (op
          ? ` balance ${op.balanceWei} wei` +
            (op.low ? ` LOW: below ${op.lowWei} wei; fund it, gas top-ups come from it` : "")
          : ""),
    );
    for (const [name, address] of Object.entries(rt.contracts)) console.log(`  ${name} ${address}`);
    const { counts, open } = await transactionStatus(sql, rt.chainId);
    console.log(`  transactions: ${counts.map((c) => `${c.status} ${c.n}`).join(", ") || "none"}`);
    for (const t of open.slice(0, 20)) {
      console.log(
        `    ${
          t.status.padEnd(9)
        } nonce ${t.nonce} from ${t.fromAddress} ${t.txHash} (${t.intentKey})` +
          (t.error ? ` last error: ${t.error}` : ""),
      );
    }
    if (open.length > 20) console.log(`    … ${open.length - 20} more in flight`);
  }
});
