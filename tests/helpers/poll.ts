/** Poll with a bound instead of sleeping: resolves with the first truthy value. */
export async function waitFor<T>(
  fn: () => T | Promise<T>,
  opts: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + (opts.timeoutMs ?? 10_000);
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v) return v as NonNullable<T>;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 25));
  }
  throw new Error(
    `Timed out after ${opts.timeoutMs ?? 10_000} ms waiting for ${opts.what ?? "condition"}` +
      (last ? `; last error: ${last}` : ""),
  );
}
