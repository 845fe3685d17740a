/**
 * /api/merchant/payment-link (merchant session) and /api/payments/* (API key: x-api-key or
 * bearer). All in the shared payments rate-limit bucket; creates take an Idempotency-Key.
 */
import { z } from "zod";
import { errors } from "../../http/contract.ts";
import { defineRoute, type RouteAuth } from "../../http/route.ts";
import { M } from "../../http/messages.ts";
import { usdcToNumber } from "../../money.ts";
import * as service from "./payments.service.ts";
import { paymentRecord as paymentView } from "./payments.rules.ts";
import {
  CREATE_HINTS,
  createExample,
  createPaymentBody,
  historyQuery,
  iso,
  paymentDetail,
  paymentRecord,
  recordExample,
  reference,
  status,
} from "./payments.schemas.ts";

const write: RouteAuth = {
  accept: ["apiKey", "bearer"],
  write: true,
  scope: "payments",
  group: "payments",
};
const read: RouteAuth = { accept: ["apiKey", "bearer"], scope: "payments", group: "payments" };
/**
 * The whole history: not for a publishable key (it ships in browsers). One payment by its
 * reference is, as the public checkout page shows it.
 */
const readAll: RouteAuth = { ...read, keyKinds: ["merchant", "secret"] };
const body = createPaymentBody("public");

export const paymentsRoutes = [
  defineRoute({
    method: "post",
    path: "/api/merchant/payment-link",
    summary: "Create a payment link (24 hours)",
    tag: "Payments",
    auth: { accept: ["cookie"], group: "payments" },
    idempotent: true,
    body,
    bodyExample: createExample,
    responses: {
      201: {
        description: "The link",
        schema: z.object({
          success: z.literal(true),
          reference: z.string(),
          checkoutUrl: z.string(),
          amount: z.number(),
          currency: z.string(),
          description: z.string().nullable(),
          merchant: z.string(),
          expiresIn: z.literal("24 hours"),
        }),
        example: {
          success: true,
          reference,
          checkoutUrl: `https://pay.example.com/checkout/${reference}`,
          amount: 25.5,
          currency: "USDC",
          description: "Order #1042",
          merchant: "Test Shop",
          expiresIn: "24 hours",
        },
      },
      ...errors([400, 401, 409, 429]),
    },
    bodyFor: (deps) => createPaymentBody(deps.config.WEBHOOK_TARGETS),
    hints: CREATE_HINTS,
    handler: async ({ deps, merchant, profile, body }) => {
      // The session's mode picks the chain, as a key's prefix does.
      const p = await service.createPayment(deps, merchant, "link", profile, body);
      return {
        reference: p.reference,
        checkoutUrl: service.checkoutUrl(deps, p.reference),
        amount: usdcToNumber(p.amount),
        currency: p.currency,
        description: p.description,
        merchant: merchant.businessName,
        expiresIn: "24 hours",
      };
    },
    fuzz: { sample: { amount: "1.50", description: "fuzz", metadata: { order: "1" } } },
  }),
  defineRoute({
    method: "get",
    path: "/api/merchant/payment-link",
    summary: "The 100 newest payment links",
    tag: "Payments",
    auth: { accept: ["cookie"] },
    responses: {
      200: {
        description: "Links, newest first",
        schema: z.object({
          success: z.literal(true),
          links: z.array(z.object({
            reference: z.string(),
            amount: z.number(),
            currency: z.string(),
            status,
            checkoutUrl: z.string(),
            createdAt: iso,
            description: z.string().nullable(),
            expiresAt: iso,
          })),
        }),
      },
      ...errors([401, 429]),
    },
    handler: async ({ deps, merchant, profile }) => {
      const { rows } = await service.history(deps, merchant.id, [profile], {
        kind: "link",
        limit: 100,
      });
      return {
        links: rows.map((p) => ({
          reference: p.reference,
          amount: usdcToNumber(p.amount),
          currency: p.currency,
          status: p.status,
          checkoutUrl: service.checkoutUrl(deps, p.reference),
          createdAt: p.createdAt.toISOString(),
          description: p.description,
          expiresAt: p.expiresAt.toISOString(),
        })),
      };
    },
  }),
  defineRoute({
    method: "post",
    path: "/api/payments/initialize",
    summary: "Create a hosted checkout session (120 minutes)",
    tag: "Payments",
    auth: write,
    idempotent: true,
    body,
    bodyExample: createExample,
    responses: {
      201: {
        description: "The session",
        schema: z.object({
          success: z.literal(true),
          reference: z.string(),
          checkoutUrl: z.string(),
          data: z.object({
            amount: z.number(),
            currency: z.string(),
            status,
            description: z.string().nullable(),
            expiresAt: iso,
          }),
        }),
      },
      ...errors([400, 401, 403, 409, 429]),
    },
    bodyFor: (deps) => createPaymentBody(deps.config.WEBHOOK_TARGETS),
    hints: CREATE_HINTS,
    handler: async ({ deps, merchant, profile, body }) => {
      const p = await service.createPayment(deps, merchant, "session", profile, body);
      return {
        reference: p.reference,
        checkoutUrl: service.checkoutUrl(deps, p.reference),
        data: {
          amount: usdcToNumber(p.amount),
          currency: p.currency,
          status: p.status,
          description: p.description,
          expiresAt: p.expiresAt.toISOString(),
        },
      };
    },
    fuzz: {
      sample: { amount: "2.00", currency: "USDC", description: "fuzz", metadata: { a: "b" } },
    },
  }),
  defineRoute({
    method: "get",
    path: "/api/payments/verify/:reference",
    summary: "One payment by reference, on the key's chain",
    tag: "Payments",
    auth: read,
    params: z.object({ reference: z.string() }),
    responses: {
      200: {
        description: "The payment",
        schema: z.object({ success: z.literal(true), data: paymentDetail }),
      },
      ...errors([401, 403, 404, 429]),
    },
    handler: async (x) => {
      const data = await service.verifyPayment(
        x.deps,
        x.merchant.id,
        x.profile,
        x.params.reference,
      );
      // A publishable key sits in page source: it learns what the checkout page shows, not where
      // the merchant's events go (a webhook URL may carry a token) or its private metadata.
      return {
        data: x.c.get("auth").key?.kind === "publishable"
          ? { ...data, webhookUrl: null, metadata: null }
          : data,
      };
    },
    fuzz: {},
  }),
  defineRoute({
    method: "get",
    path: "/api/payments",
    summary: "Payment history on the key's chain, newest first, by cursor pages",
    tag: "Payments",
    auth: readAll,
    query: historyQuery,
    responses: {
      200: {
        description: "One page",
        schema: z.object({
          success: z.literal(true),
          data: z.array(paymentRecord.extend({ expiresAt: iso })),
          nextCursor: z.string().nullable(),
        }),
        example: { success: true, data: [recordExample], nextCursor: null },
      },
      ...errors([400, 401, 403, 429]),
    },
    queryErrors: { message: M.paymentHistoryQuery },
    handler: async ({ deps, merchant, profile, query }) => {
      const page = await service.history(deps, merchant.id, [profile], query);
      return {
        data: page.rows.map((p) => ({
          ...paymentView(p, profile, deps.clock.now()),
          expiresAt: p.expiresAt.toISOString(),
        })),
        nextCursor: page.nextCursor,
      };
    },
    fuzz: {},
  }),
];
