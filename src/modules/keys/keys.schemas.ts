/** API keys: the create request (API and dashboard form), the key views, the routes. */
import { z } from "zod";
import { M } from "../../http/messages.ts";
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

export const keyExample = {
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
