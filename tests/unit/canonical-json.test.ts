import assert from "node:assert/strict";
import { canonicalBody } from "../../src/http/canonical-json.ts";

Deno.test("canonical body: same parameters, other spacing or key order, are one request", () => {
  const a = canonicalBody('{"amount":"5","currency":"USDC","meta":{"b":1,"a":[true,null]}}');
  const b = canonicalBody(
    ' {\n "meta": { "a": [ true , null ], "b": 1 },\n "currency":"USDC", "amount":"5"}',
  );
  assert.equal(a, b);
  assert.equal(a, '{"amount":"5","currency":"USDC","meta":{"a":[true,null],"b":1}}');
  assert.equal(canonicalBody('"\\u0041"'), canonicalBody('"A"'), "the same string, escaped");
});

Deno.test("canonical body: numbers keep their digits, other values stay apart", () => {
  assert.notEqual(
    canonicalBody('{"amount":10000000000000000001}'),
    canonicalBody('{"amount":10000000000000000000}'),
    "equal as doubles, different amounts",
  );
  assert.notEqual(canonicalBody('{"amount":100}'), canonicalBody('{"amount":100.0}'));
  assert.notEqual(canonicalBody('{"a":"1"}'), canonicalBody('{"a":1}'));
  assert.notEqual(canonicalBody('{"a":[1,2]}'), canonicalBody('{"a":[2,1]}'), "order in a list");
  assert.equal(canonicalBody('{"amount":1e2}'), '{"amount":1e2}');
});

Deno.test("canonical body: what is not JSON is compared as sent", () => {
  assert.equal(canonicalBody("amount=5&currency=USDC"), "amount=5&currency=USDC");
  assert.equal(canonicalBody(""), "");
  assert.equal(canonicalBody('{"a":1'), '{"a":1');
  const deep = "[".repeat(200_000) + "]".repeat(200_000);
  assert.equal(canonicalBody(deep).length, deep.length);
});
