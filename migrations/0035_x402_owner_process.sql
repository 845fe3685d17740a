-- The process that holds an x402 attempt (PENDING) or batched reservation ('reserved') while it
-- calls the upstream: its liveness claim (`process:<owner>` in resource_claims, src/db/liveness.ts).
-- A row whose owner is gone (kill -9) is swept within seconds; before, every such row waited out
-- the longest call a live process could still be making (5 minutes; 2 for a reservation), holding
-- the payer's balance and the proof's nonce, so a retry of the same proof was refused until the
-- proof itself had expired. Null on rows written before: those keep the age rule.
alter table x402_payments add column owner uuid;
alter table x402_gateway_charges add column owner uuid;
