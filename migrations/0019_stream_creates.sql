-- A stream create recorded before its transaction is broadcast (DESIGN §11, "anything that locks
-- funds in a contract is recoverable from the chain"): everything needed to rebuild the stream's
-- record. A process killed after the deposit was locked leaves this row PENDING; the recovery
-- (at a worker's start and in the per-minute sweep) reads the vault and the create's intent
-- (`stream-create:<reference>`): the stream exists on chain → its `streams` row and
-- `stream.created` are written (DONE); never sent, refused or reverted → FAILED (nothing is
-- locked); broadcast and not mined yet → left PENDING. PENDING and FAILED rows are not streams:
-- no list or action sees them.
create table stream_creates (
  reference text primary key,
  merchant_id uuid not null references merchants (id),
  profile text not null,
  chain_id integer not null,
  sender_wallet_id uuid not null,
  sender_sca text not null,
  receiver_sca text not null,
  rate bigint not null check (rate >= 1),
  deposit bigint not null check (deposit >= 1),
  contract_address text not null,
  webhook_url text,
  -- sha256 of the request's Idempotency-Key, when it had one (stream_create_requests maps it here).
  key_hash text,
  status text not null default 'PENDING' check (status in ('PENDING', 'DONE', 'FAILED')),
  error text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index stream_creates_pending on stream_creates (created_at) where status = 'PENDING';
-- Lists and actions filter by merchant and the credential's chain (DESIGN §11).
create index streams_merchant_chain_started
  on streams (merchant_id, chain_id, started_at desc, seq desc);
