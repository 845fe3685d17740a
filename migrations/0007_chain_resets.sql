-- A chain that was really reset (our contracts gone) and accepted as new by the operator: the
-- old chain's transactions move to an archive, so the sender's intent keys, nonces and hashes
-- start clean on the new chain while the history stays readable.
create table chain_resets (
  id uuid primary key default gen_random_uuid(),
  chain_id integer not null,
  accepted_by jsonb,
  missing_contracts jsonb not null,
  archived_transactions integer not null,
  forgotten_logs integer not null,
  created_at timestamptz not null default now()
);

create table chain_transactions_archive (
  like chain_transactions including defaults,
  reset_id uuid not null references chain_resets (id)
);
create index chain_transactions_archive_chain on chain_transactions_archive (chain_id, tx_hash);
