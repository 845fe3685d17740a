import assert from "node:assert/strict";
import {
  acceptableText,
  findTextFault,
  JsonDepthScanner,
  MAX_JSON_DEPTH,
  nameField,
  scanJsonDepth,
} from "../../src/http/text-rules.ts";

Deno.test("text rules: NUL and lone surrogates are refused; paired surrogates are text", () => {
  for (const ok of ["", "plain", "😀", "naïve", "\u202e", "\ufeff", "\\u0000"]) {
    assert.equal(acceptableText(ok), true, JSON.stringify(ok));
  }
  for (const bad of ["\u0000", "a\u0000", "\ud800", "x\udfffy", "\udc00\ud800", "😀".slice(0, 1)]) {
    assert.equal(acceptableText(bad), false, JSON.stringify(bad));
  }
});

Deno.test("text rules: the walk names the first bad string or key, without recursion", () => {
  assert.equal(findTextFault({ a: "ok", b: [1, "x", { c: null }] }), null);
  assert.deepEqual(findTextFault({ a: "ok", b: ["x", "\u0000"] }), {
    path: ["b", 1],
    inKey: false,
  });
  assert.deepEqual(findTextFault({ m: { "k\ud800": 1 } }), { path: ["m"], inKey: true });
  assert.deepEqual(findTextFault("\u0000"), { path: [], inKey: false });
  // Deep values (already parsed) are walked with an explicit stack.
  let deep: unknown = "\u0000";
  for (let i = 0; i < 200_000; i++) deep = [deep];
  assert.equal(findTextFault(deep)?.path.length, 200_000);
});

Deno.test("text rules: field names are echoed only when short and plain", () => {
  assert.equal(nameField(["metadata", "note"], "The request body"), "metadata.note");
  assert.equal(nameField(["tags", 2], "x"), "tags.2");
  assert.equal(nameField([], "The request body"), "The request body");
  assert.equal(nameField(["m", 'we"ird'], "body"), "m");
  assert.equal(nameField(["a\nb"], "body"), "body");
  assert.equal(nameField(["k".repeat(500)], "body"), "body");
});

Deno.test("text rules: JSON depth is measured on the raw text, strings skipped", () => {
  const deep = (n: number) => "[".repeat(n) + "]".repeat(n);
  assert.deepEqual(scanJsonDepth(deep(MAX_JSON_DEPTH)), { ok: true });
  assert.deepEqual(scanJsonDepth(deep(MAX_JSON_DEPTH + 1)), { ok: false, field: undefined });
  assert.deepEqual(scanJsonDepth(deep(1_000_000)), { ok: false, field: undefined });
  assert.deepEqual(scanJsonDepth(`{"a":1,"walletProvider":${deep(100)}}`), {
    ok: false,
    field: "walletProvider",
  });
  assert.deepEqual(scanJsonDepth(`{"k\\"[":${deep(40)}}`), { ok: false, field: undefined });
  // Brackets inside strings, escaped quotes included, do not count.
  assert.deepEqual(
    scanJsonDepth(JSON.stringify({ s: "[".repeat(100) + '\\"' + "{".repeat(100) })),
    {
      ok: true,
    },
  );
  assert.deepEqual(scanJsonDepth('{"a":"\\\\"}'), { ok: true });
});

Deno.test("text rules: the depth scan gives the same answer fed one byte at a time", () => {
  const bodies = [
    `{"a":1,"walletProvider":${"[".repeat(100)}}`,
    `{"k\\"ey":${"[".repeat(40)}`,
    JSON.stringify({ s: "[".repeat(100) + '\\"' + "{".repeat(100) }),
    "[".repeat(32) + "]".repeat(32),
    `{"${"k".repeat(300)}":${"[".repeat(40)}`,
  ];
  for (const body of bodies) {
    const bytes = new TextEncoder().encode(body);
    const scanner = new JsonDepthScanner();
    for (const b of bytes) if (!scanner.push(new Uint8Array([b]))) break;
    assert.deepEqual(scanner.result, scanJsonDepth(body), body.slice(0, 40));
  }
  assert.deepEqual(scanJsonDepth(`{"${"k".repeat(300)}":${"[".repeat(40)}`), {
    ok: false,
    field: undefined,
  });
});
