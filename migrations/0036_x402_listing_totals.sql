-- A listing's settled calls, failures and revenue across every way it is paid. Before, the
-- dashboard counted x402_payments only (exact and spec flows): a listing paid on the gateway
-- balance or through batch-settlement channels showed 0 calls and 0 revenue however much it
-- had earned. Those two are counted here as they settle, off the paid path: a gateway charge
-- when its batch is confirmed (settled: a call; refused by the vault: a failure) or when the
-- round drops a released charge from the queue (its upstream failed: a failure, nothing
-- charged); a channel's calls when its claimed total passes them (`counted` is how far they
-- have been counted, so each is counted once whoever raises `claimed`).
create table x402_listing_totals (
  listing_id uuid primary key references x402_listings (id),
  calls bigint not null default 0,
  failed bigint not null default 0,
  revenue bigint not null default 0
);

alter table x402_channels add column counted bigint not null default 0;

insert into x402_listing_totals (listing_id, calls, failed, revenue)
select listing_id, sum(calls), sum(failed), sum(revenue) from (
  select c.listing_id,
    count(*) filter (where c.status = 'settled') as calls,
    count(*) filter (where c.status in ('failed', 'released')) as failed,
    coalesce(sum(c.amount) filter (where c.status = 'settled'), 0) as revenue
  from x402_gateway_charges c
  where c.listing_id is not null
    and (c.status in ('settled', 'failed')
      or (c.status = 'released'
        and not exists (select 1 from x402_gateway_unbatched q where q.charge_id = c.id)))
  group by c.listing_id
  union all
  select g.listing_id, count(*), 0, sum(g.amount)
  from x402_channel_charges g join x402_channels ch on ch.channel_id = g.channel_id
  where g.listing_id is not null and g.cumulative <= ch.claimed
  group by g.listing_id
) t
group by listing_id;

update x402_channels set counted = claimed where claimed > 0;
