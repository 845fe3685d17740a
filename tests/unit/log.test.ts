import assert from "node:assert/strict";
import { createLogger, scrub } from "../../src/log.ts";
import { loadConfig } from "../../src/config.ts";

Deno.test("log: one JSON object per line with secrets redacted at any depth", () => {
  const lines: string[] = [];
  const log = createLogger({ sink: (l) => lines.push(l), base: { service: "t" } });
  log.info("hello", {
    password: "hunter2",
    nested: { apiKey: "svc_sec_x", authorization: "Bearer y", amount: 5n, ok: "visible" },
    list: [{ secret: "s" }],
  });
  assert.equal(lines.length, 1);
  const entry = JSON.parse(lines[0]);
  assert.equal(entry.msg, "hello");
  assert.equal(entry.level, "info");
  assert.equal(entry.service, "t");
  assert.equal(entry.password, "[redacted]");
  assert.equal(entry.nested.apiKey, "[redacted]");
  assert.equal(entry.nested.authorization, "[redacted]");
  assert.equal(entry.nested.amount, "5");
  assert.equal(entry.nested.ok, "visible");
  assert.equal(entry.list[0].secret, "[redacted]");
  assert.ok(!lines[0].includes("hunter2"));
});

Deno.test("log: levels below the minimum are dropped", () => {
  const lines: string[] = [];
  const log = createLogger({ level: "warn", sink: (l) => lines.push(l) });
  log.info("no");
  log.debug("no");
  log.warn("yes");
  log.child({ a: 1 }).error("yes too");
  assert.equal(lines.length, 2);
  assert.equal(JSON.parse(lines[1]).a, 1);
});

Deno.test("log: a configured URL's key and password never reach a line, whatever field names them", () => {
  const config = loadConfig({
    APP_ENV: "development",
    TESTNET_RPC_URL:
      "https://rpcuser:rpcpass1@rpc.invalid/v2/SECRETAPIKEY123456?apikey=QUERYKEY0987654",
  });
  assert.equal(
    config.chain.profiles.find((p) => p.name === "testnet")?.rpcUrl?.includes("SECRET"),
    true,
  );
  const lines: string[] = [];
  const log = createLogger({ sink: (l) => void lines.push(l) });
  // viem's message names the URL whole; a field name says nothing of it.
  log.error("startup failed", {
    error: new Error(
      "HTTP request failed.\n\nURL: https://rpcuser:rpcpass1@rpc.invalid/v2/SECRETAPIKEY123456?apikey=QUERYKEY0987654",
    ),
  });
  assert.equal(lines.length, 1);
  assert.doesNotMatch(lines[0], /SECRETAPIKEY|QUERYKEY|rpcpass1/);
  assert.match(lines[0], /rpc\.invalid\/v2\/\*\*\*/);
  // Short path words stay (`/v2`, routes in access logs are not secrets).
  assert.equal(scrub("GET /rpc/testnet /v2"), "GET /rpc/testnet /v2");
});
