/**
 * /api/jobs/*: a merchant or secret key as `x-api-key`, or the merchant's session cookie (the
 * spec's "Provide a valid x-api-key or log in."), scope `jobs`; 403 and 404 bodies are
 * `{ error }` only. The credential's chain (a key's prefix; a session: its mode) is where jobs
 * are created and looked up: a job of the other environment is not found (404), like any other.
 */
import { Hono } from "hono";
import type { Context } from "hono";
import type { Deps } from "../../deps.ts";
import { readJsonObject } from "../../http/body.ts";
import { parseOrThrow } from "../../http/contract.ts";
import { type AuthEnv, guard, merchantOf, profileOf } from "../../http/auth.ts";
import { idempotent } from "../../http/idempotency.ts";
import { M } from "../../http/messages.ts";
import * as service from "./commerce.service.ts";
import {
  createJobBody,
  evaluateBody,
  fundBody,
  refundBody,
  submitBody,
} from "./commerce.schemas.ts";

export function jobsApi(deps: Deps) {
  const app = new Hono<AuthEnv>();
  const auth = (write: boolean) =>
    guard(deps, {
      accept: ["apiKey", "cookie"],
      keyKinds: write ? ["merchant", "secret"] : ["merchant", "secret", "publishable"],
      scope: "jobs",
      write,
      messages: { missing: M.jobsAuthRequired },
      bareStatuses: [403, 404],
    });
  const write = auth(true);
  const read = auth(false);
  const once = idempotent(deps);
  const requestKey = (c: Context<AuthEnv>) => c.req.header("idempotency-key");

  app.post("/api/jobs/create", write, once, async (c) => {
    const input = parseOrThrow(createJobBody, await readJsonObject(c));
    const row = await service.createJob(
      deps,
      merchantOf(c),
      profileOf(c),
      input,
      requestKey(c),
    );
    const job = service.jobView(deps, row);
    return c.json({
      success: true,
      jobId: job.jobId,
      status: "OPEN" as const,
      txHash: job.txHash,
      explorerUrl: job.explorerUrl,
      job,
    }, 201);
  });

  app.get("/api/jobs/:jobId", read, async (c) => {
    const row = await service.reconcile(
      deps,
      await service.getJob(deps, profileOf(c), c.req.param("jobId")),
    );
    return c.json({
      success: true,
      job: service.jobView(deps, row),
      database: {
        status: row.status,
        deliverableHash: row.deliverableHash,
        deliverableData: row.deliverableData,
        updatedAt: row.updatedAt.toISOString(),
      },
    });
  });

  app.post("/api/jobs/fund", write, once, async (c) => {
    const input = parseOrThrow(fundBody, await readJsonObject(c));
    return c.json({
      success: true,
      ...await service.fund(deps, merchantOf(c), profileOf(c), input, requestKey(c)),
    });
  });

  app.post("/api/jobs/submit", write, once, async (c) => {
    const input = parseOrThrow(submitBody, await readJsonObject(c));
    return c.json({
      success: true,
      ...await service.submit(deps, merchantOf(c), profileOf(c), input, requestKey(c)),
    });
  });

  for (const action of ["complete", "reject"] as const) {
    app.post(`/api/jobs/${action}`, write, once, async (c) => {
      const input = parseOrThrow(evaluateBody, await readJsonObject(c));
      return c.json({
        success: true,
        ...await service.evaluate(
          deps,
          merchantOf(c),
          profileOf(c),
          action,
          input,
          requestKey(c),
        ),
      });
    });
  }

  app.post("/api/jobs/refund", write, once, async (c) => {
    const input = parseOrThrow(refundBody, await readJsonObject(c));
    return c.json({
      success: true,
      ...await service.refund(deps, merchantOf(c), profileOf(c), input, requestKey(c)),
    });
  });

  return app;
}
