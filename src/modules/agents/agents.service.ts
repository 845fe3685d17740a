/**
 * ERC-8004 agents. Deploying one makes a managed owner wallet for it (one of the merchant's
 * wallets), the agent's CREATE2 smart account owned by that wallet, and its registration in the
 * identity registry with the account proven as the agent wallet. Agents live on the x402 chain
 * (testnet), where they pay, for every credential (docs/decisions.md). The record's payment figures come from the agent's
 * stored payment history (agents.payments.ts); the registry holds the authoritative feedback.
 */
import { sha256 } from "../../codec.ts";
import type { Deps } from "../../deps.ts";
import { DomainError } from "../../errors.ts";
import { checksum, lower } from "../../chain/address.ts";
import { accountSalt } from "../../chain/agents.ts";
import { ChainRevertError } from "../../chain/errors.ts";
import type { ProfileName } from "../../chain/profiles.ts";
import { formatUsdc, usdcToNumber } from "../../money.ts";
import type { MerchantRow } from "../merchants/merchants.types.ts";
import { canonicalBody } from "../../http/canonical-json.ts";
import { createManagedWallet } from "../wallets/wallets.service.ts";
import * as repo from "./agents.repo.ts";
import { agentPayments } from "./agents.payments.ts";
import type { DeployAgentInput } from "./agents.schemas.ts";
import {
  agentIdentifier,
  type AgentRow,
  manifestUri,
  namePattern,
  parseAgentId,
  RECENT_PAYMENTS,
  reputationEstimate,
} from "./agents.rules.ts";

export type { AgentRow } from "./agents.rules.ts";

/**
 * The chain agents are registered on: the x402 chain (testnet), whatever the credential's
 * environment (agents live on testnet by design, where they pay); never production.
 */
export function agentProfile(deps: Deps): ProfileName {
  if (!deps.chain.has("testnet")) throw new DomainError("chain_not_configured");
  return "testnet";
}

export async function deployAgent(
  deps: Deps,
  m: MerchantRow,
  input: DeployAgentInput,
  requestKey?: string,
) {
  const row = await beginAgent(deps, m, input, requestKey);
  const { agent, registerTxHash } = await finishAgent(deps, row);
  const profile = deps.chain.profileOf(agent.chainId);
  return {
    agent: await agentView(deps, agent),
    agentId: agentIdentifier(agent.chainId, agent.tokenId!),
    txHash: registerTxHash,
    explorerUrl: deps.chain.explorerTxUrl(profile, registerTxHash),
  };
}

/**
 * The owner wallet and the PROVISIONING row, before any transaction (exported for the resume
 * test, which stops a deploy here).
 */
export async function beginAgent(
  deps: Deps,
  m: MerchantRow,
  input: DeployAgentInput,
  requestKey?: string,
  /** Crash tests: runs between the owner wallet and the row, inside their transaction. */
  hooks: { beforeInsert?: () => Promise<void> } = {},
) {
  const profile = agentProfile(deps);
  // With an Idempotency-Key the row's id comes from the key and the request, so a retry the
  // idempotency layer did not store (after a 5xx or a timeout released it) finds the first
  // deploy and finishes it instead of creating a second agent.
  const id = requestKey === undefined ? crypto.randomUUID() : requestId(m.id, requestKey, input);
  const earlier = requestKey === undefined ? null : await repo.byId(deps.sql, id);
  if (earlier) return earlier;
  // The owner wallet and the row commit together: a process killed between them left a wallet
  // no agent owns, one more in the merchant's list at each retry (an outside audit, 2026-12-01).
  return await deps.sql.begin(async (tx) => {
    const owner = await createManagedWallet(deps, m.id, {
      label: `Agent ${input.name} (owner)`,
      tx,
    });
    const salt = accountSalt(id);
    const sca = await deps.chain.agents.accountAddress(profile, owner.address, salt);
    await hooks.beforeInsert?.();
    return await repo.insert(tx, {
      id,
      merchantId: m.id,
      chainId: deps.chain.chainId(profile),
      name: input.name,
      metadataUri: input.metadataURI ?? manifestUri(input.manifest!),
      manifest: input.manifest ?? null,
      ownerWalletId: owner.walletId,
      ownerAddress: lower(owner.address),
      scaAddress: lower(sca),
      salt,
      identityRegistry: registryOf(deps, profile),
      now: deps.clock.now(),
    });
  });
}

/**
 * The identity registry agents are registered in on a chain (lowercase). A row belongs to the
 * registry it was registered in: after a switch (to a configured registry, or a replaced one) the
 * old registry's token ids name other agents, so lookups by token id only see rows of this one.
 */
function registryOf(deps: Deps, profile: ProfileName): string {
  return lower(deps.chain.agents.identityAddress(profile));
}

/** A UUID (v4 layout) derived from the merchant, the Idempotency-Key and the request's content. */
function requestId(merchantId: string, requestKey: string, input: DeployAgentInput): string {
  // The request's parameters, not its bytes: a manifest's keys in another order are the same
  // request, as the idempotency layer already judged it (a retry so sent registered a second
  // agent: an outside audit, 2026-12-01).
  const h = sha256(
    ["agent-deploy", merchantId, requestKey, canonicalBody(JSON.stringify(input))].join("\n"),
  );
  const variant = ((parseInt(h[16], 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${
    h.slice(20, 32)
  }`;
}

/**
 * Account, registration and agent wallet on chain, then the row ACTIVE_AGENT_PROVISIONED. Every
 * step is an intent named after the row, so running it again (a resumed deploy) finishes what is
 * missing and repeats nothing.
 */
async function finishAgent(deps: Deps, row: AgentRow) {
  const d = await deps.chain.agents.deploy(deps.chain.profileOf(row.chainId), {
    ownerWalletId: row.ownerWalletId,
    owner: row.ownerAddress as `0x${string}`,
    salt: row.salt as `0x${string}`,
    agentURI: row.metadataUri,
    name: row.name,
    intentPrefix: `agent:${row.id}`,
  });
  const agent = await repo.markProvisioned(deps.sql, row.id, {
    tokenId: d.tokenId.toString(),
    registerTxHash: d.registerTx.txHash,
    now: deps.clock.now(),
  });
  return { agent, registerTxHash: d.registerTx.txHash };
}

/**
 * Finishes deploys a crash or a timeout left PROVISIONING for longer than `olderThanMs` (the
 * per-minute sweep). Returns how many it finished; a failure is logged and retried next time.
 */
export async function resumeProvisioning(
  deps: Deps,
  opts: { olderThanMs: number },
): Promise<number> {
  const before = new Date(deps.clock.now().getTime() - opts.olderThanMs);
  let finished = 0;
  const registries = deps.chain.profiles().flatMap((p) => {
    try {
      return [registryOf(deps, p)];
    } catch {
      return []; // no identity registry on this chain
    }
  });
  for (const row of await repo.provisioning(deps.sql, before, 20, registries)) {
    try {
      await finishAgent(deps, row);
      finished++;
    } catch (e) {
      deps.log.warn("agent deploy not resumed yet", { agent: row.id, error: e });
    }
  }
  return finished;
}

/** The spec's Agent resource (plus the full identifier, chain and registration). */
export async function agentView(deps: Deps, a: AgentRow) {
  const profile = deps.chain.profileOf(a.chainId);
  const tokenId = a.tokenId ?? "";
  const [balance, history] = await Promise.all([
    deps.chain.usdcBalance(profile, a.scaAddress as `0x${string}`),
    agentPayments(deps, agentIdentifier(a.chainId, tokenId), { recent: RECENT_PAYMENTS }),
  ]);
  return {
    name: a.name,
    tokenId,
    agentId: agentIdentifier(a.chainId, tokenId),
    scaAddress: checksum(a.scaAddress),
    managedWalletId: a.ownerWalletId,
    ownerNode: checksum(a.ownerAddress),
    metadataURI: a.metadataUri,
    status: a.status,
    usdcBalance: formatUsdc(balance, { decimals: "fixed" }),
    reputation: reputationEstimate(history),
    recentPayments: history.recent.slice(0, RECENT_PAYMENTS).map((p) => ({
      id: p.id,
      amount: usdcToNumber(p.amount),
      status: p.status,
      timestamp: p.timestamp.toISOString(),
    })),
    totalPaid: usdcToNumber(history.settledAmount),
    paymentCount: history.count,
    chain: profile,
    registerTxHash: a.registerTxHash,
    createdAt: a.createdAt.toISOString(),
  };
}
export type AgentView = Awaited<ReturnType<typeof agentView>>;

/**
 * The spec's "basic agent record" the public lookup by smart account answers: who the agent is
 * and where (its identity, account, owner and registration), nothing about its money: no owner
 * wallet id, no balance, no payments or reputation. What it shows is on chain for anyone anyway.
 */
export function agentBasicView(deps: Deps, a: AgentRow) {
  const tokenId = a.tokenId ?? "";
  return {
    name: a.name,
    tokenId,
    agentId: agentIdentifier(a.chainId, tokenId),
    scaAddress: checksum(a.scaAddress),
    ownerNode: checksum(a.ownerAddress),
    metadataURI: a.metadataUri,
    status: a.status,
    chain: deps.chain.profileOf(a.chainId),
  };
}
export type AgentBasicView = ReturnType<typeof agentBasicView>;

/**
 * GET /api/agent/status. A query of `scaAddress` alone finds any merchant's agent: the basic
 * record, or the full one when the caller's key is its merchant's (`merchant` null: no key
 * given). Any other query: the merchant's agents matching every filter given, full records.
 * No match: agent_not_found.
 */
export async function findAgents(
  deps: Deps,
  merchant: MerchantRow | null,
  q: { scaAddress?: string; tokenId?: string; name?: string },
): Promise<(AgentView | AgentBasicView)[]> {
  const registry = registryOf(deps, agentProfile(deps));
  const bare = q.scaAddress !== undefined && q.tokenId === undefined && q.name === undefined;
  if (bare || !merchant) {
    const rows = await repo.findBySca(deps.sql, q.scaAddress!, registry);
    if (rows.length === 0) throw new DomainError("agent_not_found");
    return await Promise.all(
      rows.map((r) =>
        merchant && r.merchantId === merchant.id ? agentView(deps, r) : agentBasicView(deps, r)
      ),
    );
  }
  const rows = await repo.search(deps.sql, merchant.id, registry, {
    scaAddress: q.scaAddress,
    tokenId: q.tokenId,
    namePattern: q.name === undefined ? undefined : namePattern(q.name),
    limit: 100,
  });
  if (rows.length === 0) throw new DomainError("agent_not_found");
  return await Promise.all(rows.map((r) => agentView(deps, r)));
}

/** One of the merchant's agents by token id (on the agents' chain) or full identifier. */
export async function merchantAgent(
  deps: Deps,
  m: MerchantRow,
  agentId: string,
): Promise<AgentRow> {
  const id = parseAgentId(agentId, { bare: true });
  const profile = agentProfile(deps);
  if (!id || (id.chainId !== null && id.chainId !== deps.chain.chainId(profile))) {
    throw new DomainError("agent_not_found");
  }
  const row = await tokenRow(deps, profile, id.tokenId);
  if (!row || row.merchantId !== m.id) throw new DomainError("agent_not_found");
  return row;
}

/**
 * One of the merchant's provisioned agents by identifier (full or bare token id on the agents'
 * chain) or by smart account; null for anything else (another merchant's, another chain's, a
 * malformed value, one still provisioning).
 */
export async function ownAgent(
  deps: Deps,
  merchantId: string,
  by: { agentId: string } | { account: string },
): Promise<AgentRow | null> {
  let row: AgentRow | null = null;
  const profile = agentProfile(deps);
  if ("account" in by) {
    if (!/^0x[0-9a-fA-F]{40}$/.test(by.account)) return null;
    [row] = await repo.search(deps.sql, merchantId, registryOf(deps, profile), {
      scaAddress: by.account,
      limit: 1,
    });
  } else {
    const id = parseAgentId(by.agentId, { bare: true });
    if (!id || (id.chainId !== null && id.chainId !== deps.chain.chainId(profile))) return null;
    row = await tokenRow(deps, profile, id.tokenId);
  }
  if (!row || row.merchantId !== merchantId || row.status !== "ACTIVE_AGENT_PROVISIONED") {
    return null;
  }
  return row;
}

/** GET /api/agent/reputation: the estimate from stored payments, beside the registry's view. */
export async function reputation(deps: Deps, m: MerchantRow, agentId: string) {
  const a = await merchantAgent(deps, m, agentId);
  const profile = deps.chain.profileOf(a.chainId);
  const id = agentIdentifier(a.chainId, a.tokenId!);
  const [history, onChain] = await Promise.all([
    agentPayments(deps, id, { recent: RECENT_PAYMENTS }),
    deps.chain.agents.summary(profile, BigInt(a.tokenId!)),
  ]);
  return {
    agent: {
      tokenId: a.tokenId!,
      name: a.name,
      scaAddress: checksum(a.scaAddress),
      status: a.status,
    },
    reputationSummary: {
      estimatedScore: reputationEstimate(history),
      totalPayments: history.count,
      successfulPayments: history.successCount,
      totalVolumeUSDC: usdcToNumber(history.settledAmount),
      reputationRegistryAddress: checksum(deps.chain.agents.reputationAddress(profile)),
      onChainFeedbackCount: Number(onChain.count),
      onChainAverage: Number(onChain.value),
    },
    recentPayments: history.recent.map((p) => ({
      id: p.id,
      amount: usdcToNumber(p.amount),
      status: p.status,
      timestamp: p.timestamp.toISOString(),
    })),
  };
}

/** The merchant's agents for the dashboard, newest first. */
export async function listAgents(deps: Deps, m: MerchantRow): Promise<AgentView[]> {
  const rows = await repo.search(deps.sql, m.id, registryOf(deps, agentProfile(deps)), {
    limit: 50,
  });
  return await Promise.all(rows.map((r) => agentView(deps, r)));
}

/** The registry's view of an agent (tests and operators comparing it with ours). */
export async function onChain(deps: Deps, a: AgentRow) {
  const profile = deps.chain.profileOf(a.chainId);
  return {
    identity: await deps.chain.agents.read(profile, BigInt(a.tokenId!)),
    accountOwner: await deps.chain.agents.accountOwner(profile, a.scaAddress as `0x${string}`),
  };
}

/** The agent an `8004:{chainId}:{tokenId}` identifier names, if we deployed it. */
export async function agentByIdentifier(deps: Deps, agentId: string): Promise<AgentRow | null> {
  const id = parseAgentId(agentId, { bare: false });
  const profile = agentProfile(deps);
  if (!id || id.chainId !== deps.chain.chainId(profile)) return null;
  const row = await tokenRow(deps, profile, id.tokenId);
  return row?.status === "ACTIVE_AGENT_PROVISIONED" ? row : null;
}

/** Our row of a token of the agents' chain's identity registry, if we deployed it. */
async function tokenRow(deps: Deps, profile: ProfileName, tokenId: string) {
  return await repo.findByToken(
    deps.sql,
    deps.chain.chainId(profile),
    registryOf(deps, profile),
    tokenId,
  );
}

/**
 * The agent wallet an `8004:{chainId}:{tokenId}` names on the agents' chain: the smart account of
 * an agent we deployed, else the registry's verified wallet of an agent registered directly on
 * chain (the registry is open). Null for another chain or an unknown token.
 */
export async function agentWallet(
  deps: Deps,
  agentId: string,
): Promise<{ profile: ProfileName; tokenId: bigint; wallet: `0x${string}` } | null> {
  const id = parseAgentId(agentId, { bare: false });
  const profile = agentProfile(deps);
  if (!id || id.chainId !== deps.chain.chainId(profile)) return null;
  const tokenId = BigInt(id.tokenId);
  const ours = await agentByIdentifier(deps, agentId);
  if (ours) return { profile, tokenId, wallet: ours.scaAddress as `0x${string}` };
  const wallet = await deps.chain.agents.wallet(profile, tokenId);
  return wallet ? { profile, tokenId, wallet } : null;
}

/**
 * The operator's feedback on one payment (value 100 settled, 0 failed; tag1 `x402`), once per
 * payment: the intent is keyed by the payment id, so a redelivered job finds the first feedback.
 */
export async function recordPaymentFeedback(
  deps: Deps,
  f: { paymentId: string; agentId: string; success: boolean; endpoint: string },
): Promise<void> {
  const a = await agentWallet(deps, f.agentId);
  if (!a) return;
  try {
    await deps.chain.agents.giveFeedback(a.profile, {
      tokenId: a.tokenId,
      success: f.success,
      endpoint: f.endpoint,
      paymentId: f.paymentId,
    });
  } catch (e) {
    // Refused at estimation (nothing sent): the registry's answer will not change on a retry
    // (the operator may not rate an agent it is approved for).
    if (!(e instanceof ChainRevertError) || e.txHash) throw e;
    deps.log.warn("agent feedback refused by the registry", {
      payment: f.paymentId,
      agent: f.agentId,
      reason: e.reason,
    });
  }
}
