-- A dashboard escrow create carries a request key made at its review: a second confirm of the
-- same review (a double submit, a reload) finds its reference here and answers the first escrow
-- instead of holding the amount again.
create table escrow_create_requests (
  merchant_id uuid not null references merchants (id),
  key_hash text not null,
  reference text not null,
  created_at timestamptz not null default now(),
  primary key (merchant_id, key_hash)
);
