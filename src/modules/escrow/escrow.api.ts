/**
 * /api/escrow/*: the merchant's secret or merchant key, as `Authorization: Bearer` or `x-api-key`
 * (publishable and scope-limited keys without `escrow` are refused), in the escrow rate-limit
 * group; every POST takes an Idempotency-Key. A key's prefix is its environment: it picks the
 * chain of a new escrow, and only that chain's escrows are seen or acted on (another
 * environment's answer 404, like another merchant's).
 */
import { z } from "zod";
import { errors } from "../../http/contract.ts";
import { defineRoute, type RouteAuth, type RouteRequest } from "../../http/route.ts";
import { M } from "../../http/messages.ts";
import * as service from "./escrow.service.ts";
import type { EscrowScope } from "./escrow.service.ts";
import { apiCreateKey } from "./escrow.rules.ts";
import {
  CREATE_HINTS,
  createEscrowBody,
  disputeBody,
  escrowQuery,
  escrowRecord,
  hash,
  iso,
  partyActionBody,
  refundBody,
  resolveBody,
} from "./escrow.schemas.ts";

const MESSAGES = {
  release: M.escrowReleased,
  confirm: M.escrowConfirmed,
  refund: M.escrowRefunded,
  resolveReleased: M.escrowResolvedReleased,
  resolveRefunded: M.escrowResolvedRefunded,
} as const;

const merchantKey = (write: boolean): RouteAuth => ({
  accept: ["bearer", "apiKey"],
  keyKinds: ["merchant", "secret"],
  scope: "escrow",
  write,
  group: "escrow",
});
const write = merchantKey(true);
const read = merchantKey(false);
// DESIGN §9: the operator credential, and nothing else, resolves disputes.
const operator: RouteAuth = {
  accept: ["bearer", "apiKey"],
  keyKinds: ["operator"],
  write: true,
  group: "escrow",
};
const scopeOf = (x: RouteRequest<unknown, unknown>): EscrowScope => ({
  merchantId: x.merchant.id,
  profile: x.profile,
  resumed: x.resumed,
});

function done(r: Awaited<ReturnType<typeof service.release>>) {
  return {
    escrow: r.escrow,
    txHash: r.txHash,
    explorerUrl: r.explorerUrl,
    message: MESSAGES[r.done],
  };
}

const ok = z.literal(true);
const actionResponse = z.object({
  success: ok,
  escrow: escrowRecord,
  txHash: hash,
  explorerUrl: z.string(),
  message: z.string(),
});

const refusal = (text: string) => ({ description: text, schema: errorWithBalance });
const errorWithBalance = z.object({
  success: z.literal(false),
  error: z.string(),
  hint: z.string().optional(),
  balance: z.string().optional(),
  txHash: z.string().optional(),
});

const tag = "Escrow";
const chainErrors = errors([401, 404, 408, 409, 429, 500, 502], errorWithBalance);

export const escrowRoutes = [
  defineRoute({
    method: "post",
    path: "/api/escrow/create",
    summary: "Hold USDC from one of your wallets for a beneficiary until release or expiry",
    tag,
    auth: write,
    idempotent: true,
    body: createEscrowBody("any"),
    bodyExample: {
      depositorWalletId: "3f1c…",
      beneficiarySCA: "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4",
      amount: "25.00",
      expiresInSeconds: 86400,
      description: "Logo design",
    },
    responses: {
      201: {
        description: "Funded on chain",
        schema: z.object({
          success: ok,
          reference: z.string(),
          status: z.literal("ACTIVE"),
          amount: z.string(),
          currency: z.literal("USDC"),
          depositor: z.string(),
          beneficiary: z.string(),
          expiresAt: iso,
          txHash: hash,
          explorerUrl: z.string(),
          escrow: escrowRecord,
        }),
      },
      400: refusal("Malformed input, or the depositor's balance is too low (then `balance`)"),
      403: refusal("The depositor is not a wallet you control, or the key may not do this"),
      ...chainErrors,
    },
    bodyFor: (deps) => createEscrowBody(deps.config.WEBHOOK_TARGETS),
    hints: CREATE_HINTS,
    handler: async (x) => {
      // The key names one escrow (also after a crash: the retry finds what the dead one did).
      const requestKey = x.idempotencyKey === undefined
        ? undefined
        : apiCreateKey(x.idempotencyKey, x.profile, x.body);
      const e = service.escrowView(
        x.deps,
        await service.createEscrow(x.deps, x.merchant, x.profile, x.body, requestKey),
      );
      return { ...e, status: "ACTIVE", escrow: e };
    },
    fuzz: {
      sample: {
        depositorSCA: "$wallet",
        beneficiarySCA: "$dead",
        amount: "1.00",
        expiresInSeconds: 3600,
        description: "fuzz",
      },
      as: "key",
      extra: ["balance"],
    },
  }),
  ...(["release", "confirm"] as const).map((op) =>
    defineRoute({
      method: "post",
      path: `/api/escrow/${op}`,
      summary: op === "release"
        ? "The depositor releases the amount to the beneficiary"
        : "The beneficiary marks the delivery done (the escrow stays ACTIVE)",
      tag,
      auth: write,
      idempotent: true,
      body: partyActionBody,
      bodyExample: { reference: "escrow_…", callerSCA: "0x…" },
      responses: {
        200: { description: "Mined", schema: actionResponse },
        400: refusal("Malformed input, or the escrow's state does not allow it"),
        403: refusal(
          `callerSCA is not the ${op === "release" ? "depositor" : "beneficiary"}, or not yours`,
        ),
        ...chainErrors,
      },
      handler: async (x) =>
        done(await service[op](x.deps, scopeOf(x), x.body.reference, x.body.callerSCA)),
      fuzz: {
        sample: { reference: "escrow_abc_def", callerSCA: "$wallet" },
        as: "key",
        runsDivisor: 3,
      },
    })
  ),
  defineRoute({
    method: "post",
    path: "/api/escrow/dispute",
    summary: "Depositor or beneficiary disputes an ACTIVE escrow",
    tag,
    auth: write,
    idempotent: true,
    body: disputeBody,
    bodyExample: { reference: "escrow_…", callerSCA: "0x…", reason: "Never delivered" },
    responses: {
      200: {
        description: "Disputed on chain",
        schema: z.object({
          success: ok,
          escrow: z.object({
            reference: z.string(),
            status: z.literal("DISPUTED"),
            disputeReason: z.string(),
            disputedBy: z.string(),
            disputeTxHash: hash,
          }),
          txHash: hash,
          explorerUrl: z.string(),
          message: z.string(),
        }),
      },
      400: refusal("Malformed input, or not ACTIVE: `Escrow is RELEASED — cannot dispute.`"),
      403: refusal("callerSCA is not a party, or not a wallet you control"),
      ...chainErrors,
    },
    handler: async (x) => ({
      ...await service.dispute(x.deps, scopeOf(x), x.body),
      message: M.escrowDisputed,
    }),
    fuzz: {
      sample: { reference: "escrow_abc_def", callerSCA: "$wallet", reason: "late" },
      as: "key",
    },
  }),
  defineRoute({
    method: "post",
    path: "/api/escrow/refund",
    summary: "Refund an expired ACTIVE escrow to the depositor (also automatic at expiry)",
    tag,
    auth: write,
    idempotent: true,
    body: refundBody,
    bodyExample: { reference: "escrow_…" },
    responses: {
      200: { description: "Mined", schema: actionResponse },
      400: refusal("Malformed input, not expired yet, or not ACTIVE"),
      403: refusal("The key may not do this"),
      ...chainErrors,
    },
    handler: async (x) => done(await service.refund(x.deps, scopeOf(x), x.body.reference)),
    fuzz: { sample: { reference: "escrow_abc_def" }, as: "key", runsDivisor: 3 },
  }),
  defineRoute({
    method: "post",
    path: "/api/escrow/resolve",
    summary: "The operator resolves a DISPUTED escrow (operator key only)",
    tag,
    auth: operator,
    idempotent: true,
    body: resolveBody,
    bodyExample: { reference: "escrow_…", outcome: "refunded" },
    responses: {
      200: { description: "Mined", schema: actionResponse },
      400: refusal("Malformed input, or the escrow is not DISPUTED"),
      403: refusal("Not an operator key (merchant keys are refused)"),
      ...chainErrors,
    },
    handler: async (x) => done(await service.resolve(x.deps, x.body.reference, x.body.outcome)),
  }),
  defineRoute({
    method: "get",
    path: "/api/escrow",
    summary: "One escrow (`reference`) or yours, newest first",
    tag,
    auth: read,
    query: escrowQuery,
    responses: {
      200: {
        description: "`escrow` with `reference`, else `escrows`",
        schema: z.union([
          z.object({ success: ok, escrow: escrowRecord }),
          z.object({ success: ok, escrows: z.array(escrowRecord) }),
        ]),
      },
      ...errors([400, 401, 403, 404, 429]),
    },
    queryErrors: {},
    handler: async (x) => {
      const q = x.query;
      if (q.reference !== undefined) {
        const e = await service.getEscrow(x.deps, scopeOf(x), q.reference);
        return { escrow: service.escrowView(x.deps, e) };
      }
      const rows = await service.listEscrows(x.deps, scopeOf(x), {
        status: q.status,
        limit: q.limit,
      });
      return { escrows: rows.map((e) => service.escrowView(x.deps, e)) };
    },
    fuzz: { as: "key" },
  }),
];
