-- Mail and rate limits: the development mailbox, per-merchant rate-limit overrides and the
-- fixed-window request counters.

-- Mail that would have been sent when no SMTP_URL is configured (development and test only).
-- The id is the pg-boss job id, so a job delivered twice stores its mail once.
create table dev_mailbox (
  id uuid primary key,
  to_address text not null,
  subject text not null,
  text_body text not null,
  html_body text,
  created_at timestamptz not null
);
create index dev_mailbox_newest on dev_mailbox (created_at desc);
create index dev_mailbox_to on dev_mailbox (lower(to_address), created_at desc);

-- An operator's per-merchant limit for one bucket ("default", "payments", ...). No foreign key,
-- so the rate limiter does not depend on the accounts migration.
create table rate_limit_overrides (
  merchant_id uuid not null,
  bucket text not null,
  per_minute integer not null check (per_minute > 0),
  primary key (merchant_id, bucket)
);

-- One row per (bucket, subject, minute). Unlogged: the counters are hot, short-lived and worth
-- nothing after a crash (losing them only resets the current minute), so they skip the WAL.
create unlogged table rate_limit_counters (
  bucket text not null,
  subject text not null,
  window_start timestamptz not null,
  count integer not null,
  primary key (bucket, subject, window_start)
);
create index rate_limit_counters_window on rate_limit_counters (window_start);
