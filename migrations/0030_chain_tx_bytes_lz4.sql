-- A settlement batch's transaction carries hundreds of kilobytes of call data, recorded twice (the
-- call data and the signed bytes) before it is broadcast. PostgreSQL's default compression (pglz)
-- took ~12 ms per 384 kB column on the 2-core machine; lz4 takes ~6 ms for the same ratio on hex
-- text (0.55). A server built without lz4 (the embedded one) keeps pglz: the error is caught and
-- nothing changes.
do $$
begin
  alter table chain_transactions
    alter column data set compression lz4,
    alter column raw_tx set compression lz4;
exception when feature_not_supported then
  null;
end
$$;
