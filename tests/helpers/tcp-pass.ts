/**
 * One connection of a test's TCP front passed through to the real server at `target`, both ways,
 * until either side closes (`onUpstream` hears the upstream connection, for a front that cuts
 * both). Errors of a side that closed are the end of it, not a failure.
 */
export async function passThrough(
  conn: Deno.Conn,
  target: Deno.ConnectOptions,
  onUpstream?: (up: Deno.Conn) => void,
): Promise<void> {
  try {
    const up = await Deno.connect(target);
    onUpstream?.(up);
    await Promise.allSettled([
      conn.readable.pipeTo(up.writable),
      up.readable.pipeTo(conn.writable),
    ]);
  } catch {
    // a side closed
  }
}
