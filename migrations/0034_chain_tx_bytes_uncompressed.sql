-- A settlement batch's signed bytes and call data (two ~320 kB hex columns for 500 payments) on a
-- server without lz4 (the embedded one): 0030 left them on pglz, which took ~28 ms of the
-- database's CPU per batch on the 2-core machine, on bytes that compress to about half (hex
-- digits). Stored out of line and uncompressed there instead: ~8 ms. A server with lz4 keeps it.
-- Rows already written keep their storage.
do $$
begin
  if not exists (
    select 1 from pg_attribute
    where attrelid = 'chain_transactions'::regclass and attname = 'raw_tx' and attcompression = 'l'
  ) then
    alter table chain_transactions
      alter column data set storage external,
      alter column raw_tx set storage external;
  end if;
end
$$;
