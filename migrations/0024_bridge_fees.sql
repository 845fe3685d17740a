-- Bridge fees and speed (CCTP v2 against Circle's contracts, docs/decisions.md "Bridge: fees").
-- transfer_speed: 'standard' (minFinalityThreshold 2000) or 'fast' (1000).
-- burn_amount: what is burned on the source chain; for a cross-chain checkout the payment's
--   amount plus the fee, so the merchant receives the whole amount (null on rows from before:
--   the amount itself).
-- max_fee: the burn's maxFee (the most the destination may keep), quoted when the transfer
--   was created from the messenger's minimum fee and the attestation service's fee tiers.
-- fee_executed / finality_executed: what the attestation filled in.
-- fee_collected: what the mint kept (MintAndWithdraw.feeCollected); minted_amount is what
--   the recipient got.
alter table bridge_transfers
  add column transfer_speed text not null default 'standard'
    check (transfer_speed in ('standard', 'fast')),
  add column burn_amount bigint check (burn_amount > 0),
  add column max_fee bigint not null default 0 check (max_fee >= 0),
  add column fee_executed bigint,
  add column finality_executed integer,
  add column fee_collected bigint;
