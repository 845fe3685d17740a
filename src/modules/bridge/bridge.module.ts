/** The bridge module's entry: API, pages, step jobs, and the resume of open transfers on start. */
import type { AppModule } from "../module.ts";
import { bridgeRoutes } from "./bridge.api.ts";
import { bridgePages } from "./bridge.pages.tsx";
import { bridgeJobsWith } from "./bridge.jobs.ts";
import { type BridgeHooks, resumeOpen } from "./bridge.steps.ts";

export function bridgeModuleWith(hooks: BridgeHooks = {}): AppModule {
  return {
    name: "bridge",
    table: bridgeRoutes,
    pages: bridgePages,
    jobs: bridgeJobsWith(hooks),
    // A process killed mid-transfer left a step undone: enqueue each open transfer's step again.
    onStart: async (deps) => {
      await resumeOpen(deps);
    },
  };
}

export const bridgeModule = bridgeModuleWith();
