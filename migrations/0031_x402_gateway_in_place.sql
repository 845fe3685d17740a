-- Gateway-balance charges moved in place (issue 27): a paid call's charge is written once and
-- then only its state changes (served; then settled, or failed, naming its batch). No index names
-- a column those changes touch, and the table keeps room in each page, so PostgreSQL rewrites
-- the row in its page without new index entries (a heap-only update): before, each of three
-- moves wrote a new entry in all six indexes (~31 WAL records and 3.9 kB per charge).
-- The room: the charges of a group commit share a page and move together, in one statement, so
-- a page must take a new version of each of its rows while the old ones are still there (~530
-- bytes a row, ~620 once settled): at 40% filled, ~6 rows a page leave room for 6 new versions.
alter table x402_gateway_charges set (fillfactor = 40);
alter table x402_gateway_accounts set (fillfactor = 50);

-- A released charge (its upstream failed: nothing charged) frees its (payer, nonce) for another
-- try of the same signed payment: it is set apart by a tag of its own, not by a predicate on status.
alter table x402_gateway_charges add column free_tag text not null default '';
update x402_gateway_charges set free_tag = id::text where status = 'released';
drop index x402_gateway_charges_once;
create unique index x402_gateway_charges_once
  on x402_gateway_charges (chain_id, payer, nonce, free_tag);

-- The charges not yet in a settlement batch (reserved: upstream in flight; or pending: served),
-- oldest first: the batch builder takes the pending ones from its head, the stale sweep finds
-- abandoned reservations in it, and the views read what is open through it and the pending
-- batches, instead of partial indexes on status over every charge ever taken.
create table x402_gateway_unbatched (
  seq bigint generated always as identity primary key,
  chain_id integer not null,
  charge_id uuid not null
);
insert into x402_gateway_unbatched (chain_id, charge_id)
  select chain_id, id from x402_gateway_charges
  where status in ('reserved', 'pending') and batch_id is null
  order by created_at, id;

-- A batch lists its charges (read back by id, in this order; a charge names its batch once
-- settled or failed in it), and counts them per merchant for the dashboard.
alter table x402_gateway_batches add column charge_ids uuid[] not null default '{}';
update x402_gateway_batches b set charge_ids = coalesce((
  select array_agg(c.id order by c.created_at, c.id) from x402_gateway_charges c
  where c.batch_id = b.id), '{}');
create table x402_gateway_batch_merchants (
  batch_id uuid not null references x402_gateway_batches (id),
  merchant_id uuid not null,
  payments integer not null,
  created_at timestamptz not null,
  primary key (batch_id, merchant_id)
);
create index x402_gateway_batch_merchants_recent
  on x402_gateway_batch_merchants (merchant_id, created_at desc);
insert into x402_gateway_batch_merchants (batch_id, merchant_id, payments, created_at)
  select c.batch_id, c.merchant_id, count(*), b.created_at
  from x402_gateway_charges c join x402_gateway_batches b on b.id = c.batch_id
  where c.merchant_id is not null
  group by c.batch_id, c.merchant_id, b.created_at;

drop index x402_gateway_charges_unbatched;
drop index x402_gateway_charges_open;
drop index x402_gateway_charges_batch;
