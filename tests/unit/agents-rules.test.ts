import assert from "node:assert/strict";
import {
  agentIdentifier,
  manifestUri,
  namePattern,
  parseAgentId,
  reputationEstimate,
  TOKEN_ID,
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

Deno.test("agents rules: agent ids from 0 (ERC-8004), full or bare, within uint256", () => {
  assert.deepEqual(parseAgentId("8004:5042002:0", { bare: false }), {
    chainId: 5042002,
    tokenId: "0",
  });
  assert.deepEqual(parseAgentId("0", { bare: true }), { chainId: null, tokenId: "0" });
  assert.deepEqual(parseAgentId("17", { bare: true }), { chainId: null, tokenId: "17" });
  assert.equal(parseAgentId("17", { bare: false }), null, "a bare id where the full one is due");
  const max = (2n ** 256n - 1n).toString();
  assert.deepEqual(parseAgentId(`8004:1:${max}`, { bare: false }), { chainId: 1, tokenId: max });
  for (const bad of ["", "00", "01", "-1", "1.0", "8004:5042002:", "8004:05042002:1", "x"]) {
    assert.equal(parseAgentId(bad, { bare: true }), null, bad);
  }
  assert.equal(parseAgentId(`8004:1:${2n ** 256n}`, { bare: false }), null, "beyond uint256");
  assert.ok(TOKEN_ID.test("0") && TOKEN_ID.test("10") && !TOKEN_ID.test("010"));
});
