-- The reason of each dispute we send, written (and committed) before its transaction is signed:
-- the vault keeps only the reason's keccak256, so a dispute mined without its row's commit (a
-- process killed in between) takes its text from here when the escrow is caught up with the
-- chain (docs/decisions.md, "Escrow: catching up with the chain"). Keyed by the escrow's
-- reference, not a foreign key: it is written while the escrow's row is locked for the action.
create table escrow_dispute_reasons (
  reference text not null,
  reason_hash text not null,
  reason text not null,
  created_at timestamptz not null,
  primary key (reference, reason_hash)
);
