/**
 * /api/payroll/run (x-api-key: the merchant's key or a secret key with the payroll scope) and the
 * external wallet's sign requests under /api/merchant/wallet/sign-requests (merchant cookie or
 * key). The credential's environment (a key's prefix, a session's mode) picks the chain of a new
 * batch, and only that chain's batches and sign requests are seen or acted on.
 */
import { Hono } from "hono";
import type { Deps } from "../../deps.ts";
import { presentQuery, readJsonObject } from "../../http/body.ts";
import { parseOrThrow } from "../../http/contract.ts";
import { type AuthEnv, guard, merchantOf, profileOf } from "../../http/auth.ts";
import { idempotent } from "../../http/idempotency.ts";
import { M } from "../../http/messages.ts";
import * as service from "./payroll.service.ts";
import { listSignRequests, submitSignRequest } from "./payroll.signing.ts";
import { ApiError } from "../../http/errors.ts";
import { batchQuery, parseRunBody, RunBodyError, signRequestBody } from "./payroll.schemas.ts";
import type { TargetPolicy } from "../webhooks/webhooks.targets.ts";

/** The run body, or the 400 naming what (and which recipient) is malformed. */
function runInput(body: Record<string, unknown>, policy: TargetPolicy) {
  try {
    return parseRunBody(body, policy);
  } catch (e) {
    if (e instanceof RunBodyError) {
      throw new ApiError(400, e.message, { hint: e.hint, extra: e.extra });
    }
    throw e;
  }
}

export function payrollApi(deps: Deps) {
  const app = new Hono<AuthEnv>();
  const payroll = (write: boolean) =>
    guard(deps, {
      accept: ["apiKey"],
      keyKinds: ["merchant", "secret"],
      scope: "payroll",
      write,
      messages: { missing: M.authRequiredShort },
    });
  const signing = (write: boolean) =>
    guard(deps, {
      accept: ["cookie", "apiKey"],
      keyKinds: ["merchant", "secret"],
      scope: "payroll",
      write,
      messages: { missing: M.authRequiredShort },
    });

  app.post("/api/payroll/run", payroll(true), idempotent(deps), async (c) => {
    const input = runInput(await readJsonObject(c), deps.config.WEBHOOK_TARGETS);
    const r = await service.runBatch(
      deps,
      merchantOf(c),
      profileOf(c),
      input,
      c.req.header("idempotency-key"),
    );
    const view = service.batchView(deps, r.batch, r.recipients);
    return c.json({
      success: true,
      batchRef: view.batchRef,
      status: view.status,
      totalAmount: view.totalAmount,
      recipientCount: view.recipientCount,
      successCount: view.successCount,
      failedCount: view.failedCount,
      pendingSignatureCount: view.pendingSignatureCount,
      results: view.results,
      message: service.runMessage(r.batch),
    });
  });

  app.get("/api/payroll/run", payroll(false), async (c) => {
    const { batchRef } = parseOrThrow(batchQuery, presentQuery(c));
    const r = await service.getBatch(deps, merchantOf(c).id, profileOf(c), batchRef);
    return c.json({ success: true, batch: service.batchView(deps, r.batch, r.recipients) });
  });

  app.get("/api/merchant/wallet/sign-requests", signing(false), async (c) => {
    return c.json({
      success: true,
      signRequests: await listSignRequests(deps, merchantOf(c), profileOf(c)),
    });
  });

  app.post("/api/merchant/wallet/sign-requests/:id", signing(true), async (c) => {
    const { txHash } = parseOrThrow(signRequestBody, await readJsonObject(c));
    const r = await submitSignRequest(
      deps,
      merchantOf(c),
      profileOf(c),
      c.req.param("id"),
      txHash,
    );
    return c.json({ success: true, ...r });
  });

  return app;
}
