/** API keys: the create request (API and dashboard form), the key views, the routes. */
import { z } from "zod";
import { M } from "../../http/messages.ts";
import { errorBody, errors, type RouteDoc } from "../../http/contract.ts";
import { KEY_SCOPES } from "./keys.rules.ts";

/** An empty label (a blank form field) is no label, in the API and the dashboard alike. */
export const createKeyBody = z.object({
  type: z.enum(["secret", "publishable"], { error: M.keyType }),
  environment: z.enum(["test", "live"], { error: M.keyEnvironment }),
  label: z.string({ error: M.keyLabel }).trim().max(100, M.keyLabel)
    .transform((s) => s || undefined).optional(),
  scopes: z.array(z.enum(KEY_SCOPES, { error: M.keyScopes }), { error: M.keyScopes })
    .max(KEY_SCOPES.length, M.keyScopes).optional(),
});
export type CreateKeyInput = z.output<typeof createKeyBody>;

export const keyIdParams = z.object({ id: z.string() });

const iso = z.string().describe("ISO 8601 timestamp");

export const keyView = z.object({
  id: z.string(),
  type: z.enum(["merchant", "secret", "publishable"]),
  environment: z.string(),
  hint: z.string(),
  label: z.string().nullable(),
  scopes: z.array(z.string()),
  status: z.enum(["active", "revoked"]),
  createdAt: iso,
  lastUsedAt: iso.nullable(),
  revokedAt: iso.nullable(),
}).meta({ id: "ApiKey" });

export const issuedKey = keyView.extend({
  key: z.string().describe("The full key: shown once"),
}).meta({ id: "IssuedApiKey" });

const keyExample = {
  id: "6f1c2d3e-0000-4000-8000-000000000001",
  type: "secret",
  environment: "test",
  hint: "svc_sec_test_3f2a...",
  label: "backend",
  scopes: ["payments"],
  status: "active",
  createdAt: "2025-01-01T00:00:00.000Z",
  lastUsedAt: null,
  revokedAt: null,
};

const owner = ["merchantCookie", "apiKey"] as const;

export const keysRoutes: RouteDoc[] = [
  {
    method: "post",
    path: "/api/keys",
    summary: "Issue a secret or publishable key (shown once)",
    tag: "Keys",
    auth: [...owner],
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
  },
  {
    method: "get",
    path: "/api/keys",
    summary: "List the merchant's keys",
    tag: "Keys",
    auth: [...owner],
    responses: {
      200: {
        description: "Every key, active and revoked",
        schema: z.object({ success: z.literal(true), keys: z.array(keyView) }),
        example: { success: true, keys: [keyExample] },
      },
      ...errors([401, 403, 429]),
    },
  },
  {
    method: "delete",
    path: "/api/keys/:id",
    summary: "Revoke a key (not the merchant key)",
    tag: "Keys",
    auth: [...owner],
    params: keyIdParams,
    responses: {
      200: {
        description: "The revoked key",
        schema: z.object({ success: z.literal(true), message: z.string(), key: keyView }),
      },
      ...errors([400, 401, 403, 404, 429]),
    },
  },
  {
    method: "post",
    path: "/api/keys/:id/rotate",
    summary: "Replace a key with a new one of the same kind; the old one is revoked",
    tag: "Keys",
    auth: [...owner],
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
  },
];
