/**
 * /api/cctp/*: POST transfer (the consumer_token cookie; the source is always the consumer's own
 * managed wallet), the public chain descriptors and transfer status, and the local attester in
 * the shape of Circle's attestation API.
 */
import { Hono } from "hono";
import { getCookie } from "hono/cookie";
import type { Deps } from "../../deps.ts";
import { DomainError } from "../../errors.ts";
import { parseQuery, readJsonObject } from "../../http/body.ts";
import { parseOrThrow } from "../../http/contract.ts";
import { type AuthEnv, guard } from "../../http/auth.ts";
import { M } from "../../http/messages.ts";
import { idempotent } from "../../http/idempotency.ts";
import { CONSUMER_COOKIE } from "../../http/session-token.ts";
import { profileForDomain } from "../../chain/profiles.ts";
import { localFeeTiers } from "./bridge.attestation.ts";
import * as service from "./bridge.service.ts";
import { DESTINATION_CHAIN, isSupportedSource } from "./bridge.rules.ts";
import { REQUIRED_FIELDS, statusQuery, transferBody } from "./bridge.schemas.ts";

export function bridgeApi(deps: Deps) {
  const app = new Hono<AuthEnv>();
  const open = guard(deps, { accept: [] });

  app.post("/api/cctp/transfer", open, idempotent(deps), async (c) => {
    const account = await service.signedIn(deps, getCookie(c, CONSUMER_COOKIE));
    const body = await readJsonObject(c);
    if (REQUIRED_FIELDS.some((f) => body[f] === undefined || body[f] === null || body[f] === "")) {
      throw new DomainError("bridge_fields_missing");
    }
    if (typeof body.fromChain !== "string" || !isSupportedSource(body.fromChain)) {
      throw new DomainError("bridge_source_unsupported", {
        chain: String(body.fromChain).slice(0, 64),
      });
    }
    if (body.toChain !== DESTINATION_CHAIN) throw new DomainError("bridge_destination_unsupported");
    const input = parseOrThrow(transferBody, body);
    const request = {
      fromChain: body.fromChain,
      amount: input.amount,
      recipient: input.recipient,
      transferSpeed: input.transferSpeed,
    };
    const t = input.paymentReference
      ? await service.payFromChain(deps, account, input.paymentReference, request)
      : await service.startTransfer(deps, account, request);
    const statusUrl = service.statusPath(t.reference);
    const view = service.transferView(deps, t);
    return c.json({
      success: true,
      status: "pending",
      reference: t.reference,
      message: `${M.bridgeStarted} GET ${statusUrl}`,
      statusUrl,
      transferSpeed: view.transferSpeed,
      burnAmount: view.burnAmount,
      maxFee: view.maxFee,
    }, 202);
  });

  app.get("/api/cctp/transfer", open, (c) => c.json({ success: true, ...service.descriptors() }));

  app.get("/api/cctp/transfer/status", open, async (c) => {
    const { reference } = parseQuery(c, statusQuery);
    const t = await service.findTransfer(deps, reference);
    return c.json({ success: true, ...service.transferView(deps, t) });
  });

  // The local attester under Circle's API paths: CCTP_ATTESTATION_API_URL may be set to
  // `$BASE_URL/api/cctp/attestation` (another process, or a peer deployment, asks it over HTTP).
  // It answers whenever it holds attester keys, whether or not this process uses it itself.
  app.get("/api/cctp/attestation/v2/messages/:sourceDomain", open, async (c) => {
    const domain = c.req.param("sourceDomain");
    const hash = c.req.query("transactionHash") ?? "";
    if (!/^\d{1,10}$/.test(domain) || !/^0x[0-9a-fA-F]{64}$/.test(hash)) {
      return c.json({ error: "Invalid sourceDomain or transactionHash" }, 400);
    }
    const chain = profileForDomain(Number(domain));
    if (!chain) return c.json({ error: "Message not found" }, 404);
    try {
      const messages = await deps.chain.cctp.attest(chain, hash as `0x${string}`);
      if (!messages) return c.json({ error: "Message not found" }, 404);
      return c.json({ messages });
    } catch (e) {
      if (e instanceof DomainError && e.code === "chain_unavailable") {
        return c.json({ error: e.details.hint ?? "attester unavailable" }, 503);
      }
      throw e;
    }
  });

  app.get(
    "/api/cctp/attestation/v2/burn/USDC/fees/:sourceDomain/:destinationDomain",
    open,
    (c) => {
      const { sourceDomain, destinationDomain } = c.req.param();
      if (!/^\d{1,10}$/.test(sourceDomain) || !/^\d{1,10}$/.test(destinationDomain)) {
        return c.json({ error: "Invalid sourceDomain or destinationDomain" }, 400);
      }
      return c.json(localFeeTiers(deps));
    },
  );

  return app;
}
