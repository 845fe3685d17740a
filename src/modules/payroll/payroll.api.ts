/**
 * /api/payroll/run (x-api-key: the merchant's key or a secret key with the payroll scope) and the
 * external wallet's sign requests under /api/merchant/wallet/sign-requests (merchant cookie or
 * key). The credential's environment (a key's prefix, a session's mode) picks the chain of a new
 * batch, and only that chain's batches and sign requests are seen or acted on.
 */
import { z } from "zod";
import { errorBody, errors } from "../../http/contract.ts";
import { defineRoute, type RouteAuth } from "../../http/route.ts";
import { M } from "../../http/messages.ts";
import * as service from "./payroll.service.ts";
import { listSignRequests, submitSignRequest } from "./payroll.signing.ts";
import { ApiError } from "../../http/errors.ts";
import {
  batchQuery,
  batchResource,
  listSignResponse,
  parseRunBody,
  PAYROLL_EXAMPLE,
  runBodyDoc,
  RunBodyError,
  runError,
  runResponse,
  signRequestBody,
  signRequestParams,
  submitSignResponse,
} from "./payroll.schemas.ts";
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

const payroll = (write: boolean): RouteAuth => ({
  accept: ["apiKey"],
  keyKinds: ["merchant", "secret"],
  scope: "payroll",
  write,
  messages: { missing: M.authRequiredShort },
});
const signing = (write: boolean): RouteAuth => ({
  accept: ["cookie", "apiKey"],
  keyKinds: ["merchant", "secret"],
  scope: "payroll",
  write,
  messages: { missing: M.authRequiredShort },
});
const tag = "Payroll";

export const payrollRoutes = [
  defineRoute({
    method: "post",
    path: "/api/payroll/run",
    summary: "Pay up to 5,000 recipients in USDC from your wallet",
    tag,
    auth: payroll(true),
    idempotent: true,
    body: runBodyDoc,
    bodyExample: PAYROLL_EXAMPLE,
    responses: {
      200: {
        description:
          "The batch: finished, or PROCESSING with the results so far (it finishes in the background)",
        schema: runResponse,
      },
      400: { description: "Malformed request; nothing recorded or sent", schema: runError },
      ...errors([401, 403, 409, 429, 500]),
    },
    parseBody: (raw, deps) => runInput(raw, deps.config.WEBHOOK_TARGETS),
    handler: async (x) => {
      const r = await service.runBatch(x.deps, x.merchant, x.profile, x.body, x.idempotencyKey);
      return {
        ...service.batchView(x.deps, r.batch, r.recipients),
        message: service.runMessage(r.batch),
      };
    },
    // A zero amount is well-formed and ends FAILED without sending anything.
    fuzz: {
      sample: {
        recipients: [{ recipientSCA: "$dead", amount: "0", label: "fuzz" }],
        description: "fuzz",
      },
      extra: ["index", "example"],
      hintObject: true,
      runsDivisor: 3,
    },
  }),
  defineRoute({
    method: "get",
    path: "/api/payroll/run",
    summary: "A payroll batch with every recipient's result",
    tag,
    auth: payroll(false),
    query: batchQuery,
    responses: {
      200: {
        description: "The batch",
        schema: z.object({ success: z.literal(true), batch: batchResource }),
      },
      ...errors([400, 401, 403, 404, 429]),
    },
    handler: async (x) => {
      const r = await service.getBatch(x.deps, x.merchant.id, x.profile, x.query.batchRef);
      return { batch: service.batchView(x.deps, r.batch, r.recipients) };
    },
    fuzz: {},
  }),
  defineRoute({
    method: "get",
    path: "/api/merchant/wallet/sign-requests",
    summary: "Payroll payments waiting for your external wallet to send them",
    tag,
    auth: signing(false),
    responses: {
      200: { description: "Pending sign requests, oldest batch first", schema: listSignResponse },
      ...errors([401, 403, 429]),
    },
    handler: async (x) => ({
      signRequests: await listSignRequests(x.deps, x.merchant, x.profile),
    }),
  }),
  defineRoute({
    method: "post",
    path: "/api/merchant/wallet/sign-requests/:id",
    summary: "Report the transaction your wallet sent for a sign request; checked on chain",
    tag,
    auth: signing(true),
    params: signRequestParams,
    body: signRequestBody,
    bodyExample: { txHash: `0x${"ab".repeat(32)}` },
    responses: {
      200: { description: "Verified on chain; the recipient is paid", schema: submitSignResponse },
      400: { description: "Malformed hash, or not the requested transfer", schema: errorBody },
      ...errors([401, 403, 404, 409, 429, 500]),
    },
    handler: async (x) =>
      await submitSignRequest(x.deps, x.merchant, x.profile, x.params.id, x.body.txHash),
    fuzz: { bodies: false },
  }),
];
