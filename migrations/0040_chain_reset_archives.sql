-- Agents and jobs are keyed by the ids their contracts gave them (an identity token, a job
-- counter). A local chain reset and accepted (`deno task chain:accept-reset`) gets our contracts
-- again at the same addresses (the same operator, the same nonces), whose counters start again
-- at 0: the old chain's rows then answered for the new chain's ids (a new job 1 read as the old
-- archived COMPLETED one, and could never be funded) or refused them (a new agent's token was a
-- duplicate key: 500). As the old chain's transactions (chain_transactions_archive), its agents
-- and jobs move to archives when the reset is recorded, in the reset's own transaction.
-- An archive has its table's columns then `reset_id`: a column added to agents or commerce_jobs
-- later is added to its archive before reset_id by that migration.
create table agents_archive (
  like agents including defaults,
  reset_id uuid not null references chain_resets (id)
);
create index agents_archive_merchant on agents_archive (merchant_id, chain_id);

create table commerce_jobs_archive (
  like commerce_jobs including defaults,
  reset_id uuid not null references chain_resets (id)
);
create index commerce_jobs_archive_merchant on commerce_jobs_archive (merchant_id, chain_id);

create function archive_reset_chain_records() returns trigger language plpgsql as $$
begin
  with moved as (delete from agents where chain_id = new.chain_id returning *)
  insert into agents_archive select moved.*, new.id from moved;
  with moved as (delete from commerce_jobs where chain_id = new.chain_id returning *)
  insert into commerce_jobs_archive select moved.*, new.id from moved;
  return new;
end $$;

create trigger chain_resets_archive_records after insert on chain_resets
  for each row execute function archive_reset_chain_records();
