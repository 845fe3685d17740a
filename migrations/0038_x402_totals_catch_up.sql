-- A listing's totals (0036) are added to by the code that confirms a batch or a claim. A process
-- of an earlier release still running beside a migrated database (a rolling upgrade: Compose
-- runs `deploy`'s migrations while the old web and worker containers serve) confirms batches and
-- claims without adding to them. What it settles is caught up by the next settlement round:
-- a confirmed batch not yet counted (`counted`, false for batches written from now on, whoever
-- writes them; true for those finished before, which 0036 counted), and a channel whose claimed
-- total is past what was counted (0036's `counted`), found through the indexes below.
alter table x402_gateway_batches add column counted boolean not null default false;
update x402_gateway_batches set counted = true where status <> 'pending';
create index x402_gateway_batches_uncounted on x402_gateway_batches (chain_id)
  where status = 'confirmed' and not counted;
create index x402_channels_uncounted on x402_channels (chain_id) where claimed > counted;
