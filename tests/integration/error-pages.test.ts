/**
 * The 404 and error pages of non-API paths: an HTML document with a title, `lang`, a main
 * landmark and a way back (axe-core checks them in tests/e2e/dashboard-mode-a11y.test.ts); API
 * paths keep the spec's JSON errors.
 */
import assert from "node:assert/strict";
import { startTestService } from "../helpers/service.ts";
import { frameworkTestModule } from "../helpers/test-module.ts";
import { createLogger } from "../../src/log.ts";

const PAGE = { accept: "text/html,application/xhtml+xml" };

function assertErrorPage(text: string, title: string) {
  assert.match(text, /^<!DOCTYPE html><html lang="en">/);
  assert.ok(text.includes(`<title>${title} · Settlement</title>`), text);
  assert.match(text, /<main id="main"[^>]*>[\s\S]*<h1>/);
  assert.match(text, /<a href="\/dashboard">Back to the dashboard<\/a>/);
}

Deno.test("error pages: 404 and unexpected errors of pages are HTML, the API's are JSON", async (t) => {
  const { mod } = frameworkTestModule();
  const svc = await startTestService({
    modules: [mod],
    log: createLogger({ level: "error", sink: () => {} }),
  });
  const get = async (path: string, headers: Record<string, string> = {}) => {
    const res = await fetch(`${svc.baseUrl}${path}`, { headers });
    return {
      status: res.status,
      type: res.headers.get("content-type") ?? "",
      text: await res.text(),
    };
  };
  try {
    await t.step("an unknown page is the 404 page", async () => {
      for (const headers of [PAGE, {}]) {
        const r = await get("/no-such-page", headers);
        assert.equal(r.status, 404);
        assert.match(r.type, /^text\/html/);
        assertErrorPage(r.text, "Not found");
      }
    });

    await t.step("a page's unexpected failure is the error page (a browser asks)", async () => {
      const r = await get("/test/page-boom", PAGE);
      assert.equal(r.status, 500);
      assert.match(r.type, /^text\/html/);
      assertErrorPage(r.text, "Something went wrong");
      assert.ok(!r.text.includes("exploded"), "no internals shown");
      const script = await get("/test/page-boom", { accept: "application/json" });
      assert.equal(script.status, 500);
      assert.deepEqual(JSON.parse(script.text), {
        success: false,
        error: "Internal server error.",
      });
    });

    await t.step("API paths keep the spec's JSON errors", async () => {
      const missing = await get("/api/no-such-endpoint", PAGE);
      assert.equal(missing.status, 404);
      assert.deepEqual(JSON.parse(missing.text), { success: false, error: "No such endpoint." });
      const boom = await get("/api/test/boom", PAGE);
      assert.equal(boom.status, 500);
      assert.deepEqual(JSON.parse(boom.text), { success: false, error: "Internal server error." });
    });
  } finally {
    await svc.close();
  }
});
