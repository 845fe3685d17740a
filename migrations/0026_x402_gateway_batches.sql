-- Batched acceptance on the gateway balance (issue 27, items 1, 2, 6): a paid call through
-- /x402/{slug} with Circle's batched option (or a GatewayVault proof) is verified locally,
-- reserved against a mirror of the payer's vault balance in one statement, and settled later,
-- many authorizations per `transferWithAuthorizations` transaction.

-- The payer's vault balance as last read from the chain (balance: `available`, at synced_block)
-- and what unsettled charges hold of it. A reservation is `held + amount <= balance`, checked
-- and written by one UPDATE (the row lock serialises every process); a settlement lowers both.
create table x402_gateway_accounts (
  chain_id integer not null,
  payer text not null,
  balance bigint not null check (balance >= 0),
  held bigint not null default 0 check (held >= 0),
  synced_block bigint not null,
  synced_at timestamptz not null,
  -- A withdrawal through the API in flight: reservations are refused until its re-read.
  withdrawing_until timestamptz,
  primary key (chain_id, payer)
);

-- One row per paid call accepted on the gateway balance. reserved (upstream in flight) →
-- pending (served, owes settlement) → settled (tx_hash) | failed (the vault refused it);
-- reserved → released (upstream failed: nothing charged).
create table x402_gateway_charges (
  id uuid primary key,
  chain_id integer not null,
  listing_id uuid references x402_listings (id),
  listing_slug text,
  merchant_id uuid references merchants (id),
  payer text not null,
  payee text not null,
  amount bigint not null check (amount > 0),
  nonce text not null,
  valid_after bigint not null,
  valid_before bigint not null,
  -- 'gateway' (GatewayVault's EIP-712 domain) or 'batched' (GatewayWalletBatched).
  domain text not null check (domain in ('gateway', 'batched')),
  signature text not null,
  agent_id text,
  status text not null check (status in ('reserved', 'pending', 'settled', 'failed', 'released')),
  batch_id uuid,
  tx_hash text,
  upstream_status integer,
  error text,
  created_at timestamptz not null,
  served_at timestamptz,
  settled_at timestamptz
);
create unique index x402_gateway_charges_once on x402_gateway_charges (chain_id, payer, nonce)
  where status <> 'released';
create index x402_gateway_charges_unbatched on x402_gateway_charges (chain_id, created_at)
  where status = 'pending' and batch_id is null;
create index x402_gateway_charges_open on x402_gateway_charges (chain_id, payer)
  where status in ('reserved', 'pending');
create index x402_gateway_charges_batch on x402_gateway_charges (batch_id);
create index x402_gateway_charges_merchant on x402_gateway_charges (merchant_id, created_at desc);

-- A settlement transaction: written with its charges (batch_id) before anything is signed; its
-- intent key is `x402gw:batch:<id>`, so a crash leaves a record finished from the chain, never
-- sent twice.
create table x402_gateway_batches (
  id uuid primary key,
  chain_id integer not null,
  status text not null check (status in ('pending', 'confirmed', 'failed')),
  size integer not null,
  settled integer not null default 0,
  tx_hash text,
  block_number bigint,
  gas_used bigint,
  error text,
  created_at timestamptz not null,
  finished_at timestamptz
);
create index x402_gateway_batches_pending on x402_gateway_batches (chain_id) where status = 'pending';
create index x402_gateway_batches_recent on x402_gateway_batches (chain_id, created_at desc);
