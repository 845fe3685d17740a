/** The dashboard's view of the merchant's escrows (escrow.section.tsx). */
import type { Deps } from "../../deps.ts";
import { checksum } from "../../chain/address.ts";
import { controlledWallet } from "../wallets/wallets.service.ts";
import { countdown } from "./escrow.rules.ts";
import {
  type EscrowRow,
  type EscrowScope,
  escrowView,
  getEscrow,
  listEscrows,
} from "./escrow.service.ts";

/**
 * The dashboard's list: each escrow with the actions the merchant may take as the wallets it
 * controls (release as depositor, confirm as beneficiary, dispute as either, refund once
 * expired), while ACTIVE, and the links of its transactions.
 */
export async function dashboardEscrows(deps: Deps, scope: EscrowScope) {
  const rows = await listEscrows(deps, scope, { limit: 50 });
  const now = deps.clock.now();
  return await Promise.all(rows.map((e) => item(deps, scope, e, now)));
}

/** One of the merchant's escrows as the list shows it (a DISPUTED panel refreshes itself). */
export async function dashboardEscrow(deps: Deps, scope: EscrowScope, reference: string) {
  return await item(deps, scope, await getEscrow(deps, scope, reference), deps.clock.now());
}

async function item(deps: Deps, scope: EscrowScope, e: EscrowRow, now: Date) {
  const m = { id: scope.merchantId };
  const mine = async (address: string) => !!(await controlledWallet(deps, m.id, { address }));
  const [dep, ben] = await Promise.all([mine(e.depositor), mine(e.beneficiary)]);
  const actions: {
    action: "release" | "confirm" | "dispute" | "refund";
    callerSCA: string;
  }[] = [];
  if (e.status === "ACTIVE") {
    if (dep) actions.push({ action: "release", callerSCA: checksum(e.depositor) });
    if (ben && !e.confirmedAt) {
      actions.push({ action: "confirm", callerSCA: checksum(e.beneficiary) });
    }
    if (dep || ben) {
      actions.push({ action: "dispute", callerSCA: checksum(dep ? e.depositor : e.beneficiary) });
    }
    // Anyone may refund an expired escrow (the operator sends it); shown once it has expired.
    if (e.expiresAt.getTime() <= now.getTime()) actions.push({ action: "refund", callerSCA: "" });
  }
  const v = escrowView(deps, e);
  const profile = deps.chain.profileOf(e.chainId);
  const link = (label: string, hash: string | null) =>
    hash ? [{ label, href: deps.chain.explorerTxUrl(profile, hash) }] : [];
  const links = [
    ...link("Confirmation transaction", e.confirmTxHash),
    ...link("Dispute transaction", e.disputeTxHash),
    ...link("Release transaction", e.releaseTxHash),
    ...link("Refund transaction", e.refundTxHash),
    ...link("Resolution transaction", e.resolveTxHash),
  ];
  return { ...v, countdown: countdown(e.expiresAt, now), actions, links };
}
