/**
 * Static assets served from our own origin (no CDN): `/assets/htmx.min.js` from the htmx.org
 * package, Swagger UI's bundle and stylesheet from swagger-ui-dist (for /api/docs), and every plain file of `views/assets/` (css, js, images) at `/assets/<name>`.
 *
 * Pages link them with `assetUrl(name)`, which appends a content hash (`?v=…`), so the long
 * cache lifetime is safe: a changed file gets a new URL. The route itself ignores the query.
 */
import { createHash } from "node:crypto";
import { Hono } from "hono";
import type { Deps } from "../deps.ts";

const VIEWS_ASSETS = new URL("../../views/assets/", import.meta.url);
const HTMX = new URL("../../node_modules/htmx.org/dist/htmx.min.js", import.meta.url);
/** Swagger UI's standalone bundle for /api/docs (src/http/openapi.ts), a pinned package too. */
const SWAGGER_UI = new URL("../../node_modules/swagger-ui-dist/", import.meta.url);
const PACKAGED: Record<string, URL> = {
  "htmx.min.js": HTMX,
  "swagger-ui-bundle.js": new URL("swagger-ui-bundle.js", SWAGGER_UI),
  "swagger-ui.css": new URL("swagger-ui.css", SWAGGER_UI),
};

const TYPES: Record<string, string> = {
  css: "text/css; charset=utf-8",
  js: "text/javascript; charset=utf-8",
  svg: "image/svg+xml",
  png: "image/png",
  ico: "image/x-icon",
  woff2: "font/woff2",
};

/** A plain file name in views/assets/ (no directories, no dot files), or htmx. */
const NAME = /^[a-z0-9][a-z0-9_-]*(\.[a-z0-9_-]+)*\.(css|js|svg|png|ico|woff2)$/i;

function locate(name: string): { file: URL; type: string } | undefined {
  if (!NAME.test(name)) return undefined;
  const type = TYPES[name.slice(name.lastIndexOf(".") + 1).toLowerCase()];
  if (PACKAGED[name]) return { file: PACKAGED[name], type };
  return { file: new URL(name, VIEWS_ASSETS), type };
}

/**
 * A year, for htmx (a pinned package) and for any URL carrying the current hash. A file of ours
 * asked for without its hash is revalidated (ETag) instead, so a deploy is never hidden.
 */
export const ASSET_CACHE_CONTROL = "public, max-age=31536000, immutable";
const REVALIDATE = "no-cache";

interface Loaded {
  body: Uint8Array<ArrayBuffer>;
  etag: string;
  mtime: number;
}

const loaded = new Map<string, Loaded>();

/** The file's bytes and hash, re-read when it changed on disk (edits show without a restart). */
function load(name: string): Loaded | undefined {
  const asset = locate(name);
  if (!asset) return undefined;
  try {
    const mtime = Deno.statSync(asset.file).mtime?.getTime() ?? 0;
    let hit = loaded.get(name);
    if (!hit || hit.mtime !== mtime) {
      const body = Deno.readFileSync(asset.file) as Uint8Array<ArrayBuffer>;
      const etag = createHash("sha256").update(body).digest("hex").slice(0, 16);
      hit = { body, etag, mtime };
      loaded.set(name, hit);
    }
    return hit;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
}

/** The URL of an asset, versioned by its content hash. */
export function assetUrl(name: string): string {
  const a = load(name);
  return a ? `/assets/${name}?v=${a.etag}` : `/assets/${name}`;
}

export function assetPages(_deps: Deps): Hono {
  const app = new Hono();
  app.get("/assets/:name", (c) => {
    const name = c.req.param("name");
    const asset = locate(name);
    const file = asset ? load(name) : undefined;
    if (!asset || !file) return c.text("Not found", 404);
    const etag = `"${file.etag}"`;
    const pinned = name in PACKAGED || c.req.query("v") === file.etag;
    c.header("Cache-Control", pinned ? ASSET_CACHE_CONTROL : REVALIDATE);
    c.header("ETag", etag);
    c.header("X-Content-Type-Options", "nosniff");
    if (c.req.header("if-none-match") === etag) return c.body(null, 304);
    c.header("Content-Type", asset.type);
    return c.body(file.body);
  });
  return app;
}
