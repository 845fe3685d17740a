-- Cross-chain checkout from the shopper's own wallet (docs/decisions.md "Cross-chain checkout
-- from the shopper's own wallet").
-- burn_mode: who burns on the source chain.
--   'service': our sender, from a managed wallet or the operator (consumer transfers, the
--     service-wallet checkout, x402 withdrawals out): every row from before;
--   'payer_authorization': our relayer submits the shopper's EIP-3009 authorization through
--     CheckoutBurner; payer_authorization keeps it ({ from, validAfter, validBefore, nonce,
--     signature }) so the burn step, or its retry after a crash, can send it;
--   'payer_wallet': the shopper's wallet sent approve + burn itself and reported the burn's hash;
--     the row starts 'burned' (the burn is read back from the chain before it is recorded).
alter table bridge_transfers
  add column burn_mode text not null default 'service'
    check (burn_mode in ('service', 'payer_authorization', 'payer_wallet')),
  add column payer_authorization jsonb;

-- A reported burn is recorded once: a second report of it finds the first.
create unique index bridge_transfers_reported_burn on bridge_transfers (from_chain, burn_tx_hash)
  where burn_mode = 'payer_wallet';

-- One transfer under way per payment among those we burn for (a second would burn twice). A burn
-- the shopper already made is recorded whatever else is under way: refusing it would strand
-- USDC that is already burned (its mint pays the payee; a second one settles as unmatched).
drop index bridge_transfers_payment_open;
create unique index bridge_transfers_payment_open on bridge_transfers (payment_reference)
  where payment_reference is not null and status in ('pending', 'burned', 'attested')
    and burn_mode <> 'payer_wallet';
