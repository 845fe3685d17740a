/**
 * x402 pay-per-call: the gateway proof's verification, and POST /api/x402/pay's
 * verify → upstream → settle. A proof is claimed in our table (payer, nonce) before the upstream
 * is called, so a replay or a concurrent duplicate is refused before anything is called or
 * broadcast; an upstream failure marks the attempt FAILED and releases the nonce (nothing was
 * charged); the settlement is one intent per (payer, nonce) in the sender.
 */
import type { Deps } from "../../deps.ts";
import { DomainError } from "../../errors.ts";
import { checksum, lower } from "../../chain/address.ts";
import { formatUsdcFixed as usdc } from "../../money.ts";
import type { MerchantRow } from "../merchants/merchants.types.ts";
import * as repo from "./x402.repo.ts";
import {
  authorizationTerms,
  checkWindow,
  decodeGatewayProof,
  type GatewayProof,
  type HttpMethod,
  nowSeconds,
  upstreamRequest,
  windowHint,
} from "./x402.rules.ts";
import {
  callUpstream,
  upstreamData,
  upstreamRefusal,
  type UpstreamResult,
} from "./x402.upstream.ts";
import type { Address, AgentPayments, X402PaymentRecord } from "./x402.types.ts";
import { upstreamTimeoutMs, type X402Deps, x402Profile, ZERO_ADDRESS } from "./x402.context.ts";
import { cachedListing, paymentRequirements } from "./x402.listings.ts";
import { settleOne } from "./x402.settler.ts";
import { paidSql, syncAccount } from "./x402.batched.mirror.ts";
import { MIRROR_TTL_S } from "./x402.batched.rules.ts";
import { groupCommit } from "../../db/group-commit.ts";
import { reconcileAttempt } from "./x402.reconcile.ts";

export type { ListingRow } from "./x402.repo.ts";

export {
  UPSTREAM_TIMEOUT_MS,
  X402_PROFILE,
  type X402Deps,
  x402Profile,
  ZERO_ADDRESS,
} from "./x402.context.ts";
export {
  createListing,
  getListing,
  listingView,
  listListings,
  merchantListings,
  paymentRequirements,
} from "./x402.listings.ts";
/** For /metrics: what deferred settlement has waiting (x402.batched.views.ts). */
export { settlementStats } from "./x402.batched.views.ts";

// ---- proofs ---------------------------------------------------------------------------------

export interface VerifiedProof {
  proof: GatewayProof;
  payer: Address;
  chainId: number;
}

/** Format, network, window and signature; throws the 403 of what is wrong. */
export async function checkProof(deps: Deps, text: string): Promise<VerifiedProof> {
  const decoded = decodeGatewayProof(text);
  if (!decoded.ok) throw new DomainError("x402_proof_invalid", { hint: decoded.reason });
  const profile = x402Profile(deps);
  const chainId = deps.chain.chainId(profile);
  if (decoded.chainId !== chainId) {
    throw new DomainError("x402_proof_invalid", { hint: `network must be eip155:${chainId}` });
  }
  const a = decoded.proof.payload.authorization;
  const window = checkWindow(a, nowSeconds(deps.clock.now()));
  if (window === "expired") throw new DomainError("x402_proof_expired");
  if (window !== "ok") throw new DomainError("x402_proof_invalid", { hint: windowHint(window) });
  if (a.value <= 0n) throw new DomainError("x402_proof_invalid", { hint: "value must be > 0" });
  const signed = await deps.chain.gateway.signedBy(
    profile,
    "gateway",
    a,
    decoded.proof.payload.signature,
  );
  if (!signed) {
    throw new DomainError("x402_proof_invalid", { hint: "signature is not the payer's" });
  }
  return { proof: decoded.proof, payer: a.from, chainId };
}

/** The payer's balances as the 400 answers show them. */
async function balanceDetails(deps: Deps, payer: Address, gatewayTotal: bigint) {
  const wallet = await deps.chain.usdcBalance(x402Profile(deps), payer);
  return { walletBalance: usdc(wallet), gatewayBalance: usdc(gatewayTotal) };
}

async function gatewayTotal(deps: Deps, payer: Address): Promise<bigint> {
  return await deps.chain.gateway.total(x402Profile(deps), payer);
}

/**
 * POST /api/x402/verify: whether the proof is good money for its payee. `valid` is true when it
 * is well-formed, on our network, signed by its `from`, and either already settled by us, or
 * within its window with an unused nonce and a gateway balance that covers it.
 */
export async function verifyForMerchant(deps: Deps, m: MerchantRow, text: string) {
  const invalid = {
    valid: false,
    settled: false,
    amount: "0.000000",
    payer: ZERO_ADDRESS,
    timestamp: 0,
  };
  const decoded = decodeGatewayProof(text);
  if (!decoded.ok) return invalid;
  const profile = x402Profile(deps);
  const a = decoded.proof.payload.authorization;
  const settledRow = decoded.chainId === deps.chain.chainId(profile)
    ? await repo.findSettled(deps.sql, {
      chainId: decoded.chainId,
      scheme: "gateway",
      payer: a.from,
      nonce: a.nonce,
    })
    : null;
  const ok = {
    amount: usdc(a.value),
    payer: checksum(a.from),
    timestamp: Number(a.validAfter),
  };
  const ours = (m.walletAddress && lower(m.walletAddress) === a.to) ||
    await repo.isSellerOf(deps.sql, m.id, a.to);
  if (!ours) return invalid;
  if (settledRow) return { valid: true, settled: true, ...ok };
  try {
    await checkProof(deps, text);
    const [used, total] = await Promise.all([
      deps.chain.gateway.nonceUsed(profile, "gateway", a.from, a.nonce),
      gatewayTotal(deps, a.from),
    ]);
    if (used || total < a.value) return invalid;
  } catch (e) {
    if (e instanceof DomainError && e.code.startsWith("x402_")) return invalid;
    throw e;
  }
  return { valid: true, settled: false, ...ok };
}

// ---- POST /api/x402/pay ---------------------------------------------------------------------

export interface PayInput {
  slug: string;
  method: HttpMethod;
  proof?: string;
  params?: Record<string, unknown>;
  agentId?: string;
  agentSignature?: string;
}

export type PayOutcome =
  | { paid: false; requirements: ReturnType<typeof paymentRequirements> }
  | {
    paid: true;
    data: unknown;
    settlement: { txHash: string; amount: string; listingSlug: string };
  };

export async function pay(deps: X402Deps, input: PayInput): Promise<PayOutcome> {
  const listing = await cachedListing(deps, input.slug);
  if (!listing.methods.includes(input.method)) {
    throw new DomainError("x402_method_not_allowed", {
      hint: `Allowed: ${listing.methods.join(", ")}`,
    });
  }
  if (!input.proof) return { paid: false, requirements: paymentRequirements(deps, listing) };
  const v = await checkProof(deps, input.proof);
  const a = v.proof.payload.authorization;
  if (a.value !== listing.price) {
    throw new DomainError("x402_proof_amount", { hint: `The price is ${usdc(listing.price)}` });
  }
  if (a.to !== listing.seller) throw new DomainError("x402_proof_payee");
  if (input.agentId !== undefined) {
    await deps.agents.verifyAgent({
      agentId: input.agentId,
      signature: input.agentSignature,
      payer: v.payer,
      proof: input.proof,
    });
  }
  const profile = x402Profile(deps);
  // The chain's nonce (a proof settled outside us) is read while the claim is written, not
  // before it: one round trip less on the call's path. A proof the chain has used is refused as
  // before, whatever the claim said, and a claim taken meanwhile is dropped without a trace.
  // No gateway balance at all is told apart from too little only when the claim is refused:
  // the claim's mirror decides either way, so a paid call reads the chain once, not twice.
  const [used, claimed] = await Promise.allSettled([
    deps.chain.gateway.nonceUsed(profile, "gateway", a.from, a.nonce),
    claim(deps, v, listing, input.agentId ?? null),
  ]);
  if (used.status === "rejected" || used.value) {
    if (claimed.status === "fulfilled") await repo.dropAttempt(deps.sql, claimed.value.id);
    if (used.status === "rejected") throw used.reason;
    throw new DomainError("x402_proof_used");
  }
  if (claimed.status === "rejected") throw claimed.reason;
  const attempt = claimed.value;
  const claimedAt = performance.now();
  await untilValid(deps, a.validAfter);

  const req = upstreamRequest(listing.upstreamUrl, input.method, input.params);
  const up = await callForAttempt(deps, attempt.id, req.url, {
    method: input.method,
    body: req.body,
  }, a.validBefore);
  const item = { attemptId: attempt.id, authorization: a, signature: v.proof.payload.signature };
  const txHash = await settleAttempt(
    deps,
    attempt.id,
    up.status,
    () => deps.settler ? deps.settler.settle(item) : settleOne(deps, item),
    { claimedAt },
  );
  return {
    paid: true,
    data: upstreamData(up),
    settlement: { txHash, amount: usdc(a.value), listingSlug: listing.slug },
  };
}

/**
 * A proof dated ahead of our clock (at most `PROOF_MAX_SKEW_SECONDS`: the payer's clock runs
 * ahead) is refused by the vault until its `validAfter`, and this call settles at once: its claim
 * (taken, so replays are refused meanwhile) waits until then before the upstream is called.
 * Calling it first served the seller's upstream for a settlement that reverted, once per retry
 * of the same proof (an outside audit, 2026-11-30).
 */
async function untilValid(deps: Deps, validAfter: bigint): Promise<void> {
  const ms = Number(validAfter) * 1000 - deps.clock.now().getTime();
  if (ms > 0) await new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Claims (payer, nonce) as PENDING, holding its value on the payer's mirror in the same statement
 * (x402.repo.ts `claimGatewayAttempts`, a group commit: the claims that arrive while one statement
 * is in flight share the next one; `claimGatewayAttempt` alone after a re-read of the balance):
 * the mirror row's lock serialises it with every other reservation of the payer (batched
 * charges included), so concurrent proofs cannot overspend, and a withdrawal in flight marks the
 * row (x402.batched.mirror.ts `whileWithdrawing`, taking the same lock), so a claim either counted
 * in the withdrawal's check or refused until it is mined. No payer claim (src/db/claims.ts) is
 * taken: the row lock already serialises what it did.
 */
async function claim(
  deps: X402Deps,
  v: VerifiedProof,
  listing: repo.ListingRow,
  agentId: string | null,
): Promise<X402PaymentRecord> {
  const a = v.proof.payload.authorization;
  const profile = x402Profile(deps);
  const attempt = (now: Date): repo.NewAttempt => ({
    listingId: listing.id,
    listingSlug: listing.slug,
    merchantId: listing.merchantId,
    scheme: "gateway",
    chainId: v.chainId,
    ...authorizationTerms(a),
    agentId,
    owner: deps.liveness?.id ?? null,
    now,
  });
  // The first try is a group commit; with no room (no mirror yet, a stale one, or too little),
  // the balance is read again once and the claim tried alone.
  let result = await claimGroup(deps.sql, { deps, attempt: attempt(deps.clock.now()) });
  if (result === "no_funds") {
    await syncAccount(deps, profile, a.from);
    const now = deps.clock.now();
    result = await repo.claimGatewayAttempt(paidSql(deps), attempt(now), freshSince(now));
  }
  // Held by an attempt whose process died (a retry after a kill -9): that attempt follows the
  // chain now, not at the next sweep, and the claim is tried again once it freed the nonce.
  if (result === "used" && await freedFromGoneOwner(deps, attempt(deps.clock.now()))) {
    const now = deps.clock.now();
    result = await repo.claimGatewayAttempt(paidSql(deps), attempt(now), freshSince(now));
  }
  if (result === "used") throw new DomainError("x402_proof_used");
  if (result === "no_funds") {
    const total = await gatewayTotal(deps, a.from);
    throw new DomainError(
      total === 0n ? "x402_no_gateway_balance" : "x402_insufficient_gateway_balance",
      await balanceDetails(deps, a.from, total),
    );
  }
  return result;
}

/**
 * The PENDING attempt holding this attempt's (payer, nonce), when its process is gone, follows
 * the chain (x402.reconcile.ts); true when it ended FAILED, giving the nonce back.
 */
async function freedFromGoneOwner(deps: X402Deps, a: repo.NewAttempt): Promise<boolean> {
  const held = await repo.pendingOfGoneOwner(deps.sql, a);
  return held !== null && await reconcileAttempt(deps, held) === "failed";
}

const freshSince = (now: Date) => new Date(now.getTime() - MIRROR_TTL_S * 1000);

type ClaimResult = X402PaymentRecord | "no_funds" | "used";

/**
 * Claims as a group commit (src/db/group-commit.ts): those that arrive while one statement is in
 * flight are written together by the next (repo.claimGatewayAttempts: one statement, at most 256;
 * a replay waits for the next statement, which finds it used, and one in the same statement would
 * be found used too). A group whose statement fails is tried again one attempt at a time. On the
 * paid path's connection (`deps.paidSql`: its prepared plan reads the payers' mirrors by key).
 */
const claimGroup = groupCommit<{ deps: Deps; attempt: repo.NewAttempt }, ClaimResult>(
  async (group) => {
    const { deps } = group[0].item;
    const now = deps.clock.now();
    const ids = group.map(() => crypto.randomUUID());
    const out = await repo.claimGatewayAttempts(
      paidSql(deps),
      group.map((w, i) => ({ ...w.item.attempt, id: ids[i] })),
      freshSince(now),
      now,
    );
    group.forEach((w, i) => w.resolve(out.get(ids[i]) ?? "no_funds"));
  },
  {
    max: 256,
    apart: ({ attempt: a }) => `${a.chainId}:${a.payer}:${a.nonce}`,
    alone: {
      write: ({ deps, attempt }) =>
        repo.claimGatewayAttempt(paidSql(deps), attempt, freshSince(deps.clock.now())),
      failed: (error, items) =>
        items[0].deps.log.warn("x402 claims: a group failed, tried one by one", {
          size: items.length,
          error,
        }),
    },
  },
);

/**
 * The upstream call of a claimed attempt (`/api/x402/pay`, `/x402/{slug}`'s `exact`): a failure
 * ends the attempt FAILED, which releases its nonce (nothing was charged), and refuses the call.
 */
export async function callForAttempt(
  deps: X402Deps,
  attemptId: string,
  url: URL,
  req: { method: string; body?: string; headers?: Record<string, string> },
  /** The paying authorization's: the upstream must answer in time to settle before it. */
  validBefore: bigint,
): Promise<Extract<UpstreamResult, { ok: true }>> {
  const up = await callUpstream(url, req, {
    timeoutMs: upstreamTimeoutMs(validBefore, deps.clock.now().getTime()),
    policy: deps.config.WEBHOOK_TARGETS,
  });
  if (up.ok) return up;
  await finish(deps, attemptId, {
    status: "FAILED",
    error: up.error,
    upstreamStatus: up.status ?? null,
  });
  throw upstreamRefusal(up);
}

/**
 * Settles a served attempt and ends it SUCCESS. A failure ends it FAILED, except a timeout: the
 * transaction may still be mined, so the attempt stays PENDING and its nonce is not offered
 * again until it is known.
 */
export async function settleAttempt(
  deps: X402Deps,
  attemptId: string,
  /** The upstream's answer (none for the facilitator's settle, which calls no upstream). */
  upstreamStatus: number | undefined,
  settle: () => Promise<string>,
  /** `claimedAt`: `performance.now()` when the attempt was claimed (the liveness fence). */
  opts: { claimedAt?: number } = {},
): Promise<string> {
  // This process may have been taken for dead since the claim (src/db/liveness.ts), its attempt
  // swept and its nonce given back: nothing is settled on it, and the attempt is given up.
  if (opts.claimedAt !== undefined && deps.liveness?.heldSince(opts.claimedAt) === false) {
    await finish(deps, attemptId, {
      status: "FAILED",
      error: "this process was out of touch with the database during the call: nothing charged",
      upstreamStatus,
    });
    throw new DomainError("x402_attempt_lapsed");
  }
  let txHash: string;
  try {
    txHash = await settle();
  } catch (e) {
    if (!(e instanceof DomainError && e.code === "chain_timeout")) {
      await finish(deps, attemptId, {
        status: "FAILED",
        error: `settlement: ${e instanceof Error ? e.message : String(e)}`.slice(0, 500),
        upstreamStatus,
      });
    }
    throw e;
  }
  const row = await settledGroup(paidSql(deps), {
    deps,
    item: { id: attemptId, upstreamStatus: upstreamStatus ?? null, txHash },
  });
  if (row) await recorded(deps, row);
  return txHash;
}

/**
 * Settled attempts as a group commit (src/db/group-commit.ts): those settled while one statement
 * is in flight (the calls one settlement transaction answers, say) are written together by the
 * next (repo.settleAttempts). A group whose statement fails is written one attempt at a time. On
 * the paid path's connection (`deps.paidSql`, no table scans): the prepared statement's cached
 * plan finds the attempts and the payers' mirrors by key however the tables grew.
 */
const settledGroup = groupCommit<
  { deps: X402Deps; item: { id: string; upstreamStatus: number | null; txHash: string } },
  X402PaymentRecord | null
>(async (group) => {
  const { deps } = group[0].item;
  const rows = await repo.settleAttempts(
    paidSql(deps),
    group.map((w) => w.item.item),
    deps.clock.now(),
  );
  const byId = new Map(rows.map((r) => [r.id, r]));
  for (const w of group) w.resolve(byId.get(w.item.item.id) ?? null);
}, {
  max: 256,
  alone: {
    write: async ({ deps, item: { id, upstreamStatus, txHash } }) =>
      await repo.finishAttempt(paidSql(deps), id, {
        status: "SUCCESS",
        upstreamStatus,
        txHash,
        now: deps.clock.now(),
      }) ?? null,
    failed: (error, items) =>
      items[0].deps.log.warn("x402 settled attempts: a group failed, written one by one", {
        size: items.length,
        error,
      }),
  },
});

/** Ends an attempt (SUCCESS or FAILED) and tells the agent port; the port cannot fail the call. */
export async function finish(
  deps: X402Deps,
  id: string,
  f: {
    status: "SUCCESS" | "FAILED";
    error?: string | null;
    upstreamStatus?: number | null;
    txHash?: string | null;
  },
): Promise<void> {
  const row = await repo.finishAttempt(deps.sql, id, { ...f, now: deps.clock.now() });
  await recorded(deps, row);
}

/** Tells the agent port of an ended attempt; the port cannot fail the call. */
async function recorded(deps: X402Deps, row: X402PaymentRecord): Promise<void> {
  try {
    await deps.agents.paymentRecorded(row);
  } catch (e) {
    deps.log.warn("x402 agent port failed on paymentRecorded", { id: row?.id, error: e });
  }
}

// ---- payments by agent (for the agents module) ----------------------------------------------

/** An agent's paid calls, newest first, with totals over all of them. */
export async function paymentsByAgent(
  deps: Pick<Deps, "sql">,
  agentId: string,
  opts: { limit?: number } = {},
): Promise<AgentPayments> {
  const limit = Math.min(Math.max(opts.limit ?? 20, 1), 500);
  const [payments, totals] = await Promise.all([
    repo.paymentsByAgent(deps.sql, agentId, limit),
    repo.agentTotals(deps.sql, agentId),
  ]);
  return { payments, totals };
}

export async function merchantPayments(deps: Deps, merchantId: string, limit = 20) {
  return await repo.recentCalls(deps.sql, merchantId, limit);
}
