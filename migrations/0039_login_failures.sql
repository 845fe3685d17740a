-- Failed merchant logins per email address (a hash of the normalised address, whether or not an
-- account has it, so a refusal tells nothing about which addresses have accounts): past the
-- limit in a window, logins for that address are refused whatever the client's address.
create table login_failures (
  email_hash text primary key,
  failures integer not null,
  window_start timestamptz not null
);
