/** x402 buyers for tests: a key, its gateway deposit on the contract, and signed gateway proofs. */
import {
  createPublicClient,
  createWalletClient,
  encodeFunctionData,
  type Hex,
  http,
  type LocalAccount,
  parseEventLogs,
  toHex,
} from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import {
  AgentIdentityRegistry,
  GatewayVault,
  TestUSDC,
} from "../../src/chain/contracts/artifacts/index.ts";
import { TRANSFER_WITH_AUTHORIZATION_TYPES } from "../../src/chain/gateway.ts";
import { RECEIVE_WITH_AUTHORIZATION_TYPES, usdcDomain } from "../../src/chain/eip3009.ts";
import { AGENT_PAYMENT_TYPES } from "../../src/chain/agents.ts";
import { SIGNED_WITHDRAWAL_TYPES } from "../../src/chain/gateway-withdrawals.ts";
import { encodeGatewayProof } from "../../src/modules/x402/x402.rules.ts";
import assert from "node:assert/strict";
import { HTTPFacilitatorClient } from "@x402/core/server";
import type { TestService } from "./service.ts";
import { waitFor } from "./poll.ts";
import { api } from "./accounts.ts";
import { compile1271 } from "./erc1271.ts";

export const X402_PROFILE = "testnet" as const;

export function randomNonce(): Hex {
  return toHex(crypto.getRandomValues(new Uint8Array(32)));
}

export interface ProofTerms {
  /** The payer; default the signer's own address (a smart account's owner signs for it). */
  from?: string;
  to: string;
  value: bigint;
  validAfter?: bigint;
  validBefore?: bigint;
  nonce?: Hex;
}

/** A gateway proof signed by `account` over the service's GatewayVault domain. */
export async function gatewayProof(
  svc: TestService,
  account: LocalAccount,
  t: ProofTerms,
): Promise<{ proof: string; nonce: Hex }> {
  const now = BigInt(Math.floor(svc.clock.now().getTime() / 1000));
  const authorization = {
    from: (t.from ?? account.address) as `0x${string}`,
    to: t.to as `0x${string}`,
    value: t.value,
    validAfter: t.validAfter ?? now - 5n,
    validBefore: t.validBefore ?? now + 300n,
    nonce: t.nonce ?? randomNonce(),
  };
  const domain = svc.deps.chain.gateway.domain(X402_PROFILE, "gateway");
  const signature = await account.signTypedData({
    domain,
    types: TRANSFER_WITH_AUTHORIZATION_TYPES,
    primaryType: "TransferWithAuthorization",
    message: authorization,
  });
  return {
    proof: encodeGatewayProof({ chainId: domain.chainId, signature, authorization }),
    nonce: authorization.nonce,
  };
}

/** An external buyer: funded with test USDC and gas, deposits on the contract itself. */
export async function externalBuyer(svc: TestService, key: Hex, usdc: bigint) {
  const chain = svc.deps.chain;
  const rt = chain.runtime(X402_PROFILE);
  const account = privateKeyToAccount(key);
  const wallet = createWalletClient({ account, chain: rt.viemChain, transport: http(rt.rpcUrl) });
  const client = createPublicClient({ chain: rt.viemChain, transport: http(rt.rpcUrl) });
  const to = account.address.toLowerCase() as `0x${string}`;
  await chain.mintUsdc({ profile: X402_PROFILE, to, amount: usdc });
  await chain.grantGas(X402_PROFILE, to);
  const mined = async (hash: Hex) => {
    const r = await waitFor(() => client.getTransactionReceipt({ hash }), {
      what: `receipt of ${hash}`,
    });
    if (r.status !== "success") throw new Error(`${hash} reverted`);
  };
  // The vault the service uses when the call is made (a test may move it: useDelayedVault).
  const vault = () => chain.contract(X402_PROFILE, "GatewayVault");
  return {
    account,
    address: account.address,
    wallet,
    mined,
    /**
     * Deploys the tests' ERC-1271 account (helpers/erc1271.ts: valid when `owner`'s key signed)
     * from this buyer's wallet, which pays the gas. Its address, lower case.
     */
    async deploy1271(owner: `0x${string}`): Promise<`0x${string}`> {
      const w = compile1271();
      const hash = await wallet.deployContract({
        abi: w.abi,
        bytecode: w.bytecode,
        args: [owner],
      });
      await mined(hash);
      const receipt = await client.getTransactionReceipt({ hash });
      return receipt.contractAddress!.toLowerCase() as `0x${string}`;
    },
    /** Deposits from this buyer's wallet into `account`'s gateway balance. */
    async depositFor(forAccount: `0x${string}`, amount: bigint) {
      await mined(
        await wallet.writeContract({
          address: chain.contract(X402_PROFILE, "TestUSDC"),
          abi: TestUSDC.abi,
          functionName: "approve",
          args: [vault(), amount],
        }),
      );
      await mined(
        await wallet.writeContract({
          address: vault(),
          abi: GatewayVault.abi,
          functionName: "depositFor",
          args: [forAccount, amount],
        }),
      );
    },
    async deposit(amount: bigint) {
      await mined(
        await wallet.writeContract({
          address: chain.contract(X402_PROFILE, "TestUSDC"),
          abi: TestUSDC.abi,
          functionName: "approve",
          args: [vault(), amount],
        }),
      );
      await mined(
        await wallet.writeContract({
          address: vault(),
          abi: GatewayVault.abi,
          functionName: "deposit",
          args: [amount],
        }),
      );
    },
  };
}

/**
 * Registers `account` directly on the x402 chain's ERC-8004 identity registry (the registry makes
 * it the agent wallet) and returns its `8004:{chainId}:{tokenId}`: a buyer that may pay as that
 * agent. The account needs gas (externalBuyer gives it).
 */
export async function registerAgent(svc: TestService, account: LocalAccount): Promise<string> {
  const chain = svc.deps.chain;
  const rt = chain.runtime(X402_PROFILE);
  const wallet = createWalletClient({ account, chain: rt.viemChain, transport: http(rt.rpcUrl) });
  const client = createPublicClient({ chain: rt.viemChain, transport: http(rt.rpcUrl) });
  const hash = await wallet.writeContract({
    address: chain.contract(X402_PROFILE, "AgentIdentityRegistry"),
    abi: AgentIdentityRegistry.abi,
    functionName: "register",
    args: ["ipfs://buyer-agent"],
  });
  const receipt = await waitFor(() => client.getTransactionReceipt({ hash }), {
    what: `receipt of ${hash}`,
  });
  const [registered] = parseEventLogs({
    abi: AgentIdentityRegistry.abi,
    eventName: "Registered",
    logs: receipt.logs,
  });
  return `8004:${rt.chainId}:${registered.args.agentId}`;
}

/** An agent deployed through the API, as `POST /api/agent/deploy` returned it. */
export interface DeployedAgent {
  tokenId: string;
  scaAddress: string;
  managedWalletId: string;
}

/**
 * Funds an agent's gateway balance from its smart account: test USDC minted to the account,
 * then approve and deposit as calls the account's owner sends (AgentAccount.execute).
 */
export async function fundAgentGateway(svc: TestService, agent: DeployedAgent, amount: bigint) {
  const chain = svc.deps.chain;
  const p = X402_PROFILE;
  const sca = agent.scaAddress as `0x${string}`;
  const vault = chain.contract(p, "GatewayVault");
  await chain.mintUsdc({ profile: p, to: sca, amount });
  const exec = (target: `0x${string}`, data: Hex, step: string) =>
    chain.agents.execute(p, {
      ownerWalletId: agent.managedWalletId,
      sca,
      target,
      data,
      intentKey: `test:${step}:${crypto.randomUUID()}`,
    });
  await exec(
    chain.contract(p, "TestUSDC"),
    encodeFunctionData({ abi: TestUSDC.abi, functionName: "approve", args: [vault, amount] }),
    "approve",
  );
  await exec(
    vault,
    encodeFunctionData({ abi: GatewayVault.abi, functionName: "deposit", args: [amount] }),
    "deposit",
  );
}

/**
 * An agent's paid call: a gateway proof from its smart account, signed by the account's owner
 * (valid by ERC-1271), and the X-Agent-Signature of its timestamp and nonce under the identity
 * registry's domain.
 */
export async function agentProof(
  svc: TestService,
  agent: DeployedAgent,
  t: { to: string; value: bigint },
): Promise<{ proof: string; agentSignature: Hex }> {
  const chain = svc.deps.chain;
  const owner = await chain.walletAccount(agent.managedWalletId);
  const { proof, nonce, validAfter } = await gatewayProofWithTerms(svc, owner, {
    from: agent.scaAddress,
    ...t,
  });
  const agentSignature = await owner.signTypedData({
    domain: chain.agents.domain(X402_PROFILE),
    types: AGENT_PAYMENT_TYPES,
    primaryType: "AgentPayment",
    message: { agentId: BigInt(agent.tokenId), timestamp: validAfter, nonce },
  });
  return { proof, agentSignature };
}

async function gatewayProofWithTerms(svc: TestService, account: LocalAccount, t: ProofTerms) {
  const now = BigInt(Math.floor(svc.clock.now().getTime() / 1000));
  const validAfter = t.validAfter ?? now - 5n;
  const nonce = t.nonce ?? randomNonce();
  const { proof } = await gatewayProof(svc, account, { ...t, validAfter, nonce });
  return { proof, nonce, validAfter };
}

/**
 * The vault's operator names `address` a settler (docs/decisions.md, "Settlers"): as another
 * deployment's relayer or a script of the operator's would be, outside this service's records.
 */
export async function nameSettler(svc: TestService, address: `0x${string}`): Promise<void> {
  const chain = svc.deps.chain;
  await chain.send({
    profile: X402_PROFILE,
    from: "operator",
    to: chain.contract(X402_PROFILE, "GatewayVault"),
    data: encodeFunctionData({
      abi: GatewayVault.abi,
      functionName: "setSettlers",
      args: [[address], true],
    }),
    intentKey: `test:settler:${address.toLowerCase()}`,
  });
}

/**
 * Lists `upstreamUrl` as the seller's paid API `slug` (GET, 0.01 USDC unless told) and returns
 * its paid URL, `/x402/{slug}`.
 */
export async function listApi(
  svc: TestService,
  seller: { apiKey: string },
  listing: { slug: string; upstreamUrl: string },
): Promise<string> {
  const created = await api(svc)("POST", "/api/x402/listings", {
    headers: { authorization: `Bearer ${seller.apiKey}` },
    body: { price: "0.01", methods: ["GET"], ...listing },
  });
  assert.equal(created.status, 201, created.text);
  return `${svc.baseUrl}/x402/${listing.slug}`;
}

/** The standard `HTTPFacilitatorClient` on our facilitator, as the merchant of `apiKey`. */
export function facilitatorClient(svc: TestService, apiKey: string): HTTPFacilitatorClient {
  return new HTTPFacilitatorClient({
    url: `${svc.baseUrl}/api/x402/facilitator`,
    createAuthHeaders: () =>
      Promise.resolve({
        verify: { Authorization: `Bearer ${apiKey}` },
        settle: { Authorization: `Bearer ${apiKey}` },
        supported: {},
      }),
  });
}

export interface DepositTerms {
  /** Whose USDC (default: the signer's address; an ERC-1271 account its owner signs for). */
  from?: `0x${string}`;
  to?: string;
  value: bigint;
  validAfter?: bigint;
  validBefore?: bigint;
  nonce?: Hex;
}

/** A signed withdrawal's terms: `to` makes it a `Withdraw`, without it an `InitiateWithdrawal`. */
export interface WithdrawalTerms {
  value: bigint;
  to?: `0x${string}`;
  validBefore?: bigint;
  nonce?: Hex;
  /** Whose balance (default: the signer's address; an ERC-1271 account its owner signs for). */
  account?: `0x${string}`;
}

/**
 * `signer`'s InitiateWithdrawal or Withdraw under the vault's domain (the vault the service uses
 * now), as POST /api/x402/payer/withdraw/start and /api/x402/payer/withdraw take it.
 */
export async function signedWithdrawal(svc: TestService, signer: LocalAccount, t: WithdrawalTerms) {
  const chain = svc.deps.chain;
  const now = BigInt(Math.floor(svc.clock.now().getTime() / 1000));
  const base = {
    account: t.account ?? signer.address,
    value: t.value,
    validBefore: t.validBefore ?? now + 3600n,
    nonce: t.nonce ?? randomNonce(),
  };
  const domain = {
    name: "GatewayVault",
    version: "1",
    chainId: chain.chainId(X402_PROFILE),
    verifyingContract: chain.contract(X402_PROFILE, "GatewayVault"),
  };
  const signature = t.to
    ? await signer.signTypedData({
      domain,
      types: { Withdraw: SIGNED_WITHDRAWAL_TYPES.Withdraw },
      primaryType: "Withdraw",
      message: { ...base, to: t.to },
    })
    : await signer.signTypedData({
      domain,
      types: { InitiateWithdrawal: SIGNED_WITHDRAWAL_TYPES.InitiateWithdrawal },
      primaryType: "InitiateWithdrawal",
      message: base,
    });
  return {
    authorization: {
      ...base,
      ...(t.to ? { to: t.to } : {}),
      value: base.value.toString(),
      validBefore: base.validBefore.toString(),
    },
    signature,
  };
}

/** What a payer reads off a listing's 402 to deposit: the vault and USDC's EIP-712 domain. */
export interface DepositOffer {
  vault: `0x${string}`;
  domain: { name: string; version: string; chainId: number; verifyingContract: `0x${string}` };
}

/** The vault (the batched offer's verifyingContract) and USDC's domain (the exact offer's). */
export async function offerOf(resource: string): Promise<DepositOffer> {
  const r = await fetch(resource);
  assert.equal(r.status, 402);
  await r.body?.cancel();
  const { accepts } = JSON.parse(atob(r.headers.get("payment-required")!));
  const [exact] = accepts;
  const batched = accepts.find((a: { extra?: { name?: string } }) =>
    a.extra?.name === "GatewayWalletBatched"
  );
  return {
    vault: batched.extra.verifyingContract,
    domain: {
      name: exact.extra.name,
      version: exact.extra.version,
      chainId: Number(exact.network.split(":")[1]),
      verifyingContract: exact.asset,
    },
  };
}

/**
 * `account`'s EIP-3009 ReceiveWithAuthorization of USDC to the vault, as
 * POST /api/x402/payer/deposit takes it (values as decimal strings); `offer` defaults to the
 * service's own vault and USDC domain.
 */
export async function signedDeposit(
  svc: TestService,
  account: LocalAccount,
  t: DepositTerms,
  offer: DepositOffer = {
    vault: svc.deps.chain.contract(X402_PROFILE, "GatewayVault"),
    domain: usdcDomain(svc.deps.chain.runtime(X402_PROFILE)),
  },
) {
  const now = BigInt(Math.floor(svc.clock.now().getTime() / 1000));
  const message = {
    from: t.from ?? account.address,
    to: (t.to ?? offer.vault) as `0x${string}`,
    value: t.value,
    validAfter: t.validAfter ?? now - 10n,
    validBefore: t.validBefore ?? now + 3600n,
    nonce: t.nonce ?? randomNonce(),
  };
  const signature = await account.signTypedData({
    domain: offer.domain,
    types: RECEIVE_WITH_AUTHORIZATION_TYPES,
    primaryType: "ReceiveWithAuthorization",
    message,
  });
  return {
    authorization: {
      ...message,
      value: message.value.toString(),
      validAfter: message.validAfter.toString(),
      validBefore: message.validBefore.toString(),
    },
    signature,
  };
}

/** An upstream API that answers every call 200 `{ ok: true }`, on a free loopback port. */
export function okUpstream(): Deno.HttpServer<Deno.NetAddr> {
  return Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () => Response.json({ ok: true }),
  );
}

/**
 * Puts the service's x402 chain on a GatewayVault deployed with a withdrawal delay (what the
 * batched option's vaults have on real chains; a local node's has none), each of `deposits`
 * credited `amount` on it. Deployed from an account of the test's own, not the service's operator,
 * whose nonces the service keeps. Returns the vault's address.
 */
export async function useDelayedVault(
  svc: TestService,
  delaySeconds: bigint,
  deposits: `0x${string}`[],
  amount: bigint,
): Promise<`0x${string}`> {
  const rt = svc.deps.chain.runtime(X402_PROFILE);
  const funder = await externalBuyer(svc, generatePrivateKey(), amount * BigInt(deposits.length));
  const hash = await funder.wallet.deployContract({
    abi: GatewayVault.abi,
    bytecode: GatewayVault.bytecode,
    args: [rt.contracts.TestUSDC!, delaySeconds, funder.address, []],
  });
  const deployed = await waitFor(() => rt.client.getTransactionReceipt({ hash }), {
    what: `the delayed vault's deployment ${hash}`,
  });
  assert.equal(deployed.status, "success", `${hash} reverted`);
  rt.contracts.GatewayVault = deployed.contractAddress!;
  // The buyer's deposits go to the vault the service now uses.
  for (const to of deposits) await funder.depositFor(to, amount);
  return deployed.contractAddress!;
}
