/**
 * `deno task faucet <address> <amount> [--network <profile>]`: test USDC for a payer, on the
 * chain payment links settle on (the payout profile, production) unless `--network` says
 * otherwise; on a local node also native gas. Never on a real production chain.
 */
import { fail, parseArgs, withCli } from "./context.ts";
import { AmountError, formatUsdc, parseUsdc } from "../money.ts";

/** Native balance for display (18 decimals, trailing zeros trimmed). */
function formatEther(wei: bigint): string {
  const whole = wei / 10n ** 18n;
  const frac = (wei % 10n ** 18n).toString().padStart(18, "0").replace(/0+$/, "");
  return frac ? `${whole}.${frac}` : `${whole}`;
}
import { isSourceChain, type ProfileName } from "../chain/profiles.ts";
import { isAddress } from "../chain/address.ts";

const usage = "usage: deno task faucet <address> <amount> " +
  "[--network testnet|production|Arbitrum_Sepolia|Base_Sepolia|Optimism_Sepolia|Ethereum_Sepolia|Polygon_Amoy_Testnet]";
const { flags, positional } = parseArgs(Deno.args, { usage, flags: ["network"] });
const [address, amountText] = positional;
if (!address || !amountText || positional.length > 2) fail(usage);
if (!isAddress(address)) {
  fail(
    `Not a valid wallet address: ${address} (40 hex characters; mixed case must be a valid checksum)`,
  );
}
let amount: bigint;
try {
  amount = parseUsdc(amountText);
} catch (e) {
  fail(`Not a valid USDC amount (${e instanceof AmountError ? e.message : e}): ${amountText}`);
}

await withCli(async ({ chain }) => {
  // Payment links settle on the payout profile, so that is where a payer needs the funds.
  const network = (flags.network ?? chain.payoutProfile()) as ProfileName;
  // A bridge source chain (the spec's ids) starts on first use, here as in the service.
  if (isSourceChain(network)) await chain.ensure(network);
  else if (!chain.has(network)) fail(`Chain profile "${network}" is not configured.`);
  const rt = chain.runtime(network);
  if (!rt.profile.testnet && !rt.node) {
    fail(`Refusing to mint on ${network}: it is a real production chain.`);
  }
  const { mint: tx, gas } = await chain.faucet(network, address as `0x${string}`, amount);
  const balance = await chain.usdcBalance(network, address as `0x${string}`);
  // The service's explorer (src/cli/context.ts): the one that serves the local explorer pages.
  const link = chain.explorerTxUrl(network, tx.txHash);
  console.log(`Minted ${formatUsdc(amount)} USDC to ${address} on ${network}.`);
  console.log(`  tx:      ${tx.txHash}`);
  console.log(`  explorer ${link}`);
  console.log(`  balance: ${formatUsdc(balance)} USDC`);
  if (gas) {
    const native = await chain.nativeBalance(network, address as `0x${string}`);
    console.log(`  gas:     ${formatEther(native)} ETH (local node)`);
  }
});
