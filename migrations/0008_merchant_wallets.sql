-- Merchant wallets: the managed wallets (the chain module's `wallets`) a merchant controls, with
-- a label. The address is kept here too (it never changes), so this module reads no table of the
-- chain module. The payout wallet (merchants.managed_wallet_id) is one of them: existing payout
-- wallets are backfilled. (A managed wallet replaced by an earlier PATCH /api/merchant/wallet was
-- not remembered anywhere, so it cannot be backfilled.)
create table merchant_wallets (
  wallet_id uuid primary key references wallets (id),
  merchant_id uuid not null references merchants (id),
  address text not null unique,
  label text,
  created_at timestamptz not null default now(),
  -- Creation order even when the injected clock gives two wallets the same instant.
  seq bigint generated always as identity
);
create index merchant_wallets_merchant on merchant_wallets (merchant_id, seq);

insert into merchant_wallets (wallet_id, merchant_id, address, created_at)
select m.managed_wallet_id, m.id, w.address, w.created_at
from merchants m join wallets w on w.id = m.managed_wallet_id
order by w.created_at
on conflict do nothing;
