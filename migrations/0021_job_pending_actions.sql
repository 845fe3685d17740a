-- A job action's intent, written on the job before its first transaction is signed (DESIGN §11,
-- "Anything that locks funds in a contract is recoverable from the chain"): which action, the
-- sender intent its transactions carry (`<intent>` or, for fund, `<intent>:approve` and
-- `<intent>:fund`), and the text the row takes when it is mined (a deliverable URL, a reason:
-- the chain holds only their hashes). A process killed at any point leaves this behind; the
-- catch-up (at worker start and every minute) follows the intent's transactions and the job on
-- chain to a complete row (FUNDED with its hashes) or back to nothing pending.
alter table commerce_jobs
  add column pending_action text
    check (pending_action in ('fund', 'submit', 'complete', 'reject', 'refund')),
  add column pending_intent text,
  add column pending_change jsonb,
  add column pending_at timestamptz,
  add constraint commerce_jobs_pending_whole check (
    (pending_action is null) = (pending_intent is null)
    and (pending_action is null) = (pending_at is null)
  );

create index commerce_jobs_pending on commerce_jobs (pending_at) where pending_action is not null;
