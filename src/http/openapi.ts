/**
 * `/api/openapi.json`: an OpenAPI 3.1 document generated from every module's route table
 * (src/http/route.ts; x402's RouteDoc list) with zod 4's own JSON Schema output (draft 2020-12, OpenAPI 3.1's
 * dialect). `/api/docs`: Swagger UI from the `swagger-ui-dist` package, served from our origin.
 */
import { STRICT_CSP } from "./csp.ts";
import { Hono } from "hono";
import { z } from "zod";
import type { Credential, RouteDoc } from "./contract.ts";
import { assetUrl } from "./assets.ts";

type Json = Record<string, unknown>;

const SECURITY_SCHEMES: Record<Credential, Json> = {
  bearer: {
    type: "http",
    scheme: "bearer",
    description: "A secret key: `Authorization: Bearer svc_sec_…` (or `svc_sec_test_…`)",
  },
  apiKey: {
    type: "apiKey",
    in: "header",
    name: "x-api-key",
    description: "The merchant key (`svc_live_…`) or a service key",
  },
  merchantCookie: {
    type: "apiKey",
    in: "cookie",
    name: "merchant_token",
    description: "Merchant session (7 days), set by POST /api/merchant/login",
  },
  consumerCookie: {
    type: "apiKey",
    in: "cookie",
    name: "consumer_token",
    description: "Consumer session (30 days), set by POST /api/consumer/session",
  },
};

/** The document's own routes: the JSON and the browsable reference. */
export const docsRoutes: RouteDoc[] = [
  {
    method: "get",
    path: "/api/openapi.json",
    summary: "This OpenAPI 3.1 document",
    tag: "Docs",
    auth: [],
    responses: {
      200: { description: "The document", schema: z.looseObject({ openapi: z.string() }) },
    },
  },
  {
    method: "get",
    path: "/api/docs",
    summary: "A browsable reference of this document",
    tag: "Docs",
    auth: [],
    responses: {
      200: { description: "An HTML page", schema: z.string(), contentType: "text/html" },
    },
  },
];

/** `/api/keys/:id` → `/api/keys/{id}`. */
export function openApiPath(path: string): string {
  return path.replace(/:([A-Za-z0-9_]+)/g, "{$1}");
}

/**
 * One schema as JSON Schema; named parts (`.meta({ id })`) go to `components.schemas`.
 * Requests are described as accepted (input), responses as sent (output).
 */
function jsonSchema(schema: z.ZodType, io: "input" | "output", components: Json): Json {
  const out = z.toJSONSchema(schema, {
    target: "draft-2020-12",
    io,
    unrepresentable: "any",
  }) as Json;
  delete out.$schema;
  const defs = (out.$defs ?? {}) as Record<string, Json>;
  delete out.$defs;
  const text = JSON.stringify(out).replaceAll('"#/$defs/', '"#/components/schemas/');
  for (const [name, def] of Object.entries(defs)) {
    components[name] = JSON.parse(
      JSON.stringify(def).replaceAll('"#/$defs/', '"#/components/schemas/'),
    );
  }
  return JSON.parse(text);
}

function parameters(route: RouteDoc, components: Json): Json[] {
  const out: Json[] = [];
  for (const [where, schema] of [["path", route.params], ["query", route.query]] as const) {
    if (!schema) continue;
    const s = jsonSchema(schema, "input", components);
    const props = (s.properties ?? {}) as Record<string, Json>;
    const required = new Set((s.required ?? []) as string[]);
    for (const [name, prop] of Object.entries(props)) {
      const { description, ...rest } = prop;
      out.push({
        name,
        in: where,
        required: where === "path" || required.has(name),
        ...(description ? { description } : {}),
        schema: rest,
      });
    }
  }
  if (route.idempotent) out.push({ $ref: "#/components/parameters/IdempotencyKey" });
  return out;
}

function operation(route: RouteDoc, components: Json): Json {
  const responses: Json = {};
  for (const [status, r] of Object.entries(route.responses)) {
    const type = r.contentType ?? "application/json";
    const schema = type === "application/json"
      ? jsonSchema(r.schema, "output", components)
      : { type: "string" };
    responses[status] = {
      description: r.description,
      ...(status === "429" || status === "503"
        ? { headers: { "Retry-After": { schema: { type: "integer" } } } }
        : {}),
      content: { [type]: { schema, ...(r.example !== undefined ? { example: r.example } : {}) } },
    };
  }
  const op: Json = {
    operationId: operationId(route),
    summary: route.summary,
    tags: [route.tag],
    security: route.auth.map((a) => ({ [a]: [] })),
    responses,
  };
  const params = parameters(route, components);
  if (params.length) op.parameters = params;
  if (route.body) {
    op.requestBody = {
      required: true,
      content: {
        "application/json": {
          schema: jsonSchema(route.body, "input", components),
          ...(route.bodyExample !== undefined ? { example: route.bodyExample } : {}),
        },
      },
    };
  }
  return op;
}

/** `post /api/keys/:id/rotate` → `postApiKeysIdRotate`. */
function operationId(route: RouteDoc): string {
  const words = route.path.split(/[^A-Za-z0-9]+/).filter(Boolean);
  return route.method + words.map((w) => w[0].toUpperCase() + w.slice(1)).join("");
}

export function openApiDocument(routes: RouteDoc[], serverUrl: string): Json {
  const components: Json = {};
  const paths: Record<string, Json> = {};
  for (const route of routes) {
    const p = (paths[openApiPath(route.path)] ??= {});
    p[route.method] = operation(route, components);
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "Payment Settlement Service API",
      version: "1.0.0",
      description: "USDC payment settlement. Bodies are JSON: `{ success: true, … }` on " +
        "success and `{ success: false, error, hint? }` on failure, except where a response " +
        "below shows `{ error }` only. Rate-limited responses are 429 with `Retry-After`.",
    },
    servers: [{ url: serverUrl }],
    paths,
    components: {
      schemas: components,
      securitySchemes: SECURITY_SCHEMES,
      parameters: {
        IdempotencyKey: {
          name: "Idempotency-Key",
          in: "header",
          required: false,
          description: "Same key and body: the stored response; same key, other body: 400; " +
            "still in progress: 409.",
          schema: { type: "string", maxLength: 255 },
        },
      },
    },
  };
}

/**
 * The docs page's policy: the dashboard's strict CSP unchanged (scripts, styles, images and
 * connections from our origin only, no framing). Swagger UI needs no relaxation: its bundle and
 * stylesheet are files of ours, its start-up code is a file (/assets/api-docs.js, no inline
 * script), its style changes go through the CSSOM (not restricted by style-src), and its icons
 * are data: images. The Chromium test fails on any CSP violation the page reports.
 */
export const DOCS_CSP = STRICT_CSP;

export function docsApi(routes: () => RouteDoc[], serverUrl: string): Hono {
  const app = new Hono();
  let doc: Json | undefined;
  app.get("/api/openapi.json", (c) => {
    doc ??= openApiDocument(routes(), serverUrl);
    return c.json(doc);
  });
  app.get("/api/docs", (c) => {
    c.header("Content-Security-Policy", DOCS_CSP);
    c.header("X-Frame-Options", "DENY");
    c.header("X-Content-Type-Options", "nosniff");
    return c.html(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>API reference · Payment Settlement Service</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="${assetUrl("swagger-ui.css")}">
</head>
<body>
<div id="swagger-ui" data-url="/api/openapi.json"></div>
<script src="${assetUrl("swagger-ui-bundle.js")}"></script>
<script src="${assetUrl("api-docs.js")}"></script>
</body>
</html>`);
  });
  return app;
}
