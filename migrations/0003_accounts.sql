-- Accounts and access: merchants, their sessions and keys, wallet-link challenges, consumers.

create table merchants (
  id uuid primary key default gen_random_uuid(),
  email text not null unique,
  business_name text not null,
  password_hash text not null,
  wallet_provider text not null default 'MANAGED'
    check (wallet_provider in ('MANAGED', 'EXTENSION_WALLET', 'LINK_WALLET', 'HOSTED_WALLET')),
  wallet_address text,
  managed_wallet_id uuid references wallets (id),
  verified_at timestamptz,
  -- The pending email verification: a SHA-256 of the code, its expiry and wrong tries.
  verification_code_hash text,
  verification_expires_at timestamptz,
  verification_attempts integer not null default 0,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

-- A login. The cookie's JWT names its session; logging out revokes it.
create table merchant_sessions (
  id uuid primary key default gen_random_uuid(),
  merchant_id uuid not null references merchants (id) on delete cascade,
  created_at timestamptz not null,
  expires_at timestamptz not null,
  revoked_at timestamptz
);
create index merchant_sessions_merchant on merchant_sessions (merchant_id);

-- API keys: only a SHA-256 of the key is kept, found by a lookup prefix of its random part.
create table api_keys (
  id uuid primary key default gen_random_uuid(),
  merchant_id uuid not null references merchants (id) on delete cascade,
  kind text not null check (kind in ('merchant', 'secret', 'publishable')),
  environment text not null check (environment in ('test', 'live')),
  lookup text not null unique,
  key_hash text not null,
  hint text not null,
  label text,
  scopes text[],
  created_at timestamptz not null,
  last_used_at timestamptz,
  revoked_at timestamptz,
  replaced_by uuid references api_keys (id)
);
create index api_keys_merchant on api_keys (merchant_id, created_at desc);

-- Sign-in-with-Ethereum challenges for linking an external payout wallet; single use.
create table wallet_link_challenges (
  nonce text primary key,
  merchant_id uuid not null references merchants (id) on delete cascade,
  address text not null,
  message_hash text not null,
  issued_at timestamptz not null,
  expires_at timestamptz not null,
  used_at timestamptz
);

create table consumers (
  id uuid primary key default gen_random_uuid(),
  wallet_type text not null check (wallet_type in ('MANAGED', 'EXTERNAL')),
  wallet_address text not null,
  managed_wallet_id uuid references wallets (id),
  created_at timestamptz not null,
  last_seen_at timestamptz not null
);
create unique index consumers_external_address on consumers (wallet_address)
  where wallet_type = 'EXTERNAL';
