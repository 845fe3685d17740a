/**
 * /gateway: the page an outside payer uses for its gateway balance (views/x402/gateway.tsx). It
 * names the vault, USDC's EIP-712 domain and the vault's delay; everything else is the public
 * payer API, called by the page's script with what the payer's wallet signs.
 */
import { Hono } from "hono";
import type { Deps } from "../../deps.ts";
import { type AuthEnv, guard } from "../../http/auth.ts";
import { GatewayPage } from "../../../views/x402/gateway.tsx";
import { usdcDomain } from "../../chain/eip3009.ts";
import { checksum } from "../../chain/address.ts";
import { x402Profile } from "./x402.context.ts";

export function gatewayPages(deps: Deps) {
  const app = new Hono<AuthEnv>();
  const open = guard(deps, { accept: [], group: "checkout" });
  app.get("/gateway", open, async (c) => {
    const profile = x402Profile(deps);
    if (!deps.chain.has(profile)) return c.text("x402 is not served by this deployment", 404);
    const rt = deps.chain.runtime(profile);
    const domain = usdcDomain(rt);
    const delay = await deps.chain.gateway.withdrawalDelay(profile);
    c.header("Cache-Control", "no-store");
    return c.html(
      <GatewayPage
        view={{
          network: `eip155:${rt.chainId}`,
          chainId: rt.chainId,
          chainName: rt.profile.label,
          vault: checksum(deps.chain.contract(profile, "GatewayVault")),
          usdc: checksum(domain.verifyingContract),
          usdcName: domain.name,
          usdcVersion: domain.version,
          delaySeconds: Number(delay),
        }}
      />,
    );
  });
  return app;
}
