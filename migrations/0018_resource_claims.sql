-- Per-resource serialisation without holding a connection (DESIGN §11, "Never hold a lock while
-- waiting for something that needs the pool"): an action claims its resource (an escrow, a
-- stream, a job, a payer's gateway balance, a wallet) in one short statement, does its chain work
-- with no transaction open, records the result and releases the claim. A claim whose owner died
-- (kill -9) lapses at `expires_at`, read on the database's clock; what the dead owner left on the
-- chain is found by the action's intent key, never sent twice.
create table resource_claims (
  resource text primary key,
  owner text not null,
  claimed_at timestamptz not null default clock_timestamp(),
  expires_at timestamptz not null
);
