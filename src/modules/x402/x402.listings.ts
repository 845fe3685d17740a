/** x402 listings: create, the public view, the merchant's with calls and revenue, the 402 terms. */
import type { Deps } from "../../deps.ts";
import { DomainError } from "../../errors.ts";
import { checksum, lower } from "../../chain/address.ts";
import { formatUsdcFixed as usdc } from "../../money.ts";
import type { MerchantRow } from "../merchants/merchants.types.ts";
import * as repo from "./x402.repo.ts";
import { listingTotals } from "./x402.totals.repo.ts";
import type { CreateListingInput } from "./x402.schemas.ts";
import { x402Profile } from "./x402.context.ts";

export async function createListing(deps: Deps, m: MerchantRow, input: CreateListingInput) {
  if (!m.walletAddress) throw new DomainError("payout_wallet_missing");
  const profile = x402Profile(deps);
  const row = await repo.insertListing(deps.sql, {
    merchantId: m.id,
    slug: input.slug,
    upstreamUrl: input.upstreamUrl,
    price: input.price,
    methods: input.methods,
    description: input.description,
    seller: lower(m.walletAddress),
    chainId: deps.chain.chainId(profile),
    now: deps.clock.now(),
  });
  if (!row) throw new DomainError("x402_slug_taken");
  return row;
}

export function listingView(l: repo.ListingRow) {
  return {
    slug: l.slug,
    price: usdc(l.price),
    methods: l.methods,
    description: l.description,
    seller: checksum(l.seller),
    network: `eip155:${l.chainId}`,
    createdAt: l.createdAt.toISOString(),
  };
}

export async function listListings(deps: Deps, opts: { merchantId?: string; limit?: number }) {
  return await repo.listListings(deps.sql, {
    merchantId: opts.merchantId,
    limit: opts.limit ?? 100,
  });
}

/** The merchant's listings with calls (settled), failures and revenue. */
export async function merchantListings(deps: Deps, merchantId: string) {
  const rows = await repo.listListings(deps.sql, { merchantId, limit: 100 });
  const ids = rows.map((r) => r.id);
  // Attempts of the exact and spec flows, and what the gateway balance and channels settled.
  const [attempts, settled] = await Promise.all([
    repo.listingStats(deps.sql, ids),
    listingTotals(deps.sql, ids),
  ]);
  const stats = new Map<string, { calls: number; failed: number; revenue: bigint }>();
  for (const s of [...attempts, ...settled]) {
    const e = stats.get(s.listingId) ?? { calls: 0, failed: 0, revenue: 0n };
    stats.set(s.listingId, {
      calls: e.calls + Number(s.calls),
      failed: e.failed + Number(s.failed),
      revenue: e.revenue + s.revenue,
    });
  }
  return rows.map((r) => ({
    ...listingView(r),
    upstreamUrl: r.upstreamUrl,
    calls: stats.get(r.id)?.calls ?? 0,
    failed: stats.get(r.id)?.failed ?? 0,
    revenue: usdc(stats.get(r.id)?.revenue ?? 0n),
  }));
}

export async function getListing(deps: Deps, slug: string): Promise<repo.ListingRow> {
  const l = await repo.findListing(deps.sql, slug);
  if (!l) throw new DomainError("x402_listing_not_found");
  return l;
}

const listingCache = new WeakMap<object, Map<string, { listing: repo.ListingRow; at: number }>>();
const LISTING_TTL_MS = 5_000;

/**
 * A listing as the paid-call paths read it (`/x402/{slug}`'s batched option, `POST
 * /api/x402/pay`): listings never change once created, so a few seconds' cache per process spares
 * a query per call (a missing one is never cached).
 */
export async function cachedListing(deps: Deps, slug: string): Promise<repo.ListingRow> {
  let bySlug = listingCache.get(deps.sql);
  if (!bySlug) listingCache.set(deps.sql, bySlug = new Map());
  const hit = bySlug.get(slug);
  if (hit && Date.now() - hit.at < LISTING_TTL_MS) return hit.listing;
  const listing = await getListing(deps, slug);
  if (bySlug.size > 10_000) bySlug.clear();
  bySlug.set(slug, { listing, at: Date.now() });
  return listing;
}

/** The 402 answer's `payment`: what to sign for this listing. */
export function paymentRequirements(deps: Deps, l: repo.ListingRow) {
  const profile = x402Profile(deps);
  const domain = deps.chain.gateway.domain(profile, "gateway");
  return {
    x402Version: 1 as const,
    scheme: "gateway" as const,
    network: `eip155:${domain.chainId}`,
    payTo: checksum(l.seller),
    amount: l.price.toString(),
    listingSlug: l.slug,
    domain: {
      name: domain.name,
      version: domain.version,
      chainId: domain.chainId,
      verifyingContract: checksum(domain.verifyingContract),
    },
  };
}
