/**
 * Gateway-balance charges for tests that drive the repository (x402.batched.repo.ts) directly:
 * a charge's terms, and a batch of what is owed settled as if its transaction paid every one.
 */
import type { Db, Sql } from "../../src/db/client.ts";
import {
  batchCharges,
  confirmBatch,
  createBatch,
  type NewCharge,
} from "../../src/modules/x402/x402.batched.repo.ts";

export const CHAIN = 31337;

/** `bytes` random bytes as 0x-prefixed hex. */
export function randomHex(bytes: number): string {
  return `0x${
    Array.from(
      crypto.getRandomValues(new Uint8Array(bytes)),
      (b) => b.toString(16).padStart(2, "0"),
    )
      .join("")
  }`;
}

/** A charge of `payer` (10 base units to a fixed payee, a fresh nonce), with `over` on top. */
export function testCharge(payer: string, now: Date, over: Partial<NewCharge> = {}): NewCharge {
  return {
    id: crypto.randomUUID(),
    chainId: CHAIN,
    listingId: null,
    listingSlug: "test",
    merchantId: null,
    payer,
    payee: "0x" + "5".repeat(40),
    amount: 10n,
    nonce: randomHex(32),
    validAfter: 0n,
    validBefore: 4_000_000_000n,
    domain: "batched",
    signature: randomHex(65),
    agentId: null,
    owner: null,
    now,
    ...over,
  };
}

/**
 * A batch of up to `max` owed charges built on `sql`, read back and confirmed as all paid in one
 * transaction; its size.
 */
export async function settleOwed(sql: Sql | Db, now: Date, max = 500): Promise<number> {
  const id = crypto.randomUUID();
  const size = await createBatch(sql as Sql, { id, chainId: CHAIN, max, now });
  const paid = await batchCharges(sql, id);
  if (paid.length !== size) throw new Error(`batch ${id}: ${paid.length} read of ${size}`);
  await confirmBatch(sql as Sql, {
    id,
    txHash: randomHex(32),
    block: 2n,
    gasUsed: null,
    paid: paid.map((c) => ({ id: c.id, txHash: randomHex(32), block: 2n })),
    refused: [],
    now,
  });
  return size;
}

/** A payer's mirrored vault balance, read from the chain just now (as a reservation needs it). */
export async function mirrorBalance(sql: Sql | Db, payer: string, balance: bigint, now: Date) {
  await sql`insert into x402_gateway_accounts (chain_id, payer, balance, synced_block, synced_at)
    values (${CHAIN}, ${payer}, ${balance}, 1, ${now})`;
}
