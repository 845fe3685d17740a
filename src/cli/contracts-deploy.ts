/**
 * `deno task contracts:deploy --network <profile> [--force]`: deploy our contracts with the
 * profile's operator key (<PROFILE>_RPC_URL and <PROFILE>_OPERATOR_KEY) and record the addresses
 * in the database. Prints the environment lines that pin them in configuration.
 */
import { fail, parseArgs, withCli } from "./context.ts";
import { ARTIFACTS, deployContracts } from "../chain/deploy.ts";
import { missingSettlers } from "../chain/gateway-settlers.ts";
import {
  type ContractName,
  isSourceChain,
  PROFILE_DEFS,
  type ProfileName,
} from "../chain/profiles.ts";

const usage =
  "usage: deno task contracts:deploy --network testnet|production|<bridge source chain> " +
  "[--force [--only <Contract,…>]]";
const { flags, positional } = parseArgs(Deno.args, {
  usage,
  flags: ["network", "only"],
  switches: ["force"],
});
const network = flags.network as ProfileName | undefined;
if (!network || !PROFILE_DEFS[network] || positional.length) fail(usage);

// `--force --only GatewayVault,…`: replace only those (a fund-holding contract strands what the
// old one holds: replace only what must change).
const only = (flags.only ?? "").split(",").map((n) => n.trim()).filter(Boolean) as ContractName[];
for (const name of only) {
  if (!(name in ARTIFACTS)) fail(`--only: no contract named ${name}`);
}

const started = performance.now();
await withCli(async ({ chain, sql, log, config }) => {
  // A bridge source chain starts on first use (and links to testnet when both have messengers).
  const rt = isSourceChain(network) ? await chain.ensure(network) : chain.runtime(network);
  // Our TestUSDC is a token its operator mints at will: in production a configured chain's USDC
  // is the chain's own, named by address, never one we deploy (or deployed earlier).
  if (config.isProduction && !rt.node && !rt.profile.contracts.TestUSDC) {
    fail(
      `${rt.profile.envPrefix}_USDC_ADDRESS is not set: in production the USDC of ${network} is ` +
        "the chain's own (README, Going live on real networks), never a test token deployed here. " +
        `Set ${rt.profile.envPrefix}_USDC_ADDRESS and run this again.`,
    );
  }
  const deployed = await deployContracts(rt, chain.sender, sql, log, {
    force: flags.force === "true",
    only: only.length ? only : undefined,
  }).catch((e) => {
    // The one refusal an operator meets first: a key with no gas. Said with its fix, not a trace.
    if (/insufficient funds/i.test(e instanceof Error ? e.message : String(e)) && rt.operator) {
      fail(
        `The operator ${rt.operator.address} has too little native gas on ${network} to deploy: ` +
          `send it some (or set ${rt.profile.envPrefix}_OPERATOR_KEY to a funded key), then run ` +
          "this again.",
      );
    }
    throw e;
  });
  // A local chain's contracts are deployed by the chain module's start, before the deploy
  // above looks (an outside audit read "already deployed" after 12 were deployed by this run).
  const atStart = (await chain.contractsRecordedWithin(rt.chainId, performance.now() - started))
    .filter((n) => !(deployed as string[]).includes(n));
  const all = [...atStart, ...deployed];
  console.log(
    all.length
      ? `Deployed on ${network}: ${all.join(", ")}`
      : `Every contract is already deployed on ${network}.`,
  );
  // The settlers are set by this run too (its start makes this deployment's relayers settlers of
  // the vault, as every process does): said, so that a run with every contract in place does not
  // read as one that did nothing.
  const vault = rt.contracts.GatewayVault;
  const missing = vault && rt.relayers.length
    ? await missingSettlers(rt, vault).catch(() => undefined)
    : undefined;
  if (missing === null) {
    console.log(
      `The gateway vault ${vault} has no settlers: anyone may submit its authorizations ` +
        `(replace it: deno task contracts:deploy --network ${network} --force --only GatewayVault).`,
    );
  } else if (missing?.length) {
    console.log(
      `${missing.length} of this deployment's ${rt.relayers.length} relayers may not settle on ` +
        `the gateway vault ${vault}, whose operator is not ${rt.operator?.address}: ` +
        missing.join(", "),
    );
  } else if (missing) {
    console.log(
      `The gateway vault ${vault}: this deployment's ${rt.relayers.length} relayers may settle.`,
    );
  }
  const p = rt.profile.envPrefix;
  console.log(`${p}_USDC_ADDRESS=${rt.contracts.TestUSDC ?? ""}`);
  console.log(`${p}_PAYMENT_ROUTER_ADDRESS=${rt.contracts.PaymentRouter ?? ""}`);
  console.log(`${p}_STREAM_VAULT_ADDRESS=${rt.contracts.StreamVault ?? ""}`);
  console.log(`${p}_ESCROW_VAULT_ADDRESS=${rt.contracts.EscrowVault ?? ""}`);
  console.log(`${p}_GATEWAY_VAULT_ADDRESS=${rt.contracts.GatewayVault ?? ""}`);
  console.log(`${p}_MESSAGE_TRANSMITTER_ADDRESS=${rt.contracts.MessageTransmitterV2 ?? ""}`);
  console.log(`${p}_TOKEN_MESSENGER_ADDRESS=${rt.contracts.TokenMessengerV2 ?? ""}`);
  console.log(`${p}_IDENTITY_REGISTRY_ADDRESS=${rt.contracts.AgentIdentityRegistry ?? ""}`);
  console.log(`${p}_REPUTATION_REGISTRY_ADDRESS=${rt.contracts.AgentReputationRegistry ?? ""}`);
  console.log(`${p}_AGENT_ACCOUNT_FACTORY_ADDRESS=${rt.contracts.AgentAccountFactory ?? ""}`);
  console.log(`${p}_JOB_ESCROW_ADDRESS=${rt.contracts.AgenticCommerce ?? ""}`);
  if (rt.contracts.CheckoutBurner) {
    console.log(`${p}_CHECKOUT_BURNER_ADDRESS=${rt.contracts.CheckoutBurner}`);
  }
}, { env: { CHAINS: isSourceChain(network) ? "testnet" : network } });
