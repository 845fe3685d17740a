-- A stream create sent with an Idempotency-Key: its reference, chosen before anything is sent.
-- The key is released when a request ends in 408 (the receipt did not come in time), so a retry
-- runs again; it finds the reference here, and the sender's intent for that reference gives back
-- the first transaction: the deposit is locked once.
create table stream_create_requests (
  merchant_id uuid not null references merchants (id),
  key_hash text not null,
  request_hash text not null,
  reference text not null,
  created_at timestamptz not null default now(),
  primary key (merchant_id, key_hash)
);
