-- A transaction's call data is part of its signed bytes (raw_tx), so it is no longer stored a
-- second time: `data` is null on the rows written from now on, and read from raw_tx when asked
-- for (src/chain/transactions.repo.ts). A settlement batch of 500 payments carries ~384 kB of call
-- data as hex, which was compressed and written twice per transaction. Rows written before keep
-- theirs.
alter table chain_transactions alter column data drop not null;
alter table chain_transactions alter column data drop default;
alter table chain_transactions_archive alter column data drop not null;
alter table chain_transactions_archive alter column data drop default;
