-- Outbound webhooks (a per-merchant Standard Webhooks secret, deliveries and every attempt) and
-- Idempotency-Key records.

-- 32 strong random bytes (gen_random_uuid draws from pg_strong_random), base64, whsec_ prefix:
-- every merchant has a secret from the moment it exists.
alter table merchants add column webhook_secret text not null default
  'whsec_' || encode(decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'), 'base64');

create table webhook_deliveries (
  id text primary key,
  merchant_id uuid not null references merchants (id) on delete cascade,
  event text not null,
  reference text,
  url text not null,
  -- The exact JSON body sent (text, not jsonb, so key order is what the emitter wrote).
  payload text not null,
  status text not null check (status in ('pending', 'delivered', 'undelivered')),
  attempts integer not null default 0,
  -- Failures in the current round; a replay starts a new round.
  round_failures integer not null default 0,
  last_status_code integer,
  last_error text,
  next_attempt_at timestamptz,
  claimed_until timestamptz,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  delivered_at timestamptz
);
create index webhook_deliveries_merchant on webhook_deliveries (merchant_id, created_at desc);
create index webhook_deliveries_reference on webhook_deliveries (merchant_id, reference);
create index webhook_deliveries_due on webhook_deliveries (next_attempt_at) where status = 'pending';

create table webhook_attempts (
  id bigserial primary key,
  delivery_id text not null references webhook_deliveries (id) on delete cascade,
  attempt integer not null,
  started_at timestamptz not null,
  duration_ms integer not null,
  status_code integer,
  error text,
  outcome text not null check (outcome in ('delivered', 'failed', 'refused'))
);
create index webhook_attempts_delivery on webhook_attempts (delivery_id, attempt);

-- A response is kept per (credential, key) for at least 24 hours, sealed with a key derived from
-- the Idempotency-Key itself and the server secret, so the table holds no readable secrets.
create table idempotency_keys (
  scope text not null,
  key_hash text not null,
  request_hash text not null,
  status text not null check (status in ('in_progress', 'done')),
  response_status integer,
  response_sealed bytea,
  response_iv bytea,
  created_at timestamptz not null,
  completed_at timestamptz,
  expires_at timestamptz not null,
  primary key (scope, key_hash)
);
create index idempotency_keys_expiry on idempotency_keys (expires_at);
