-- Live updates (SSE) across processes: every change of a payment's, stream's, payroll batch's or
-- escrow's state is announced on the `live_events` channel, in the writing transaction (NOTIFY is
-- delivered at commit, never for a rolled-back write), whichever process wrote it (a web
-- process's relay, a worker's log watcher, an expiry job). Each process LISTENs once and hands
-- the event to its open streams. The payload names, never carries, the record: the stream reads
-- the record again under its own scoping (merchant, environment) before it says anything.
create or replace function notify_live_event() returns trigger
language plpgsql as $$
declare
  kind text := tg_argv[0];
  ref text;
begin
  if kind = 'payroll' then
    ref := new.batch_ref;
  else
    ref := new.reference;
  end if;
  perform pg_notify('live_events', json_build_object(
    'k', kind,
    'm', new.merchant_id,
    'c', new.chain_id,
    'r', ref,
    's', new.status
  )::text);
  return null;
end
$$;

create trigger payments_live after insert or update of status, payer, chain_tx_hash, submitted_tx_hash
  on payments for each row execute function notify_live_event('payment');
create trigger streams_live after insert or update of status, withdrawn
  on streams for each row execute function notify_live_event('stream');
create trigger payroll_batches_live after insert or update
  on payroll_batches for each row execute function notify_live_event('payroll');
create trigger escrows_live after insert or update of status
  on escrows for each row execute function notify_live_event('escrow');
