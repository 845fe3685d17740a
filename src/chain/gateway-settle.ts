/**
 * Relaying x402 payment authorizations from the relayer pool: one on the vault or the token, or
 * many gateway ones in one transaction, with which of them went through.
 */
import { encodeFunctionData, type Hex, toEventSelector, toFunctionSelector } from "viem";
import { GatewayVault, TestUSDC } from "./contracts/artifacts/index.ts";
import type { ProfileName } from "./profiles.ts";
import type { TxRow } from "./transactions.repo.ts";
import type { GatewayChain } from "./gateway.ts";
import {
  type AuthorizationTarget,
  gatewayClient,
  gatewayVault,
  type TransferAuthorization,
} from "./gateway-authorization.ts";
import { addressWord, bytes32Word, bytesTail, uintWord } from "./abi-words.ts";

/**
 * Relays a payment authorization from the operator and waits for the receipt: on the vault
 * (gateway balance) or on the token (the `exact` scheme's wallet-to-wallet transfer). Once
 * per `intentKey`.
 */
export async function settleAuthorization(
  chain: GatewayChain,
  p: ProfileName,
  target: AuthorizationTarget,
  req: { authorization: TransferAuthorization; signature: Hex; intentKey: string },
): Promise<TxRow> {
  const a = req.authorization;
  const args = [a.from, a.to, a.value, a.validAfter, a.validBefore, a.nonce] as const;
  const data = target === "usdc"
    ? encodeFunctionData({
      abi: TestUSDC.abi,
      functionName: "transferWithAuthorization",
      args: [...args, req.signature],
    })
    : encodeFunctionData({
      abi: GatewayVault.abi,
      functionName: "transferWithAuthorization",
      args: [...args, req.signature],
    });
  return await chain.send({
    profile: p,
    from: "relayer", // permissionless relay: one of the relayer pool (sender.ts)
    to: target === "usdc" ? chain.contract(p, "TestUSDC") : gatewayVault(chain, p),
    data,
    intentKey: req.intentKey,
  });
}

/**
 * Relays many gateway authorizations in one transaction (`transferWithAuthorizations`) and
 * waits for the receipt: which of them went through is read from its PaymentTransferred
 * logs (a failing one is skipped by the vault, the others still settle). Once per
 * `intentKey`.
 */
export async function settleAuthorizations(chain: GatewayChain, p: ProfileName, req: {
  items: SettlementItem[];
  intentKey: string;
  /** A gas limit to send with instead of the node's estimate (slow for a large batch). */
  gas?: bigint;
}): Promise<{ tx: TxRow; settled: boolean[] }> {
  const data = req.items.every((i) => i.domain) && await vaultSettlesByDomain(chain, p)
    ? encodeTransferWithAuthorizationsByDomain(req.items)
    : encodeTransferWithAuthorizations(req.items);
  const tx = await chain.send({
    profile: p,
    from: "relayer", // permissionless relay: one of the relayer pool (sender.ts)
    to: gatewayVault(chain, p),
    data,
    intentKey: req.intentKey,
    ...(req.gas ? { gas: req.gas } : {}),
  });
  // The logs came with the receipt the sender's watcher woke us with; asked for only when not.
  const logs = tx.logs ??
    (await gatewayClient(chain, p).getTransactionReceipt({ hash: tx.txHash as Hex })).logs;
  const paid = paidInLogs(logs, gatewayVault(chain, p));
  return {
    tx,
    settled: req.items.map((i) =>
      paid.has(`${i.authorization.from.toLowerCase()}:${i.authorization.nonce.toLowerCase()}`)
    ),
  };
}

const selectorOf = (name: string) => {
  const item = GatewayVault.abi.find((x) => "name" in x && x.name === name);
  if (!item) throw new Error(`GatewayVault has no ${name}`);
  return item.type === "event"
    ? toEventSelector(item)
    : toFunctionSelector(item as Parameters<typeof toFunctionSelector>[0]);
};
const BATCH_SELECTOR = selectorOf("transferWithAuthorizations").slice(2);
const BY_DOMAIN_SELECTOR = selectorOf("transferWithAuthorizationsByDomain").slice(2);
/** The dispatcher's push of that selector (PUSHn of its bytes without leading zeros). */
const BY_DOMAIN_PUSH = (() => {
  const bytes = BY_DOMAIN_SELECTOR.replace(/^(00)+/, "");
  return (0x5f + bytes.length / 2).toString(16) + bytes;
})();
const PAYMENT_TRANSFERRED = selectorOf("PaymentTransferred");

/**
 * One authorization of a settlement batch; `domain` is the EIP-712 domain it was signed under
 * (this vault's, or Circle's batched one), when the submitter knows it.
 */
export interface SettlementItem {
  authorization: TransferAuthorization;
  signature: Hex;
  domain?: "gateway" | "batched";
}

/** Whether a vault's code dispatches `transferWithAuthorizationsByDomain`. */
export function hasByDomainCall(code: string | undefined): boolean {
  return (code ?? "").toLowerCase().includes(BY_DOMAIN_PUSH);
}

/** Vaults known to have `transferWithAuthorizationsByDomain`, by chain and address. */
const byDomain = new Map<string, Promise<boolean>>();

/**
 * Whether the chain's vault has `transferWithAuthorizationsByDomain` (one signature check per
 * authorization). A vault deployed before it, and kept because it holds funds (deploy.ts) or
 * named by configuration, has only `transferWithAuthorizations`: its dispatcher holds no push of
 * the new selector. Read once per vault address.
 */
export function vaultSettlesByDomain(chain: GatewayChain, p: ProfileName): Promise<boolean> {
  const vault = gatewayVault(chain, p);
  const rt = chain.runtime(p);
  const key = `${rt.chainId}:${vault.toLowerCase()}`;
  let known = byDomain.get(key);
  if (!known) {
    known = rt.client.getCode({ address: vault }).then(hasByDomainCall);
    byDomain.set(key, known);
    known.catch(() => byDomain.delete(key));
  }
  return known;
}

/**
 * `transferWithAuthorizations(Authorization[])`'s call data, written directly: the same bytes as
 * viem's `encodeFunctionData` (tests/unit/gateway-settle.test.ts), in a few milliseconds for 500
 * authorizations instead of tens. The layout is the ABI's for a dynamic array of dynamic tuples:
 * the array's offset, then the array (`authorizationArray`).
 */
export function encodeTransferWithAuthorizations(items: SettlementItem[]): Hex {
  return `0x${BATCH_SELECTOR}${uintWord(32)}${authorizationArray(items)}` as Hex;
}

/**
 * `transferWithAuthorizationsByDomain(Authorization[] vaultSigned, Authorization[]
 * batchedSigned)`'s call data, written directly as `encodeTransferWithAuthorizations` (the same
 * bytes as viem's encoder: tests/unit/gateway-settle.test.ts): the two arrays' offsets, then each
 * array as there. The items signed under this vault's domain go in the first, Circle's batched
 * one's in the second.
 */
export function encodeTransferWithAuthorizationsByDomain(items: SettlementItem[]): Hex {
  const vault = authorizationArray(items.filter((i) => i.domain !== "batched"));
  const batched = authorizationArray(items.filter((i) => i.domain === "batched"));
  return `0x${BY_DOMAIN_SELECTOR}${uintWord(64)}${
    uintWord(64 + vault.length / 2)
  }${vault}${batched}` as Hex;
}

/**
 * An `Authorization[]` argument's encoding (without its own offset): the array's length, one
 * offset per tuple, then each tuple's six static words, the offset of its signature (7 words in),
 * the signature's length and its bytes padded to a word.
 */
function authorizationArray(items: SettlementItem[]): string {
  const tuples: string[] = [];
  const offsets: string[] = [];
  let at = 32 * items.length;
  for (const { authorization: a, signature } of items) {
    const tuple = addressWord(a.from) + addressWord(a.to) + uintWord(a.value) +
      uintWord(a.validAfter) + uintWord(a.validBefore) + bytes32Word(a.nonce) + uintWord(224) +
      bytesTail(signature);
    offsets.push(uintWord(at));
    tuples.push(tuple);
    at += tuple.length / 2;
  }
  return `${uintWord(items.length)}${offsets.join("")}${tuples.join("")}`;
}

/**
 * The (payer, nonce) pairs the vault paid, from a receipt's logs: its PaymentTransferred events
 * (`from`, `to` and `nonce` are all indexed, so read from the topics; nothing to decode).
 */
export function paidInLogs(
  logs: readonly { address: string; topics: readonly (string | null)[] }[],
  vault: string,
): Set<string> {
  const paid = new Set<string>();
  const at = vault.toLowerCase();
  for (const l of logs) {
    const t = l.topics;
    if (
      t.length !== 4 || t[0]?.toLowerCase() !== PAYMENT_TRANSFERRED ||
      l.address.toLowerCase() !== at
    ) continue;
    paid.add(`0x${t[1]!.slice(26).toLowerCase()}:${t[3]!.toLowerCase()}`);
  }
  return paid;
}
