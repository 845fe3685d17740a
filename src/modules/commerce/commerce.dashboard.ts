/** The dashboard's view of the jobs a merchant takes part in (agents.section.tsx). */
import type { Deps } from "../../deps.ts";
import type { ProfileName } from "../../chain/profiles.ts";
import type { MerchantRow } from "../merchants/merchants.types.ts";
import { jobsForParties, jobView, reconcile } from "./commerce.service.ts";

/**
 * The dashboard's list: jobs the merchant created or where one of its wallets is a party, with
 * the merchant's wallet id for each role it holds (the actions it may take), on `profile`'s
 * chain only (the session's mode: a test-mode page never shows a live job).
 */
export async function dashboardJobs(
  deps: Deps,
  m: MerchantRow,
  profile: ProfileName,
  wallets: { id: string; address: string }[],
) {
  const byAddress = new Map(wallets.map((w) => [w.address.toLowerCase(), w.id]));
  const rows = await jobsForParties(deps, profile, m.id, [...byAddress.keys()], 50);
  // Open jobs are read from the chain too (a party may act on the contract directly); a read
  // that fails shows the row as it is.
  const current = await Promise.all(rows.map((j) => reconcile(deps, j).catch(() => j)));
  return current.map((j) => ({
    view: jobView(deps, j),
    walletOf: {
      client: byAddress.get(j.client) ?? null,
      provider: byAddress.get(j.provider) ?? null,
      evaluator: byAddress.get(j.evaluator) ?? null,
    },
  }));
}
