-- CCTP v2 bridge transfers, persisted step by step (the spec keeps them in memory; DESIGN §9:
-- ours survive restarts). Inbound: a consumer's managed wallet burns on a source chain and the
-- operator mints on the testnet chain. Outbound: a burn on the testnet chain minted on a source
-- chain. Amounts are base units. Each step records its result before the next is enqueued:
-- pending → burned (burn_tx_hash) → attested (message, attestation) → minted (mint_tx_hash),
-- or failed (error).
create table bridge_transfers (
  id uuid primary key default gen_random_uuid(),
  reference text not null unique,
  direction text not null default 'inbound' check (direction in ('inbound', 'outbound')),
  consumer_id uuid references consumers (id),
  -- The managed wallet that burns (inbound), null when the operator burns (outbound).
  wallet_id uuid references wallets (id),
  from_chain text not null,
  to_chain text not null,
  source_domain integer not null,
  destination_domain integer not null,
  amount bigint not null check (amount > 0),
  sender text not null,
  recipient text not null,
  -- Cross-chain checkout: the payment the mint settles (also in the burn's hook data).
  payment_reference text,
  status text not null check (status in ('pending', 'burned', 'attested', 'minted', 'failed')),
  burn_tx_hash text,
  burned_at timestamptz,
  message text,
  attestation text,
  nonce text,
  attested_at timestamptz,
  -- The attestation wait: how often asked, the last answer, when it is asked next.
  attestation_attempts integer not null default 0,
  attestation_state text,
  next_attestation_at timestamptz,
  mint_tx_hash text,
  minted_amount bigint,
  minted_at timestamptz,
  error text,
  failed_at timestamptz,
  created_at timestamptz not null,
  updated_at timestamptz not null
);
create index bridge_transfers_open on bridge_transfers (status)
  where status in ('pending', 'burned', 'attested');
create index bridge_transfers_consumer on bridge_transfers (consumer_id, created_at desc);
-- One transfer under way per payment (a second would mint an overpayment).
create unique index bridge_transfers_payment_open on bridge_transfers (payment_reference)
  where payment_reference is not null and status in ('pending', 'burned', 'attested');
