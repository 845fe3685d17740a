import assert from "node:assert/strict";
import { createLogger } from "../../src/log.ts";

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
