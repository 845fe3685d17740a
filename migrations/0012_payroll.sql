-- Payroll batches (BatchPayout). Amounts are base units (6 decimals). A batch is created
-- PROCESSING with every recipient before anything is sent; each recipient ends SUCCESS, FAILED
-- or (external payer wallet) PENDING_SIGNATURE. `chunk` is the recipient's BatchPayout
-- transaction within the batch (null: nothing to send, e.g. a zero amount).
create table payroll_batches (
  id uuid primary key default gen_random_uuid(),
  merchant_id uuid not null references merchants (id),
  batch_ref text not null unique,
  profile text not null,
  chain_id integer not null,
  payer_sca text not null,
  -- The wallet provider kind (`managed`, or the external kind), as the spec's payerWalletId.
  payer_wallet_kind text not null,
  payer_wallet_id uuid,
  total_amount bigint not null check (total_amount >= 0),
  recipient_count integer not null check (recipient_count between 1 and 5000),
  success_count integer not null default 0,
  failed_count integer not null default 0,
  pending_signature_count integer not null default 0,
  status text not null check (status in
    ('PROCESSING', 'COMPLETED', 'PARTIAL_FAILURE', 'FAILED', 'AWAITING_SIGNATURES')),
  webhook_url text,
  description text,
  -- A run sent with an Idempotency-Key: the same key finds this batch again, even after a crash.
  request_key_hash text,
  request_hash text,
  created_at timestamptz not null,
  completed_at timestamptz,
  seq bigint generated always as identity,
  unique (merchant_id, request_key_hash)
);
create index payroll_batches_merchant on payroll_batches (merchant_id, seq desc);
create index payroll_batches_open on payroll_batches (created_at) where status = 'PROCESSING';

create table payroll_recipients (
  batch_id uuid not null references payroll_batches (id),
  idx integer not null,
  recipient_sca text not null,
  amount bigint not null check (amount >= 0),
  -- The request's label (passed through); the memo is the label, else the batch description.
  label text,
  memo text,
  chunk integer,
  status text not null check (status in ('PENDING', 'SUCCESS', 'FAILED', 'PENDING_SIGNATURE')),
  tx_hash text,
  error text,
  -- External payer wallets: the signature request and the transaction that paid it.
  request_id uuid unique,
  sign_tx_hash text,
  updated_at timestamptz,
  primary key (batch_id, idx)
);
create index payroll_recipients_chunk on payroll_recipients (batch_id, chunk) where status = 'PENDING';
-- A transaction pays one signature request, never two.
create unique index payroll_recipients_sign_tx on payroll_recipients (sign_tx_hash)
  where sign_tx_hash is not null;
create index payroll_recipients_pending_sign on payroll_recipients (batch_id)
  where status = 'PENDING_SIGNATURE';
