/**
 * x402 payment authorizations on the chain: the EIP-712 domain a payer signs over (GatewayVault's,
 * or the token's for the `exact` scheme), whether a signature is the payer's (checked the way the
 * contract will), whether a nonce was used and which transaction paid with it, and a managed
 * wallet's signature of an authorization.
 */
import { hashTypedData, type Hex, type PublicClient, toFunctionSelector } from "viem";
import { addressWord, bytes32Word } from "./abi-words.ts";
import { groupCommit } from "../db/group-commit.ts";
import { GatewayVault, TestUSDC } from "./contracts/artifacts/index.ts";
import { TRANSFER_WITH_AUTHORIZATION_TYPES, usdcDomain } from "./eip3009.ts";
import type { ProfileName } from "./profiles.ts";
import { checkSignedByEoa } from "./authorization-threads.ts";
import { hasHighS } from "./authorization-check.ts";
import type { GatewayChain } from "./gateway.ts";

export const GATEWAY_DOMAIN_NAME = "GatewayVault";
export const GATEWAY_DOMAIN_VERSION = "1";
/** Circle Gateway's batched option: the vault accepts authorizations under this domain too. */
export const BATCHED_DOMAIN_NAME = "GatewayWalletBatched";
export const BATCHED_DOMAIN_VERSION = "1";

/** An EIP-3009-shaped authorization: the x402 payload's `authorization`. */
export type TransferAuthorization = {
  from: `0x${string}`;
  to: `0x${string}`;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: Hex;
};

/**
 * Which EIP-712 domain an authorization is signed over: the vault's own, the token's (`exact`),
 * or Circle's batched option's (`GatewayWalletBatched`, verifyingContract the vault), which the
 * vault accepts as its own.
 */
export type AuthorizationTarget = "gateway" | "usdc" | "batched";

export const gatewayVault = (chain: GatewayChain, p: ProfileName) =>
  chain.contract(p, "GatewayVault");
export const gatewayClient = (chain: GatewayChain, p: ProfileName): PublicClient =>
  chain.runtime(p).client as PublicClient;

/** The EIP-712 domain payers sign over (GatewayVault's, or the token's for `exact`). */
export const gatewayDomain = (chain: GatewayChain, p: ProfileName, target: AuthorizationTarget) =>
  target === "usdc" ? usdcDomain(chain.runtime(p)) : {
    name: target === "batched" ? BATCHED_DOMAIN_NAME : GATEWAY_DOMAIN_NAME,
    version: target === "batched" ? BATCHED_DOMAIN_VERSION : GATEWAY_DOMAIN_VERSION,
    chainId: chain.runtime(p).chainId,
    verifyingContract: gatewayVault(chain, p),
  } as const;

/** Whether `account` holds code (a contract, or an EOA that delegates its code: EIP-7702). */
export async function hasCode(
  chain: GatewayChain,
  p: ProfileName,
  account: `0x${string}`,
): Promise<boolean> {
  const code = await gatewayClient(chain, p).getCode({ address: account });
  return (code ?? "0x") !== "0x";
}

const ERC1271_MAGIC = "0x1626ba7e";
const ERC1271_ABI = [{
  type: "function",
  name: "isValidSignature",
  stateMutability: "view",
  inputs: [{ name: "hash", type: "bytes32" }, { name: "signature", type: "bytes" }],
  outputs: [{ name: "", type: "bytes4" }],
}] as const;

/** What `account`'s code answers ERC-1271's `isValidSignature(hash, signature)`: accepted or not. */
export async function codeAccepts(
  chain: GatewayChain,
  p: ProfileName,
  account: `0x${string}`,
  hash: Hex,
  signature: Hex,
): Promise<boolean> {
  try {
    const answer = await gatewayClient(chain, p).readContract({
      address: account,
      abi: ERC1271_ABI,
      functionName: "isValidSignature",
      args: [hash, signature],
    });
    return answer.toLowerCase() === ERC1271_MAGIC;
  } catch {
    return false;
  }
}

/** Whether `signature` is `a.from`'s TransferWithAuthorization (EOA or ERC-1271). */
export async function transferSignedBy(
  chain: GatewayChain,
  p: ProfileName,
  target: AuthorizationTarget,
  a: TransferAuthorization,
  signature: Hex,
): Promise<boolean> {
  return (await transferSigner(chain, p, target, a, signature)) !== null;
}

/**
 * Who vouched for `signature` as `a.from`'s TransferWithAuthorization: "key" when it recovers to
 * `a.from` here (an EOA's ECDSA, which nothing can take back), "node" when the node's check said
 * so (an ERC-1271 account, or any other form: what the account answers may change before a
 * settlement asks again), null when neither did.
 */
export async function transferSigner(
  chain: GatewayChain,
  p: ProfileName,
  target: AuthorizationTarget,
  a: TransferAuthorization,
  signature: Hex,
): Promise<"key" | "node" | null> {
  const typed = {
    domain: gatewayDomain(chain, p, target),
    types: TRANSFER_WITH_AUTHORIZATION_TYPES,
    primaryType: "TransferWithAuthorization" as const,
    message: a,
  };
  // The token (USDC v2.2, OpenZeppelin 5) asks an address with code only through ERC-1271, an
  // EOA that delegates its code (EIP-7702) included: on its domain (`exact`, settled one call at
  // a time) one eth_getCode first, and for an address with code its answer alone (the node's
  // verifyTypedData would take the key's signature first). The vault takes a key's signature
  // whatever code the address holds: its domains skip this.
  if (target === "usdc" && await hasCode(chain, p, a.from).catch(() => false)) {
    return await codeAccepts(chain, p, a.from, hashTypedData(typed), signature) ? "node" : null;
  }
  // An EOA's signature is checked here (no RPC; authorization-threads.ts); anything else (an
  // ERC-1271 smart account) by the node, as the contract will: one eth_call.
  if (
    typed.domain.name !== undefined &&
    await checkSignedByEoa(typed.domain, a, signature)
  ) return "key";
  try {
    // The vault checks with OpenZeppelin's SignatureChecker, whose ECDSA refuses a high s: the
    // malleated twin of a good signature recovers its signer (the node's check would accept it)
    // but would fail its settlement. Only an ERC-1271 account may still accept such a form.
    if (hasHighS(signature)) {
      const code = await gatewayClient(chain, p).getCode({ address: a.from });
      if ((code ?? "0x") === "0x") return null;
    }
    const ok = await gatewayClient(chain, p).verifyTypedData({
      address: a.from,
      domain: gatewayDomain(chain, p, target),
      types: TRANSFER_WITH_AUTHORIZATION_TYPES,
      primaryType: "TransferWithAuthorization",
      message: a,
      signature,
    });
    return ok ? "node" : null;
  } catch {
    return null;
  }
}

/**
 * Whether the contract already used `nonce` for `from`. The reads of a client that arrive while
 * one of its requests is in flight go together in its next request, one JSON-RPC batch of
 * `eth_call`s (`nonceReads`): a paid call's read costs a share of one request, not a request.
 */
export async function authorizationNonceUsed(
  chain: GatewayChain,
  p: ProfileName,
  target: AuthorizationTarget,
  from: `0x${string}`,
  nonce: Hex,
): Promise<boolean> {
  const client = gatewayClient(chain, p);
  const to = target === "usdc" ? chain.contract(p, "TestUSDC") : gatewayVault(chain, p);
  const alone = () =>
    client.readContract({
      address: to,
      abi: target === "usdc" ? TestUSDC.abi : GatewayVault.abi,
      functionName: "authorizationState",
      args: [from, nonce],
    });
  const url = (client.transport as { url?: string }).url;
  if (!url) return await alone();
  return await nonceReads(client, {
    url,
    to,
    data: `0x${AUTHORIZATION_STATE}${addressWord(from)}${bytes32Word(nonce)}`,
    alone,
  });
}

/** `authorizationState(address,bytes32)`: the same selector on the token and the vault. */
const AUTHORIZATION_STATE = toFunctionSelector("authorizationState(address,bytes32)").slice(2);

/**
 * One JSON-RPC batch request for a group of nonce reads (src/db/group-commit.ts's pattern). A read
 * the batch did not answer with a result (the request failed, the node refused the batch, or that
 * call's own error) is read again alone through viem, which throws its error as before.
 */
const nonceReads = groupCommit<
  { url: string; to: string; data: string; alone: () => Promise<boolean> },
  boolean
>(async (group) => {
  const results: (string | null)[] = group.map(() => null);
  try {
    const res = await fetch(group[0].item.url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(group.map((w, id) => ({
        jsonrpc: "2.0",
        id,
        method: "eth_call",
        params: [{ to: w.item.to, data: w.item.data }, "latest"],
      }))),
      signal: AbortSignal.timeout(15_000),
    });
    const answers = res.ok ? await res.json() : await res.body?.cancel();
    if (Array.isArray(answers)) {
      for (const a of answers) {
        if (
          Number.isInteger(a?.id) && a.id >= 0 && a.id < group.length &&
          typeof a.result === "string" && /^0x[0-9a-fA-F]{64}$/.test(a.result)
        ) results[a.id] = a.result;
      }
    }
  } catch {
    // The request failed as a whole: each read goes again alone below.
  }
  await Promise.all(group.map(async (w, i) => {
    const r = results[i];
    if (r !== null) return w.resolve(BigInt(r) !== 0n);
    try {
      w.resolve(await w.item.alone());
    } catch (e) {
      w.reject(e);
    }
  }));
}, { max: 256 });

/**
 * The transaction that paid exactly this authorization (`from` to `to`, `value`, its nonce): on
 * the vault its `PaymentTransferred`, on the token the `Transfer` beside its `AuthorizationUsed`.
 * A nonce spent by another payment of the payer (another payee or amount, signed with the same
 * nonce) is not this one's payment: null.
 */
export async function paidWithNonce(
  chain: GatewayChain,
  p: ProfileName,
  target: AuthorizationTarget,
  pay: { from: `0x${string}`; to: `0x${string}`; value: bigint; nonce: Hex },
): Promise<Hex | null> {
  const client = gatewayClient(chain, p);
  if (target !== "usdc") {
    const logs = await client.getContractEvents({
      address: gatewayVault(chain, p),
      abi: GatewayVault.abi,
      eventName: "PaymentTransferred",
      args: { from: pay.from, to: pay.to, nonce: pay.nonce },
      fromBlock: 0n,
    });
    return logs.find((l) => !l.removed && l.args.value === pay.value)?.transactionHash ?? null;
  }
  const usdc = chain.contract(p, "TestUSDC");
  const used = await client.getContractEvents({
    address: usdc,
    abi: TestUSDC.abi,
    eventName: "AuthorizationUsed",
    args: { authorizer: pay.from, nonce: pay.nonce },
    fromBlock: 0n,
  });
  const hit = used.find((l) => !l.removed);
  if (!hit) return null;
  const transfers = await client.getContractEvents({
    address: usdc,
    abi: TestUSDC.abi,
    eventName: "Transfer",
    args: { from: pay.from, to: pay.to },
    blockHash: hit.blockHash,
  });
  const paid = transfers.some((t) =>
    !t.removed && t.transactionHash === hit.transactionHash && t.args.value === pay.value
  );
  return paid ? hit.transactionHash : null;
}

/**
 * A managed wallet's signature of a gateway payment authorization: its own (`a.from` is the
 * wallet), or, for an agent's smart account, its owner's (the account answers ERC-1271 for
 * what its owner signs). Signs only; nothing is sent.
 */
export async function signAuthorization(
  chain: GatewayChain,
  p: ProfileName,
  req: { signerWalletId: string; authorization: TransferAuthorization },
): Promise<Hex> {
  const account = await chain.walletAccount(req.signerWalletId);
  return await account.signTypedData({
    domain: gatewayDomain(chain, p, "gateway"),
    types: TRANSFER_WITH_AUTHORIZATION_TYPES,
    primaryType: "TransferWithAuthorization",
    message: req.authorization,
  });
}
