/**
 * `deno task faucet <address> <amount> [--network testnet]`: mint test USDC to an address on a
 * local node or the test network. Never on a real production chain.
 */
import { fail, parseArgs, withCli } from "./context.ts";
import { AmountError, formatUsdc, parseUsdc } from "../money.ts";
import { explorerTxUrl, type ProfileName } from "../chain/profiles.ts";
import { publishedExplorerUrl } from "../chain/explorer-links.ts";

const { flags, positional } = parseArgs(Deno.args);
const [address, amountText] = positional;
const usage = "usage: deno task faucet <address> <amount> [--network testnet|production]";
if (!address || !amountText) fail(usage);
if (!/^0x[0-9a-fA-F]{40}$/.test(address)) fail(`Not a valid wallet address: ${address}`);
let amount: bigint;
try {
  amount = parseUsdc(amountText);
} catch (e) {
  fail(`Not a valid USDC amount (${e instanceof AmountError ? e.message : e}): ${amountText}`);
}
const network = (flags.network ?? "testnet") as ProfileName;

await withCli(async ({ chain, sql }) => {
  if (!chain.has(network)) fail(`Chain profile "${network}" is not configured.`);
  const rt = chain.runtime(network);
  if (!rt.profile.testnet && !rt.node) {
    fail(`Refusing to mint on ${network}: it is a real production chain.`);
  }
  const tx = await chain.mintUsdc({ profile: network, to: address as `0x${string}`, amount });
  const balance = await chain.usdcBalance(network, address as `0x${string}`);
  // The service's explorer (it serves the local explorer pages), not one built from this
  // process's PORT/BASE_URL, which are usually unset here; ours only when no service has run.
  // A BASE_URL given to this command is the operator's word and wins.
  const explorer = Deno.env.get("BASE_URL") ? undefined : await publishedExplorerUrl(sql, network);
  const link = explorer
    ? explorerTxUrl({ explorerUrl: explorer }, tx.txHash)
    : chain.explorerTxUrl(network, tx.txHash);
  console.log(`Minted ${formatUsdc(amount)} USDC to ${address} on ${network}.`);
  console.log(`  tx:      ${tx.txHash}`);
  console.log(`  explorer ${link}`);
  console.log(`  balance: ${formatUsdc(balance)} USDC`);
});
