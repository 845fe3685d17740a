/**
 * Circle's CCTP v2 contracts and Circle's USDC (compiled fixtures in ../shared), deployed on a
 * node exactly as Circle's `scripts/v2` wires them (the fixtures' README): USDC behind
 * FiatTokenProxy, MessageTransmitterV2 and TokenMessengerV2 behind AdminUpgradableProxy, a
 * TokenMinterV2, then the remote messengers and token pairs linked once both chains exist.
 * Tests load the fixtures from the sibling `shared` folder and never copy them.
 */
import {
  type Abi,
  createPublicClient,
  createWalletClient,
  encodeFunctionData,
  type Hex,
  http,
  pad,
  type PublicClient,
} from "viem";
import { mnemonicToAccount, privateKeyToAccount } from "viem/accounts";
import { toHex } from "viem";
import { ANVIL_MNEMONIC } from "../../src/chain/local-node.ts";
import { ANVIL_KEYS } from "./anvil.ts";

export const CIRCLE_FIXTURES = new URL("../../../shared/fixtures/circle-cctp-v2/", import.meta.url);

interface Artifact {
  abi: Abi;
  bytecode: Hex;
}

const cache = new Map<string, Artifact>();
export function circleArtifact(name: string): Artifact {
  let a = cache.get(name);
  if (!a) {
    a = JSON.parse(Deno.readTextFileSync(new URL(`${name}.json`, CIRCLE_FIXTURES))) as Artifact;
    cache.set(name, a);
  }
  return a;
}

const keyOf = (i: number) =>
  toHex(mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: i }).getHdKey().privateKey!);

/**
 * Who holds which role. The operator (anvil 0) is also the service's operator, so it owns and
 * controls everything at setup; later changes (fee switch, threshold) come from `manager`
 * (anvil 2), never from the operator, whose nonces the service's sender tracks.
 */
export const ROLES = {
  operator: privateKeyToAccount(ANVIL_KEYS[0]),
  proxyAdmin: privateKeyToAccount(ANVIL_KEYS[1]),
  manager: privateKeyToAccount(ANVIL_KEYS[2]),
  feeRecipient: "0x00000000000000000000000000000000000fee00" as const,
  /** The two local attesters (anvil 8 and 9; 9 is the local nodes' default attester). */
  attesterKeys: [keyOf(8), keyOf(9)] as `0x${string}`[],
};

export interface CircleDeployment {
  rpcUrl: string;
  domain: number;
  usdc: `0x${string}`;
  transmitter: `0x${string}`;
  messenger: `0x${string}`;
  minter: `0x${string}`;
  client: PublicClient;
}

const MAX_BURN = 1_000_000_000_000n; // 1,000,000 USDC per message
const ALLOWANCE = 10n ** 18n;

async function sender(rpcUrl: string) {
  const client = createPublicClient({ transport: http(rpcUrl) }) as PublicClient;
  const chainId = await client.getChainId();
  const chain = {
    id: chainId,
    name: `local ${chainId}`,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  };
  const wallet = (account: ReturnType<typeof privateKeyToAccount>) =>
    createWalletClient({ account, chain, transport: http(rpcUrl) });
  const confirm = async (hash: Hex) => {
    const r = await client.waitForTransactionReceipt({ hash, pollingInterval: 50 });
    if (r.status !== "success") throw new Error(`setup transaction reverted: ${hash}`);
    return r;
  };
  const deploy = async (
    account: ReturnType<typeof privateKeyToAccount>,
    name: string,
    args: unknown[] = [],
  ) => {
    const a = circleArtifact(name);
    const hash = await wallet(account).deployContract({ abi: a.abi, bytecode: a.bytecode, args });
    return (await confirm(hash)).contractAddress as `0x${string}`;
  };
  const call = async (
    account: ReturnType<typeof privateKeyToAccount>,
    to: `0x${string}`,
    name: string,
    fn: string,
    args: unknown[],
  ) => {
    const hash = await wallet(account).writeContract({
      address: to,
      abi: circleArtifact(name).abi,
      functionName: fn,
      args,
    } as never);
    await confirm(hash);
  };
  return { client, deploy, call };
}

/** Steps 1–5 of the README on one chain (the links of step 6 come with `linkCircle`). */
export async function deployCircle(
  rpcUrl: string,
  opts: { domain: number; attesters: `0x${string}`[]; threshold: number; minFee?: bigint },
): Promise<CircleDeployment> {
  const { client, deploy, call } = await sender(rpcUrl);
  const { operator, proxyAdmin, manager } = ROLES;
  const op = operator.address;
  // 1. USDC: implementation, proxy from a separate admin, initialized through the proxy.
  const usdcImpl = await deploy(operator, "FiatTokenV2_1");
  const usdc = await deploy(proxyAdmin, "FiatTokenProxy", [usdcImpl]);
  await call(operator, usdc, "FiatTokenV2_1", "initialize", [
    "USDC",
    "USDC",
    "USD",
    6,
    op,
    op,
    op,
    op,
  ]);
  await call(operator, usdc, "FiatTokenV2_1", "initializeV2", ["USDC"]);
  await call(operator, usdc, "FiatTokenV2_1", "initializeV2_1", [op]);
  // 2. MessageTransmitterV2 behind AdminUpgradableProxy, initialized in the proxy's constructor.
  const mtImpl = await deploy(operator, "MessageTransmitterV2", [opts.domain, 1]);
  const attesters = opts.attesters.map((k) => privateKeyToAccount(k).address);
  const transmitter = await deploy(proxyAdmin, "AdminUpgradableProxy", [
    mtImpl,
    proxyAdmin.address,
    encodeFunctionData({
      abi: circleArtifact("MessageTransmitterV2").abi,
      functionName: "initialize",
      args: [op, op, op, manager.address, attesters, BigInt(opts.threshold), 8192n],
    }),
  ]);
  // 3. TokenMinterV2, the operator its token controller.
  const minter = await deploy(operator, "TokenMinterV2", [op]);
  // 4. TokenMessengerV2 behind a proxy; no remote domains yet.
  const tmImpl = await deploy(operator, "TokenMessengerV2", [transmitter, 1]);
  const messenger = await deploy(proxyAdmin, "AdminUpgradableProxy", [
    tmImpl,
    proxyAdmin.address,
    encodeFunctionData({
      abi: circleArtifact("TokenMessengerV2").abi,
      functionName: "initialize",
      args: [
        {
          owner: op,
          rescuer: op,
          feeRecipient: ROLES.feeRecipient,
          denylister: op,
          tokenMinter: minter,
          minFeeController: manager.address,
        },
        opts.minFee ?? 0n,
        [],
        [],
      ],
    }),
  ]);
  // 5. The minter serves the messenger, burns USDC up to a limit, and may mint it.
  await call(operator, minter, "TokenMinterV2", "addLocalTokenMessenger", [messenger]);
  await call(operator, minter, "TokenMinterV2", "setMaxBurnAmountPerMessage", [usdc, MAX_BURN]);
  await call(operator, usdc, "FiatTokenV2_1", "configureMinter", [minter, ALLOWANCE]);
  // Test funds: the operator mints too (the service's faucet calls `mint` from it).
  await call(operator, usdc, "FiatTokenV2_1", "configureMinter", [op, ALLOWANCE]);
  return { rpcUrl, domain: opts.domain, usdc, transmitter, messenger, minter, client };
}

/** Step 6: each side's messenger trusts the other's, and each minter maps the other's USDC. */
export async function linkCircle(a: CircleDeployment, b: CircleDeployment): Promise<void> {
  for (const [here, there] of [[a, b], [b, a]] as const) {
    const { call } = await sender(here.rpcUrl);
    await call(ROLES.operator, here.messenger, "TokenMessengerV2", "addRemoteTokenMessenger", [
      there.domain,
      pad(there.messenger, { size: 32 }),
    ]);
    await call(ROLES.operator, here.minter, "TokenMinterV2", "linkTokenPair", [
      here.usdc,
      there.domain,
      pad(there.usdc, { size: 32 }),
    ]);
  }
}

/** A later change by the manager (minFeeController and attesterManager): fee switch, threshold. */
export async function manage(
  d: CircleDeployment,
  change: { minFee: bigint } | { threshold: number },
): Promise<void> {
  const { call } = await sender(d.rpcUrl);
  if ("minFee" in change) {
    await call(ROLES.manager, d.messenger, "TokenMessengerV2", "setMinFee", [change.minFee]);
  } else {
    await call(ROLES.manager, d.transmitter, "MessageTransmitterV2", "setSignatureThreshold", [
      BigInt(change.threshold),
    ]);
  }
}

/** The variables that point a profile at this deployment (configuration only). */
export function circleEnv(prefix: string, d: CircleDeployment): Record<string, string> {
  return {
    [`${prefix}_RPC_URL`]: d.rpcUrl,
    [`${prefix}_OPERATOR_KEY`]: ANVIL_KEYS[0],
    [`${prefix}_USDC_ADDRESS`]: d.usdc,
    [`${prefix}_TOKEN_MESSENGER_ADDRESS`]: d.messenger,
    [`${prefix}_MESSAGE_TRANSMITTER_ADDRESS`]: d.transmitter,
  };
}
