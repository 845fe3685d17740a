/** A module for testing the HTTP framework itself: echo, failures and a controllable slow route. */
import { Hono } from "hono";
import type { AppModule } from "../../src/modules/index.ts";
import { readJsonObject } from "../../src/http/body.ts";
import { ApiError } from "../../src/http/errors.ts";

export function frameworkTestModule() {
  let release!: () => void;
  let entered!: () => void;
  const gate = {
    entered: new Promise<void>((r) => (entered = r)),
    released: new Promise<void>((r) => (release = r)),
    release: () => release(),
  };
  const mod: AppModule = {
    name: "framework-test",
    api: () => {
      const app = new Hono();
      app.post(
        "/api/test/echo",
        async (c) => c.json({ success: true, body: await readJsonObject(c) }),
      );
      app.get("/api/test/boom", () => {
        throw new Error("database password=hunter2 exploded");
      });
      app.get("/api/test/refuse", () => {
        throw new ApiError(400, "Nope.", { hint: "Try again.", extra: { field: "x" } });
      });
      // A page (not the API) failing unexpectedly: the error page, not JSON.
      app.get("/test/page-boom", () => {
        throw new Error("page exploded");
      });
      app.get("/api/test/bare", () => {
        throw new ApiError(404, "Not found", { bare: true });
      });
      app.get("/api/test/slow", async (c) => {
        entered();
        await gate.released;
        return c.json({ success: true, slow: true });
      });
      return app;
    },
  };
  return { mod, gate };
}
