/**
 * The container health check (compose.yaml): exit 0 when this process's /readyz answers 200.
 * Deno's image has no curl; this needs only --allow-net=127.0.0.1 and --allow-env=PORT.
 */
const port = Deno.env.get("PORT") ?? "3000";
try {
  const res = await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(4000) });
  await res.body?.cancel();
  Deno.exit(res.status === 200 ? 0 : 1);
} catch {
  Deno.exit(1);
}
