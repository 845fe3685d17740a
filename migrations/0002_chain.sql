-- Chain module: deployed contract addresses, managed wallets, every transaction we sign,
-- the log watcher's cursors and the logs it has handed to handlers.

create table chain_contracts (
  chain_id integer not null,
  name text not null,
  address text not null,
  input_hash text,
  deploy_tx_hash text,
  deploy_block bigint,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (chain_id, name)
);

-- Managed wallets: the private key sealed with a per-wallet data key (AES-256-GCM), the data key
-- wrapped by WALLET_MASTER_KEY. Only the address and id ever leave the chain module.
create table wallets (
  id uuid primary key default gen_random_uuid(),
  address text not null unique,
  purpose text not null,
  key_version smallint not null,
  key_ciphertext bytea not null,
  key_iv bytea not null,
  dek_ciphertext bytea not null,
  dek_iv bytea not null,
  created_at timestamptz not null default now()
);

-- One row per signed transaction, written before it is broadcast. intent_key makes a retried
-- operation find its transaction instead of signing a second one.
create table chain_transactions (
  id uuid primary key default gen_random_uuid(),
  chain_id integer not null,
  intent_key text not null,
  from_address text not null,
  to_address text,
  nonce bigint not null,
  value numeric(78, 0) not null default 0,
  data text not null default '0x',
  gas bigint not null,
  max_fee_per_gas numeric(78, 0) not null,
  max_priority_fee_per_gas numeric(78, 0) not null,
  raw_tx text not null,
  tx_hash text not null,
  status text not null check (status in ('signed', 'broadcast', 'confirmed', 'reverted', 'failed')),
  error text,
  block_number bigint,
  gas_used bigint,
  contract_address text,
  broadcast_attempts integer not null default 0,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  confirmed_at timestamptz,
  unique (chain_id, intent_key)
);
create index chain_transactions_open on chain_transactions (chain_id, status)
  where status in ('signed', 'broadcast');
create index chain_transactions_sender on chain_transactions (chain_id, from_address, nonce);
create unique index chain_transactions_hash on chain_transactions (chain_id, tx_hash);

create table chain_cursors (
  chain_id integer not null,
  name text not null,
  block_number bigint not null,
  updated_at timestamptz not null default now(),
  primary key (chain_id, name)
);

-- A log handed to a handler; the key makes the hand-over happen once per log and handler.
create table chain_log_receipts (
  chain_id integer not null,
  handler text not null,
  tx_hash text not null,
  log_index integer not null,
  block_number bigint not null,
  handled_at timestamptz not null default now(),
  primary key (chain_id, handler, tx_hash, log_index)
);
