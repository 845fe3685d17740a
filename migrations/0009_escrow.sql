-- Escrows (EscrowVault): one row per escrow, mirroring the contract's state. Every status change
-- is written in the transaction that emits its webhook event.
create table escrows (
  id uuid primary key default gen_random_uuid(),
  reference text not null unique,
  merchant_id uuid not null references merchants (id),
  chain_id integer not null,
  status text not null check (status in ('ACTIVE', 'DISPUTED', 'RELEASED', 'REFUNDED')),
  amount bigint not null check (amount > 0),
  currency text not null default 'USDC',
  depositor text not null,
  depositor_wallet_id uuid not null,
  beneficiary text not null,
  description text,
  webhook_url text,
  expires_at timestamptz not null,
  tx_hash text not null,
  confirmed_at timestamptz,
  confirm_tx_hash text,
  release_tx_hash text,
  released_at timestamptz,
  dispute_reason text,
  disputed_by text,
  dispute_tx_hash text,
  disputed_at timestamptz,
  resolution text check (resolution in ('released', 'refunded')),
  resolve_tx_hash text,
  resolved_at timestamptz,
  refund_tx_hash text,
  refunded_at timestamptz,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  -- Creation order even when the injected clock gives two escrows the same instant.
  seq bigint generated always as identity
);
create index escrows_merchant on escrows (merchant_id, seq desc);
create index escrows_active_expiry on escrows (expires_at) where status = 'ACTIVE';

-- Operator keys (DESIGN §9, operator credential): issued only by `deno task operator:key`,
-- belonging to no merchant, accepted only on operator endpoints (/api/escrow/resolve).
create table operator_keys (
  id uuid primary key default gen_random_uuid(),
  lookup text not null unique,
  key_hash text not null,
  hint text not null,
  label text,
  created_at timestamptz not null,
  last_used_at timestamptz,
  revoked_at timestamptz
);
