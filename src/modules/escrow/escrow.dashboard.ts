/** The dashboard's view of the merchant's escrows (escrow.section.tsx). */
import type { Deps } from "../../deps.ts";
import { checksum } from "../../chain/address.ts";
import { controlledWallet } from "../wallets/wallets.service.ts";
import { countdown } from "./escrow.rules.ts";
import { type EscrowScope, escrowView, listEscrows } from "./escrow.service.ts";

/**
 * The dashboard's list: each escrow with the actions the merchant may take as the wallets it
 * controls (release as depositor, confirm as beneficiary, dispute as either), while ACTIVE.
 */
export async function dashboardEscrows(deps: Deps, scope: EscrowScope) {
  const m = { id: scope.merchantId };
  const rows = await listEscrows(deps, scope, { limit: 50 });
  const now = deps.clock.now();
  return await Promise.all(rows.map(async (e) => {
    const mine = async (address: string) => !!(await controlledWallet(deps, m.id, { address }));
    const [dep, ben] = await Promise.all([mine(e.depositor), mine(e.beneficiary)]);
    const actions: { action: "release" | "confirm" | "dispute"; callerSCA: string }[] = [];
    if (e.status === "ACTIVE") {
      if (dep) actions.push({ action: "release", callerSCA: checksum(e.depositor) });
      if (ben && !e.confirmedAt) {
        actions.push({ action: "confirm", callerSCA: checksum(e.beneficiary) });
      }
      if (dep || ben) {
        actions.push({ action: "dispute", callerSCA: checksum(dep ? e.depositor : e.beneficiary) });
      }
    }
    const v = escrowView(deps, e);
    return { ...v, countdown: countdown(e.expiresAt, now), actions };
  }));
}
