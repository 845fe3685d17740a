-- x402 pay-per-call (DESIGN §9, x402 listings and proof). A listing is a merchant's priced
-- upstream API; every paid call attempt is a row of x402_payments.
create table x402_listings (
  id uuid primary key default gen_random_uuid(),
  merchant_id uuid not null references merchants (id),
  slug text not null unique check (slug ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
  upstream_url text not null,
  price bigint not null check (price > 0),
  methods text[] not null check (cardinality(methods) > 0),
  description text,
  -- The payee: the merchant's payout address when the listing was created (lowercase).
  seller text not null,
  chain_id integer not null,
  created_at timestamptz not null,
  seq bigint generated always as identity
);
create index x402_listings_merchant on x402_listings (merchant_id, seq desc);

-- One row per payment attempt: the gateway proof of POST /api/x402/pay, the standard `exact`
-- scheme of /x402/{slug}, and the facilitator's settle. PENDING while the upstream call and the
-- settlement run; SUCCESS once settled on chain; FAILED when the upstream failed (nothing was
-- charged and the nonce stays usable) or the settlement reverted.
create table x402_payments (
  id uuid primary key default gen_random_uuid(),
  listing_id uuid references x402_listings (id),
  listing_slug text,
  merchant_id uuid references merchants (id),
  scheme text not null check (scheme in ('gateway', 'exact')),
  chain_id integer not null,
  payer text not null,
  payee text not null,
  amount bigint not null check (amount > 0),
  nonce text not null,
  valid_after bigint not null,
  valid_before bigint not null,
  -- `8004:{chainId}:{tokenId}` from agentId / X-Agent-ID, null when absent.
  agent_id text,
  status text not null check (status in ('PENDING', 'SUCCESS', 'FAILED')),
  error text,
  upstream_status integer,
  tx_hash text,
  created_at timestamptz not null,
  settled_at timestamptz,
  seq bigint generated always as identity
);
-- A proof (payer, nonce) is in flight or spent at most once: a replay or a concurrent duplicate
-- fails this index before anything is called or broadcast. A FAILED attempt does not hold it.
create unique index x402_payments_once on x402_payments (chain_id, scheme, payer, nonce)
  where status <> 'FAILED';
create index x402_payments_listing on x402_payments (listing_id, seq desc);
create index x402_payments_agent on x402_payments (agent_id, seq desc) where agent_id is not null;
create index x402_payments_payer_pending on x402_payments (chain_id, payer)
  where status = 'PENDING';
