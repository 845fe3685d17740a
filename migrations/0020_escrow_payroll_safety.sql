-- Escrow creation intents (DESIGN §11, "Anything that locks funds in a contract is recoverable
-- from the chain"): written and committed before the create transaction is signed, with every
-- term needed to write the escrow's row, so a process killed at any instant leaves either a
-- complete escrow (the intent's transaction mined: the row and `escrow.created` are written by
-- whoever finds it, once) or nothing locked (no transaction, or one that can never be mined:
-- the intent is abandoned). The transaction is found by its intent key `escrow:create:<reference>`.
create table escrow_creates (
  reference text primary key,
  merchant_id uuid not null references merchants (id),
  chain_id integer not null,
  amount bigint not null check (amount > 0),
  depositor text not null,
  depositor_wallet_id uuid not null,
  beneficiary text not null,
  description text,
  webhook_url text,
  expires_at timestamptz not null,
  status text not null check (status in ('pending', 'completed', 'abandoned')),
  -- Why an intent was abandoned (nothing was locked).
  error text,
  created_at timestamptz not null,
  updated_at timestamptz not null
);
create index escrow_creates_pending on escrow_creates (depositor_wallet_id, created_at)
  where status = 'pending';

-- Escrows and payroll batches are listed per merchant and environment (chain).
create index escrows_merchant_chain on escrows (merchant_id, chain_id, seq desc);
create index payroll_batches_merchant_chain on payroll_batches (merchant_id, chain_id, seq desc);

-- A payroll Idempotency-Key belongs to the credential's environment: the same key sent with a test
-- key and with a live key names two batches, one per chain, never the other's.
alter table payroll_batches drop constraint payroll_batches_merchant_id_request_key_hash_key;
create unique index payroll_batches_request_key
  on payroll_batches (merchant_id, chain_id, request_key_hash);
