/** The dashboard's view of the jobs a merchant takes part in (agents.section.tsx). */
import type { Deps } from "../../deps.ts";
import type { ProfileName } from "../../chain/profiles.ts";
import type { MerchantRow } from "../merchants/merchants.types.ts";
import * as repo from "./commerce.repo.ts";
import { jobView, reconcile } from "./commerce.service.ts";

/**
 * The dashboard's list: jobs the merchant created or where one of its wallets is a party, with
 * the merchant's wallet id for each role it holds (the actions it may take).
 */
export async function dashboardJobs(
  deps: Deps,
  m: MerchantRow,
  wallets: { id: string; address: string }[],
  profiles: ProfileName[],
) {
  const byAddress = new Map(wallets.map((w) => [w.address.toLowerCase(), w.id]));
  const rows = await repo.listForParties(deps.sql, {
    // The session's mode's chain only (a test-mode page never shows a live job).
    chainIds: profiles.filter((p) => deps.chain.has(p)).map((p) => deps.chain.chainId(p)),
    merchantId: m.id,
    addresses: [...byAddress.keys()],
    limit: 50,
  });
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
