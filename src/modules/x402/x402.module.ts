/**
 * The x402 module's entry. The agent port is a constructor argument so the agents module can
 * plug its ERC-8004 checks in from the module list without x402 importing it:
 *
 *   x402Module({ agentPort: (deps) => agentsX402Port(deps) })
 */
import type { Deps } from "../../deps.ts";
import type { AppModule } from "../module.ts";
import { x402ApiRoutes } from "./x402.api.ts";
import { facilitatorRoutes, x402StandardApi } from "./x402.standard.api.ts";
import type { X402Deps } from "./x402.context.ts";
import { x402Jobs } from "./x402.jobs.ts";
import { defaultAgentPort, type X402AgentPort } from "./x402.types.ts";
import { batchingSettler, type Settler } from "./x402.settler.ts";
import { gatewaySettleJob, startGatewaySettlement } from "./x402.batched.jobs.ts";
import { gatewayPages } from "./x402.pages.tsx";

export interface X402ModuleOptions {
  /** Default: checks the agentId's format only. */
  agentPort?: (deps: Deps) => X402AgentPort;
  /** Settle gateway proofs that arrive while a settlement is in flight together (default true). */
  batchSettlements?: boolean;
}

export function x402Module(opts: X402ModuleOptions = {}): AppModule {
  const make = opts.agentPort ?? (() => defaultAgentPort);
  // One port per deps: the API and the jobs share it.
  const ports = new WeakMap<Deps, X402AgentPort>();
  const port = (deps: Deps) => {
    let p = ports.get(deps);
    if (!p) ports.set(deps, p = make(deps));
    return p;
  };
  const settlers = new WeakMap<Deps, Settler>();
  const settler = (deps: Deps) => {
    if (opts.batchSettlements === false) return undefined;
    let s = settlers.get(deps);
    if (!s) settlers.set(deps, s = batchingSettler(deps));
    return s;
  };
  // The deps every x402 handler runs on: the app's, with the agent port and the settler.
  const xs = new WeakMap<Deps, X402Deps>();
  const xOf = (deps: Deps) => {
    let x = xs.get(deps);
    if (!x) xs.set(deps, x = { ...deps, agents: port(deps), settler: settler(deps) });
    return x;
  };
  return {
    name: "x402",
    // The facilitator first: the document's order since x402 had its own list.
    table: [...facilitatorRoutes(xOf), ...x402ApiRoutes(xOf)],
    // The paid proxy `/x402/{slug}` is not an /api/ route: mounted by hand.
    api: (deps) => x402StandardApi(xOf(deps)),
    // An outside payer's page for its gateway balance (/gateway).
    pages: gatewayPages,
    jobs: [...x402Jobs(port), gatewaySettleJob],
    onStart: startGatewaySettlement,
  };
}
