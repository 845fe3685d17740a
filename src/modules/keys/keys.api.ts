/** /api/keys: issue, list, revoke and rotate API keys (merchant cookie or merchant key). */
import { z } from "zod";
import { errorBody, errors } from "../../http/contract.ts";
import { defineRoute, type RouteAuth } from "../../http/route.ts";
import { M } from "../../http/messages.ts";
import { createKeyBody, issuedKey, keyExample, keyIdParams, keyView } from "./keys.schemas.ts";
import * as service from "./keys.service.ts";

const owner: RouteAuth = { accept: ["cookie", "apiKey"], keyKinds: ["merchant"] };
const tag = "Keys";

export const keysRoutes = [
  defineRoute({
    method: "post",
    path: "/api/keys",
    summary: "Issue a secret or publishable key (shown once)",
    tag,
    auth: owner,
    idempotent: true,
    body: createKeyBody,
    bodyExample: { type: "secret", environment: "test", label: "backend", scopes: ["payments"] },
    responses: {
      201: {
        description: "The new key",
        schema: z.object({ success: z.literal(true), key: issuedKey, warning: z.string() }),
        example: {
          success: true,
          key: { ...keyExample, key: "svc_sec_test_..." },
          warning: M.keyWarning,
        },
      },
      ...errors([400, 401, 403, 409, 429]),
    },
    handler: async (x) => ({
      key: await service.createKey(x.deps, x.merchant.id, x.body),
      warning: M.keyWarning,
    }),
    fuzz: {
      sample: { type: "secret", environment: "test", label: "fuzz", scopes: ["payments"] },
      as: "cookie",
    },
  }),
  defineRoute({
    method: "get",
    path: "/api/keys",
    summary: "List the merchant's keys",
    tag,
    auth: owner,
    responses: {
      200: {
        description: "Every key, active and revoked",
        schema: z.object({ success: z.literal(true), keys: z.array(keyView) }),
        example: { success: true, keys: [keyExample] },
      },
      ...errors([401, 403, 429]),
    },
    handler: async (x) => ({ keys: await service.listKeys(x.deps, x.merchant.id) }),
  }),
  defineRoute({
    method: "delete",
    path: "/api/keys/:id",
    summary: "Revoke a key (not the merchant key)",
    tag,
    auth: owner,
    params: keyIdParams,
    responses: {
      200: {
        description: "The revoked key",
        schema: z.object({ success: z.literal(true), message: z.string(), key: keyView }),
      },
      ...errors([400, 401, 403, 404, 429]),
    },
    handler: async (x) => ({
      message: M.keyRevoked,
      key: await service.revokeKey(x.deps, x.merchant.id, x.params.id),
    }),
    fuzz: { as: "cookie" },
  }),
  defineRoute({
    method: "post",
    path: "/api/keys/:id/rotate",
    summary: "Replace a key with a new one of the same kind; the old one is revoked",
    tag,
    auth: owner,
    idempotent: true,
    params: keyIdParams,
    responses: {
      201: {
        description: "The replacement key",
        schema: z.object({
          success: z.literal(true),
          key: issuedKey,
          revokedKeyId: z.string(),
          warning: z.string(),
        }),
      },
      400: { description: "Already revoked", schema: errorBody },
      ...errors([401, 403, 404, 409, 429]),
    },
    handler: async (x) => ({
      ...await service.rotateKey(x.deps, x.merchant.id, x.params.id),
      warning: M.keyWarning,
    }),
    fuzz: { as: "cookie" },
  }),
];
