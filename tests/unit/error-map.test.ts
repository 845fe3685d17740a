import assert from "node:assert/strict";
import { DomainError, ERROR_CODES } from "../../src/errors.ts";
import { answerFor, ERROR_MAP } from "../../src/http/error-map.ts";
import { ApiError } from "../../src/http/errors.ts";
import { M } from "../../src/http/messages.ts";
import { ChainRevertError, ChainTimeoutError } from "../../src/chain/errors.ts";

Deno.test("error map: one row per domain code", async (t) => {
  const catalog = new Set<string>(Object.values(M));

  await t.step("every code has a status and a catalog text, and nothing else has a row", () => {
    assert.deepEqual(Object.keys(ERROR_MAP).sort(), [...ERROR_CODES].sort());
    for (const code of ERROR_CODES) {
      const entry = ERROR_MAP[code];
      assert.ok(Number.isInteger(entry.status), code);
      assert.ok(entry.status >= 400 && entry.status <= 599, `${code}: ${entry.status}`);
      assert.ok(catalog.has(entry.text), `${code}: its text comes from the catalog`);
      if (entry.hint !== undefined) assert.ok(catalog.has(entry.hint), `${code}: hint`);
    }
  });

  await t.step("a domain error is answered with its row's status and text", () => {
    const a = answerFor(new DomainError("payment_not_found"));
    assert.equal(a.status, 404);
    assert.equal(a.code, "payment_not_found");
    assert.equal(a.message, M.paymentNotFound);
    assert.equal(a.unexpected, false);
    assert.deepEqual(a.body, { success: false, error: M.paymentNotFound });
  });

  await t.step("the row's hint is the default; the error's own hint replaces it", () => {
    assert.deepEqual(answerFor(new DomainError("chain_timeout")).body, {
      success: false,
      error: M.chainTimeout,
      hint: M.chainTimeoutHint,
    });
    const own = answerFor(new DomainError("webhook_url_invalid", { hint: "webhookUrl: why" }));
    assert.equal(own.status, 400);
    assert.deepEqual(own.body, {
      success: false,
      error: M.webhookUrlInvalid,
      hint: "webhookUrl: why",
    });
  });

  await t.step("details a client acts on become fields: txHash, the payment's status", () => {
    const hash = `0x${"ab".repeat(32)}`;
    const timeout = answerFor(new ChainTimeoutError(hash));
    assert.equal(timeout.status, 408);
    assert.deepEqual(timeout.body, {
      success: false,
      error: M.chainTimeout,
      hint: M.chainTimeoutHint,
      txHash: hash,
    });
    const revert = answerFor(new ChainRevertError("Boom()"));
    assert.equal(revert.status, 502);
    assert.deepEqual(revert.body, { success: false, error: M.chainReverted, hint: "Boom()" });
    const late = answerFor(new DomainError("payment_not_payable", { paymentStatus: "EXPIRED" }));
    assert.equal(late.status, 409);
    assert.deepEqual(late.body, { success: false, error: M.paymentNotPayable, status: "EXPIRED" });
  });

  await t.step("edge errors keep their own answer", () => {
    const a = answerFor(
      new ApiError(429, M.rateLimited, { bare: true, headers: { "Retry-After": "7" } }),
    );
    assert.equal(a.status, 429);
    assert.equal(a.code, undefined);
    assert.deepEqual(a.body, { error: M.rateLimited });
    assert.deepEqual(a.headers, { "Retry-After": "7" });
    assert.equal(a.unexpected, false);
  });

  await t.step("a database that cannot be reached is a 503 to retry, logged, not a 500", () => {
    const coded = (code: string) => Object.assign(new Error(`x ${code}`), { code });
    for (const code of ["ECONNREFUSED", "CONNECT_TIMEOUT", "57P03", "53300", "ENOTFOUND"]) {
      const a = answerFor(coded(code));
      assert.equal(a.status, 503, code);
      assert.deepEqual(a.body, {
        success: false,
        error: M.databaseUnavailable,
        hint: M.databaseUnavailableHint,
      });
      assert.deepEqual(a.headers, { "retry-after": "2" });
      assert.equal(a.unexpected, false);
      assert.equal(a.unavailable, true);
    }
    // A refusal waiting cannot cure stays unexpected: no such database, a wrong password.
    for (const code of ["3D000", "28P01"]) assert.equal(answerFor(coded(code)).status, 500);
  });

  await t.step(
    "anything else is a 500 with the catalog's internal text, flagged for the log",
    () => {
      for (
        const err of [new Error("password=hunter2"), new TypeError("x"), "a string", undefined]
      ) {
        const a = answerFor(err);
        assert.equal(a.status, 500);
        assert.equal(a.message, M.internal);
        assert.deepEqual(a.body, { success: false, error: M.internal });
        assert.equal(a.unexpected, true);
      }
    },
  );
});

Deno.test("layering: src/chain imports nothing from src/http; services throw no HTTP errors", async () => {
  const offenders: string[] = [];
  const walk = async (dir: string, visit: (path: string, text: string) => void) => {
    for await (const e of Deno.readDir(dir)) {
      const path = `${dir}/${e.name}`;
      if (e.isDirectory) await walk(path, visit);
      else if (/\.tsx?$/.test(e.name)) visit(path, await Deno.readTextFile(path));
    }
  };
  const imports = (text: string) => [...text.matchAll(/from\s+"([^"]+)"/g)].map((m) => m[1]);
  await walk("src/chain", (path, text) => {
    for (const spec of imports(text)) {
      if (/(^|\/)http\//.test(spec)) offenders.push(`${path}: ${spec}`);
    }
  });
  // The edge of a module (its API, pages and dashboard routes) may answer in HTTP; the rest not.
  const edge = /\.(api|pages|section)\.tsx?$|\/dashboard\//;
  await walk("src/modules", (path, text) => {
    if (edge.test(path)) return;
    for (const spec of imports(text)) {
      if (/http\/(errors|error-map)\.ts$/.test(spec)) offenders.push(`${path}: ${spec}`);
    }
  });
  assert.deepEqual(offenders, []);
});
