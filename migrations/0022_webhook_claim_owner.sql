-- Who holds a webhook delivery's attempt: the pg-boss job that runs it (`job:<id>`), or the sweep.
-- A job that pg-boss retries because its worker died (its heartbeat stopped) finds its own claim
-- and takes the attempt over at once, instead of waiting for the claim to lapse.
alter table webhook_deliveries add column claimed_by text;
