-- ERC-8004 agents belong to the identity registry they were registered in. A chain's registry can
-- change (the official one configured by TESTNET_IDENTITY_REGISTRY_ADDRESS, ours replaced by
-- `contracts:deploy --force`), and token ids of different registries name different agents:
-- the official registry numbers from 0, our earlier one from 1. Rows of a registry no longer used
-- are kept but no longer found by token id, smart account or listing.
alter table agents add column identity_registry text;

-- Existing rows were registered in the registry we recorded for their chain (a local node's, or
-- one `contracts:deploy` put on a remote chain). Rows on a chain whose registry was configured by
-- address stay null: taken to be in the current registry.
update agents a set identity_registry = lower(c.address)
from chain_contracts c
where c.chain_id = a.chain_id and c.name = 'AgentIdentityRegistry';

alter table agents drop constraint agents_chain_id_token_id_key;
alter table agents add constraint agents_registry_token unique (chain_id, identity_registry, token_id);

-- Who gave our feedback to a reputation registry (its summary needs the list of clients).
create index chain_transactions_to on chain_transactions (chain_id, to_address, from_address)
  include (intent_key) where status = 'confirmed';
