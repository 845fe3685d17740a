-- Foundation: operator-tunable settings read at runtime (rate-limit overrides and the like).
create table app_settings (
  key text primary key,
  value jsonb not null,
  updated_at timestamptz not null default now()
);
