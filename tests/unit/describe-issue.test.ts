/**
 * Query errors name their field once (issue 23, item 7): a catalog text that already names the
 * field stands as it is; a generic one is prefixed with the field's path.
 */
import assert from "node:assert/strict";
import { z } from "zod";
import { describeIssue } from "../../src/http/body.ts";

const first = (schema: z.ZodType, value: unknown) => {
  const r = schema.safeParse(value);
  assert.equal(r.success, false);
  return describeIssue(r.error!.issues[0]);
};

Deno.test("describeIssue: the field's name appears once", () => {
  const named = z.object({
    agentId: z.string({ error: "agentId is required: the agent's token id (digits)." }),
  });
  assert.equal(first(named, {}), "agentId is required: the agent's token id (digits).");
  const generic = z.object({ limit: z.coerce.number().int().max(100) });
  assert.match(first(generic, { limit: "500" }), /^limit: /);
  // A longer word that merely contains the name is not the name.
  const contained = z.object({ id: z.string({ error: "identifier missing" }) });
  assert.equal(first(contained, {}), "id: identifier missing");
  const nested = z.object({
    page: z.object({ size: z.number({ error: "size must be a number" }) }),
  });
  assert.equal(first(nested, { page: {} }), "size must be a number");
  assert.equal(describeIssue(undefined), "Invalid request.");
});
