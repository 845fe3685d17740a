-- A merchant session's environment (DESIGN §11, "Environments are part of identity"): the
-- dashboard's test/live mode plays the role a key's prefix plays for the API. `live` (the
-- production chain) unless the merchant switches the session to `test` (the testnet chain).
alter table merchant_sessions
  add column mode text not null default 'live' check (mode in ('live', 'test'));
