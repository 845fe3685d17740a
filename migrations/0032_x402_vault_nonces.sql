-- One (payer, nonce) of the gateway vault is spent once, whichever of our paths takes it: a
-- batched charge (x402_gateway_charges) and a `POST /api/x402/pay` gateway attempt
-- (x402_payments) each had a unique index of their own, so the same signed nonce (under the
-- vault's domain and Circle's batched one) could be accepted by both, and the settlement the vault
-- then skipped was counted as paid by the other's transaction. Both paths now claim the nonce
-- here in the statement that takes it (ON CONFLICT DO NOTHING: a concurrent claim waits for the
-- first to commit, then is refused), and give it back where they free it (a released charge, a
-- dropped or FAILED attempt).
create table x402_vault_nonces (
  chain_id integer not null,
  payer text not null,
  nonce text not null,
  primary key (chain_id, payer, nonce)
);
insert into x402_vault_nonces (chain_id, payer, nonce)
  select chain_id, payer, nonce from x402_gateway_charges where free_tag = ''
  on conflict do nothing;
insert into x402_vault_nonces (chain_id, payer, nonce)
  select chain_id, payer, nonce from x402_payments where scheme = 'gateway' and status <> 'FAILED'
  on conflict do nothing;
