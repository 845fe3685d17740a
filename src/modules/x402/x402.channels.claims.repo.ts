/** SQL for the batch-settlement claim transactions (x402_channel_claims and their rows). */
import type { Db, Sql } from "../../db/client.ts";
import type { ChannelTerms } from "./x402.channels.rules.ts";
import { statusIn } from "../../db/by-id.ts";
import { countClaimed } from "./x402.totals.repo.ts";

/**
 * `claim`: the claim job's batch of many channels; `refund`: a cooperative refund, claiming its
 * channel first; `voucher`: one channel's voucher claimed before its call is answered (a channel
 * without a payer authorizer, x402.channels.claims.ts).
 */
export type ClaimKind = "claim" | "refund" | "voucher";

export interface ClaimRecord {
  id: string;
  chainId: number;
  kind: ClaimKind;
  status: "pending" | "confirmed" | "failed";
  channelId: `0x${string}` | null;
  refundAmount: bigint | null;
  refundNonce: bigint | null;
  txHash: string | null;
}

export interface ClaimRowRecord {
  channelId: `0x${string}`;
  maxClaimable: bigint;
  signature: `0x${string}`;
  totalClaimed: bigint;
  terms: ChannelTerms;
}

/**
 * Records a claim transaction and its rows before anything is sent; the record. Null when a claim
 * batch is already in flight on the chain (`kind` claim: one at a time).
 */
export async function createClaim(sql: Sql, c: {
  id: string;
  chainId: number;
  kind: ClaimKind;
  rows: { channelId: string; maxClaimable: bigint; signature: string; totalClaimed: bigint }[];
  /** A refund's channel. */
  channelId?: string;
  refundAmount?: bigint;
  refundNonce?: bigint;
  now: Date;
}): Promise<ClaimRecord | null> {
  return await sql.begin(async (tx) => {
    const [made] = await tx<ClaimRecord[]>`
      insert into x402_channel_claims (id, chain_id, kind, status, channel_id, refund_amount,
        refund_nonce, created_at)
      values (${c.id}, ${c.chainId}, ${c.kind}, 'pending', ${c.channelId ?? null},
        ${c.refundAmount ?? null}, ${c.refundNonce ?? null}, ${c.now})
      on conflict do nothing
      returning id, chain_id, kind, status, channel_id, refund_amount, refund_nonce, tx_hash`;
    if (!made) return null;
    for (const r of c.rows) {
      await tx`
        insert into x402_channel_claim_rows (claim_id, channel_id, max_claimable, signature,
          total_claimed)
        values (${c.id}, ${r.channelId}, ${r.maxClaimable}, ${r.signature}, ${r.totalClaimed})`;
    }
    return made;
  });
}

/**
 * Claims left pending: the claim job's own batches (one round at a time, so any pending one is a
 * stopped round's), and a request's refund or voucher claim once it is older than `staleBefore`
 * (the request that made it is gone; a live one is finishing it itself).
 */
export async function pendingClaims(
  sql: Db,
  chainId: number,
  staleBefore: Date,
): Promise<ClaimRecord[]> {
  return await sql<ClaimRecord[]>`
    select id, chain_id, kind, status, channel_id, refund_amount, refund_nonce, tx_hash
    from x402_channel_claims where chain_id = ${chainId} and status = 'pending'
      and (kind = 'claim' or created_at < ${staleBefore})
    order by created_at`;
}

export async function claimRows(sql: Db, claimId: string): Promise<ClaimRowRecord[]> {
  const rows = await sql<(ClaimRowRecord & ChannelTerms)[]>`
    select r.channel_id, r.max_claimable, r.signature, r.total_claimed, c.payer,
      c.payer_authorizer, c.receiver, c.receiver_authorizer, c.token, c.withdraw_delay, c.salt
    from x402_channel_claim_rows r join x402_channels c using (channel_id)
    where r.claim_id = ${claimId} order by r.channel_id`;
  return rows.map((r) => ({
    channelId: r.channelId,
    maxClaimable: r.maxClaimable,
    signature: r.signature,
    totalClaimed: r.totalClaimed,
    terms: {
      payer: r.payer,
      payerAuthorizer: r.payerAuthorizer,
      receiver: r.receiver,
      receiverAuthorizer: r.receiverAuthorizer,
      token: r.token,
      withdrawDelay: r.withdrawDelay,
      salt: r.salt,
    },
  }));
}

/**
 * The claim was mined: its channels' claimed totals reach its rows, and it counts the calls it
 * collected. A refund's channel also gives back what was refunded (`refunded`, read from the
 * chain). Returns how many charges it settled.
 */
export async function confirmClaim(sql: Sql, c: {
  id: string;
  txHash: string;
  gasUsed: bigint | null;
  now: Date;
}): Promise<number> {
  return await sql.begin(async (tx) => {
    // Confirmed once: a second finisher of the same transaction (a round and the request that
    // sent it) counts nothing again.
    const [claim] = await tx<{ status: string; charges: number }[]>`
      select status, charges from x402_channel_claims where id = ${c.id} for update`;
    if (claim?.status === "confirmed") return claim.charges;
    const [{ n }] = await tx<{ n: number }[]>`
      select count(*)::int as n
      from x402_channel_claim_rows r
      join x402_channels c using (channel_id)
      join x402_channel_charges g on g.channel_id = r.channel_id
        and g.cumulative > c.claimed and g.cumulative <= r.total_claimed
      where r.claim_id = ${c.id}`;
    const raised = await tx<{ channelId: string }[]>`
      update x402_channels c set claimed = greatest(c.claimed, r.total_claimed)
      from x402_channel_claim_rows r
      where r.claim_id = ${c.id} and r.channel_id = c.channel_id
      returning c.channel_id`;
    await countClaimed(tx, raised.map((r) => r.channelId));
    await tx`
      update x402_channel_claims set status = 'confirmed', tx_hash = ${c.txHash},
        gas_used = ${c.gasUsed}, charges = ${n}, finished_at = ${c.now}
      where id = ${c.id}`;
    return n;
  });
}

export async function failClaim(sql: Db, id: string, error: string, now: Date): Promise<void> {
  await sql`
    update x402_channel_claims set status = 'failed', error = ${error.slice(0, 500)},
      finished_at = ${now}
    where id = ${id} and ${statusIn(sql, "status", ["pending"])}`;
}

/** The confirmed claim of `kind` that covered a channel up to at least `total`, if any. */
export async function claimCovering(sql: Db, channelId: string, total: bigint) {
  const [row] = await sql<{ id: string; txHash: string }[]>`
    select c.id, c.tx_hash from x402_channel_claims c
    join x402_channel_claim_rows r on r.claim_id = c.id
    where r.channel_id = ${channelId} and r.total_claimed >= ${total} and c.status = 'confirmed'
    order by c.finished_at limit 1`;
  return row ?? null;
}
