-- Per-second payment streams (StreamVault). Amounts are base units (6 decimals); rate is base
-- units per second. started_at / stopped_at are the block timestamps of the create and the stop
-- (or completing withdrawal), the time base of the derived values. `withdrawn` is what the
-- receiver has been paid (the spec's totalStreamed).
create table streams (
  id uuid primary key default gen_random_uuid(),
  merchant_id uuid not null references merchants (id),
  reference text not null unique,
  profile text not null,
  chain_id integer not null,
  sender_wallet_id uuid not null,
  sender_sca text not null,
  receiver_sca text not null,
  rate bigint not null check (rate >= 1),
  deposit bigint not null check (deposit >= 1),
  withdrawn bigint not null default 0 check (withdrawn >= 0 and withdrawn <= deposit),
  status text not null check (status in ('ACTIVE', 'STOPPED', 'COMPLETED')),
  contract_address text not null,
  tx_hash text not null,
  started_at timestamptz not null,
  -- When accrual ends: started_at + ceil(deposit / rate) seconds; the drain job's due time.
  ends_at timestamptz not null,
  stopped_at timestamptz,
  stop_tx_hash text,
  webhook_url text,
  created_at timestamptz not null default now(),
  seq bigint generated always as identity
);
create index streams_merchant_started on streams (merchant_id, started_at desc, seq desc);
create index streams_active_due on streams (ends_at) where status = 'ACTIVE';
