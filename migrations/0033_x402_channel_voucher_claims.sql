-- A batch-settlement channel whose terms commit no payer authorizer has its vouchers checked
-- against the payer when they are claimed: through ERC-1271 when the payer has code (a smart
-- account, or an EOA that delegates its code later), which may answer otherwise by then. Such a
-- voucher is claimed before its call is answered, in a transaction of its own: a claim of kind
-- `voucher` (one channel, its receiver settled in the same transaction), recorded before it is
-- sent like every claim. Several may be in flight at once (the unique index holds the claim
-- job's batches only).
alter table x402_channel_claims drop constraint x402_channel_claims_kind_check;
alter table x402_channel_claims add constraint x402_channel_claims_kind_check
  check (kind in ('claim', 'refund', 'voucher'));
