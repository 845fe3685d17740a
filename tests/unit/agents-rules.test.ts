import assert from "node:assert/strict";
import {
  agentIdentifier,
  manifestUri,
  namePattern,
  reputationEstimate,
} from "../../src/modules/agents/agents.rules.ts";

Deno.test("agents rules: reputation estimate, identifier, name pattern, manifest URI", () => {
  assert.equal(reputationEstimate({ failedCount: 0, successCount: 0 }), 0);
  assert.equal(reputationEstimate({ failedCount: 0, successCount: 3 }), 100);
  assert.equal(reputationEstimate({ failedCount: 1, successCount: 2 }), 67);
  assert.equal(reputationEstimate({ failedCount: 2, successCount: 1 }), 33);
  assert.equal(reputationEstimate({ failedCount: 1, successCount: 1 }), 50);
  assert.equal(reputationEstimate({ failedCount: 7, successCount: 1 }), 13); // 12.5 rounds up
  assert.equal(reputationEstimate({ failedCount: 3, successCount: 0 }), 0);
  assert.equal(agentIdentifier(5042002, "7"), "8004:5042002:7");
  assert.equal(namePattern("Scout"), "%Scout%");
  assert.equal(namePattern("100%_a\\b"), "%100\\%\\_a\\\\b%");
  const uri = manifestUri({ name: "Ü€" });
  const b64 = uri.replace("data:application/json;base64,", "");
  const json = new TextDecoder().decode(Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)));
  assert.deepEqual(JSON.parse(json), { name: "Ü€" });
});
