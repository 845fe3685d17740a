-- Payments: payment links and checkout sessions, their settlement on chain, and settlements the
-- watcher could not match to a payment (recorded, never dropped).

create table payments (
  id uuid primary key default gen_random_uuid(),
  reference text not null unique,
  merchant_id uuid not null references merchants (id),
  kind text not null check (kind in ('link', 'session')),
  amount bigint not null check (amount > 0),
  currency text not null default 'USDC',
  description text,
  chain_id integer not null,
  pay_to text not null,
  status text not null check (status in ('PENDING', 'SUCCESS', 'FAILED', 'EXPIRED')),
  direction text not null default 'request',
  payer text,
  chain_tx_hash text,
  -- A settlement that arrived after the payment had expired (it still counts: the money moved).
  settled_after_expiry boolean not null default false,
  -- A payer-reported transaction, checked until it is mined.
  submitted_tx_hash text,
  failure_reason text,
  webhook_url text,
  metadata jsonb,
  expires_at timestamptz not null,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  settled_at timestamptz
);
create index payments_merchant_created on payments (merchant_id, created_at desc, id desc);
create index payments_pending_expiry on payments (expires_at) where status = 'PENDING';

create table unmatched_settlements (
  chain_id integer not null,
  tx_hash text not null,
  log_index integer not null,
  reference text not null,
  payer text not null,
  pay_to text not null,
  amount bigint not null,
  reason text not null,
  block_number bigint not null,
  recorded_at timestamptz not null default now(),
  primary key (chain_id, tx_hash, log_index)
);
