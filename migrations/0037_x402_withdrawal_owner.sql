-- A withdrawal's hold on its payer's paid calls (x402_gateway_accounts.withdrawing_until) names
-- the process that holds it (its liveness claim, src/db/liveness.ts) and the withdrawal's intent
-- key. Before, a process killed during a withdrawal left its payer's paid calls refused for the
-- rest of the hold (3 minutes); now the next paid call clears it once the process is gone and
-- nothing of the withdrawal can still be mined (never sent, or finished), and reads the chain.
-- Null on marks written before: those keep the time rule.
alter table x402_gateway_accounts add column withdrawing_owner uuid;
alter table x402_gateway_accounts add column withdrawing_intent text;
