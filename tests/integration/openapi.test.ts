/**
 * The OpenAPI document: valid OpenAPI 3.1 by a real parser, the same routes as the app mounts
 * (no drift either way), browsable at /api/docs in Chromium from our own origin; and a
 * dashboard form shows every bad field's error from one request (the same schema as the API).
 */
import assert from "node:assert/strict";
import SwaggerParser from "@apidevtools/swagger-parser";
import { startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { dashboardClient } from "../helpers/dashboard-client.ts";
import { browserTest, launchBrowser, screenshot, watchPage } from "../helpers/browser.ts";
import { openApiPath } from "../../src/http/openapi.ts";
import { M } from "../../src/http/messages.ts";

type Doc = { paths: Record<string, Record<string, unknown>> };

function documented(doc: Doc): string[] {
  return Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`)
  ).sort();
}

Deno.test("OpenAPI document", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  try {
    const call = api(svc);
    const r = await call("GET", "/api/openapi.json");
    assert.equal(r.status, 200);
    const doc = r.json as unknown as Doc & Record<string, unknown>;

    await t.step("is valid OpenAPI 3.1 by @apidevtools/swagger-parser", async () => {
      assert.equal(doc.openapi, "3.1.0");
      // validate() dereferences in place: give it a copy.
      await SwaggerParser.validate(structuredClone(doc) as never);
    });

    await t.step("documents every mounted /api/ route, and only those", () => {
      const mounted = [
        ...new Set(
          svc.app.routes
            .filter((x) => x.method !== "ALL" && x.path.startsWith("/api/"))
            .map((x) => `${x.method} ${openApiPath(x.path)}`),
        ),
      ].sort();
      assert.deepEqual(documented(doc), mounted);
    });

    await t.step("security schemes, the Idempotency-Key header, error shapes", () => {
      const c = doc.components as Record<string, Record<string, Record<string, unknown>>>;
      assert.deepEqual(Object.keys(c.securitySchemes).sort(), [
        "apiKey",
        "bearer",
        "consumerCookie",
        "merchantCookie",
      ]);
      assert.equal(c.securitySchemes.apiKey.name, "x-api-key");
      assert.equal(c.securitySchemes.merchantCookie.name, "merchant_token");
      assert.equal(c.securitySchemes.consumerCookie.name, "consumer_token");
      assert.equal(c.parameters.IdempotencyKey.name, "Idempotency-Key");
      const link = doc.paths["/api/merchant/payment-link"].post as Record<string, unknown>;
      assert.deepEqual(link.security, [{ merchantCookie: [] }]);
      assert.ok(JSON.stringify(link.parameters).includes("IdempotencyKey"));
      const dash = doc.paths["/api/merchant/dashboard"].get as {
        responses: Record<string, unknown>;
      };
      assert.match(JSON.stringify(dash.responses["401"]), /BareError/);
      assert.ok(c.schemas.Error && c.schemas.BareError);
    });
  } finally {
    await svc.close();
  }
});

Deno.test("a dashboard form shows each bad field's error from one request", async () => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  try {
    const m = await createMerchant(svc);
    const d = dashboardClient(svc);
    const b = await d.open(m, "/dashboard/keys");
    const r = await d.post(b, "/dashboard/keys", {
      type: "root",
      environment: "prod",
      label: "x".repeat(101),
    });
    assert.equal(r.status, 400);
    const errors = [...r.text.matchAll(/<p class="field-error" id="f-([a-z]+)-error">/g)]
      .map((x) => x[1]).sort();
    assert.deepEqual(errors, ["environment", "label", "type"]);
    for (const text of [M.keyType, M.keyEnvironment, M.keyLabel]) {
      assert.ok(r.text.includes(text), text);
    }
    // The API answers the first failing field's text for the same body.
    const api1 = await api(svc)("POST", "/api/keys", {
      cookie: m.cookie,
      body: { type: "root", environment: "prod", label: "x".repeat(101) },
    });
    assert.equal(api1.status, 400);
    assert.equal(api1.json.error, M.keyType);
  } finally {
    await svc.close();
  }
});

Deno.test(browserTest("/api/docs in Chromium lists the payment-link operation", async () => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const browser = await launchBrowser();
  try {
    const page = await browser.newPage();
    const problems = watchPage(page);
    const outside: string[] = [];
    page.on("request", (req) => {
      if (!req.url().startsWith(svc.baseUrl) && !req.url().startsWith("data:")) {
        outside.push(req.url());
      }
    });
    const res = await page.goto(`${svc.baseUrl}/api/docs`);
    assert.equal(res?.status(), 200);
    assert.match(res!.headers()["content-security-policy"], /script-src 'self';/);
    const op = page.locator(".opblock-summary-path", { hasText: "/api/merchant/payment-link" });
    await op.first().waitFor({ timeout: 15_000 });
    assert.ok(await op.count() >= 2, "GET and POST /api/merchant/payment-link");
    await screenshot(page, "api-docs");
    assert.deepEqual(outside, [], "nothing is loaded from another origin");
    assert.deepEqual(problems, []);
  } finally {
    await browser.close();
    await svc.close();
  }
}));
