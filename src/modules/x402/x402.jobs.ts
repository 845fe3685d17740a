/** x402 jobs: the sweep that settles or fails attempts left PENDING. */
import { defineCron } from "../../queue/registry.ts";
import type { Deps } from "../../deps.ts";
import type { X402AgentPort } from "./x402.types.ts";
import { reconcilePending } from "./x402.reconcile.ts";

export function x402Jobs(agents: (deps: Deps) => X402AgentPort) {
  return [
    defineCron<Deps>({
      name: "x402.reconcile-pending",
      cron: "* * * * *",
      handler: async ({ deps }) => {
        await reconcilePending({ ...deps, agents: agents(deps) });
      },
    }),
  ];
}
