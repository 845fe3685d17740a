-- ERC-8004 agents: one row per agent a merchant deployed. The owner wallet is a managed wallet
-- made for the agent (it owns the identity token and the smart account); the smart account's
-- address is CREATE2-derived from it and the row id (the salt).
create table agents (
  id uuid primary key default gen_random_uuid(),
  merchant_id uuid not null references merchants (id),
  chain_id integer not null,
  name text not null,
  metadata_uri text not null,
  manifest jsonb,
  owner_wallet_id uuid not null,
  owner_address text not null,
  sca_address text not null,
  salt text not null,
  -- null until the registration is mined (a half-done deploy is finished by a sweep job)
  token_id numeric(78, 0),
  status text not null check (status in ('PROVISIONING', 'ACTIVE_AGENT_PROVISIONED')),
  register_tx_hash text,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  seq bigint generated always as identity,
  unique (chain_id, token_id),
  unique (chain_id, sca_address)
);
create index agents_merchant on agents (merchant_id, seq desc);
create index agents_name on agents (merchant_id, lower(name));

-- ERC-8183 jobs (AgenticCommerce): our record of each job created through the API, mirroring the
-- contract. Parties are addresses (any merchant's wallets, or external ones); job_id is the
-- contract's id, unique per chain and contract.
create table commerce_jobs (
  id uuid primary key default gen_random_uuid(),
  chain_id integer not null,
  contract_address text not null,
  job_id numeric(78, 0) not null,
  merchant_id uuid not null references merchants (id),
  client text not null,
  client_wallet_id uuid not null,
  provider text not null,
  evaluator text not null,
  budget bigint not null check (budget > 0),
  description text not null,
  expires_at timestamptz not null,
  status text not null
    check (status in ('OPEN', 'FUNDED', 'SUBMITTED', 'COMPLETED', 'REJECTED', 'EXPIRED')),
  deliverable_data text,
  deliverable_hash text,
  reason text,
  reason_hash text,
  create_tx_hash text not null,
  budget_tx_hash text not null,
  approve_tx_hash text,
  fund_tx_hash text,
  submit_tx_hash text,
  complete_tx_hash text,
  reject_tx_hash text,
  refund_tx_hash text,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  seq bigint generated always as identity,
  unique (chain_id, contract_address, job_id)
);
create index commerce_jobs_parties on commerce_jobs (chain_id, client, provider, evaluator);
