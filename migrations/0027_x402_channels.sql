-- The x402 `batch-settlement` scheme (issue 27, item 4): the per-channel state its server keeps
-- (the channel's terms, the charges served and the latest voucher covering them, a mirror of the
-- contract's balance, claims, pending withdrawal and refund nonce), one row per paid call, and
-- the claim transactions that collect the vouchers on chain, many channels per transaction.
create table x402_channels (
  -- The chain-bound EIP-712 hash of the terms (lowercase).
  channel_id text primary key check (channel_id ~ '^0x[0-9a-f]{64}$'),
  chain_id integer not null,
  -- The merchant whose listing (or facilitator key) the channel pays; null: not known yet.
  merchant_id uuid references merchants (id),
  payer text not null,
  payer_authorizer text not null,
  receiver text not null,
  receiver_authorizer text not null,
  token text not null,
  withdraw_delay integer not null,
  salt text not null,
  -- chargedCumulativeAmount: what the calls served cost in total, and the latest voucher, whose
  -- maxClaimableAmount (signed_max) covers it.
  charged bigint not null default 0 check (charged >= 0),
  signed_max bigint not null default 0,
  signature text,
  -- The contract's view of the channel as last read (synced_at) or changed by our transactions.
  balance bigint not null default 0,
  claimed bigint not null default 0,
  withdraw_requested_at bigint not null default 0,
  refund_nonce bigint not null default 0,
  synced_at timestamptz,
  -- The request serving the channel (one at a time, as the scheme requires): a row, not a lock,
  -- given back when it is done; pending_until bounds a dead process's hold.
  pending_id uuid,
  pending_until timestamptz,
  last_request_at timestamptz,
  -- Why the claim job leaves the channel alone (the contract refused its voucher); cleared by
  -- the next charge, which brings a new voucher.
  stuck text,
  created_at timestamptz not null,
  check (charged <= signed_max)
);
-- Channels owing a claim: what the claim job reads.
create index x402_channels_unclaimed on x402_channels (chain_id, last_request_at)
  where charged > claimed and claimed < balance and stuck is null;
create index x402_channels_receiver on x402_channels (receiver);

-- One row per paid call served on a channel. Settled once a confirmed claim of its channel
-- reaches `cumulative` (the channel's charged total after it); the query finds which one.
create table x402_channel_charges (
  id bigint generated always as identity primary key,
  channel_id text not null references x402_channels (channel_id),
  listing_id uuid references x402_listings (id),
  merchant_id uuid references merchants (id),
  amount bigint not null check (amount > 0),
  cumulative bigint not null,
  upstream_status integer,
  created_at timestamptz not null
);
create index x402_channel_charges_channel on x402_channel_charges (channel_id, cumulative);
create index x402_channel_charges_listing on x402_channel_charges (listing_id, id desc);

-- A transaction that claims vouchers (`claim`: the claim job's, many channels, settling each
-- receiver in the same transaction; `refund`: a cooperative refund, claiming its channel first).
-- Written with its rows before anything is sent; its intent key is `x402ch:<kind>:<id>`, so a
-- crash leaves a record that is finished from the chain, never sent twice.
create table x402_channel_claims (
  id uuid primary key,
  chain_id integer not null,
  kind text not null check (kind in ('claim', 'refund')),
  status text not null check (status in ('pending', 'confirmed', 'failed')),
  -- refund: its channel, the amount asked for and the nonce it is signed at.
  channel_id text references x402_channels (channel_id),
  refund_amount bigint,
  refund_nonce bigint,
  charges integer not null default 0,
  tx_hash text,
  gas_used bigint,
  error text,
  created_at timestamptz not null,
  finished_at timestamptz
);
-- One claim batch in flight per chain: a second builder resumes it instead of starting another.
create unique index x402_channel_claims_open on x402_channel_claims (chain_id)
  where status = 'pending' and kind = 'claim';
create index x402_channel_claims_pending on x402_channel_claims (chain_id) where status = 'pending';

create table x402_channel_claim_rows (
  claim_id uuid not null references x402_channel_claims (id),
  channel_id text not null references x402_channels (channel_id),
  max_claimable bigint not null,
  signature text not null,
  total_claimed bigint not null,
  primary key (claim_id, channel_id)
);
create index x402_channel_claim_rows_channel on x402_channel_claim_rows (channel_id, total_claimed);
