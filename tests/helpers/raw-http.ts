/**
 * HTTP/1.1 over a plain TCP socket, for what fetch will not do: a Content-Length that the body
 * does not match, a request head or body that stops half way, and watching the server close.
 */
const enc = new TextEncoder();
const dec = new TextDecoder();

export interface RawConn {
  conn: Deno.Conn;
  send(data: string | Uint8Array): Promise<void>;
  /**
   * Reads until the server closes the connection or `until` matches what was read, waiting at
   * most `timeoutMs`. `closed` tells whether the server closed it.
   */
  read(opts: { timeoutMs: number; until?: (text: string) => boolean }): Promise<RawRead>;
  /** What was read so far. */
  received(): string;
  close(): void;
}

export interface RawRead {
  text: string;
  closed: boolean;
  timedOut: boolean;
}

export async function rawConnect(port: number): Promise<RawConn> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  let text = "";
  let closed = false;
  const buf = new Uint8Array(64 * 1024);
  return {
    conn,
    send: async (data) => {
      const bytes = typeof data === "string" ? enc.encode(data) : data;
      for (let at = 0; at < bytes.length;) at += await conn.write(bytes.subarray(at));
    },
    read: async ({ timeoutMs, until }) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const expired = new Promise<"timeout">((
        r,
      ) => (timer = setTimeout(() => r("timeout"), timeoutMs)));
      try {
        while (!closed && !(until?.(text))) {
          const n = await Promise.race([conn.read(buf).catch(() => null), expired]);
          if (n === "timeout") return { text, closed, timedOut: true };
          if (n === null) closed = true;
          else text += dec.decode(buf.subarray(0, n), { stream: true });
        }
        return { text, closed, timedOut: false };
      } finally {
        clearTimeout(timer);
      }
    },
    received: () => text,
    close: () => {
      try {
        conn.close();
      } catch { /* already closed */ }
    },
  };
}

/** The status and the JSON body of the first response in `text` (fixed length or chunked). */
export function parseResponse(text: string): { status: number; headers: string; body: string } {
  const end = text.indexOf("\r\n\r\n");
  const head = end < 0 ? text : text.slice(0, end);
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
  let body = end < 0 ? "" : text.slice(end + 4);
  if (/^transfer-encoding: *chunked/im.test(head)) {
    let out = "";
    let rest = body;
    for (;;) {
      const nl = rest.indexOf("\r\n");
      const size = nl < 0 ? 0 : parseInt(rest.slice(0, nl), 16);
      if (!size) break;
      out += rest.slice(nl + 2, nl + 2 + size);
      rest = rest.slice(nl + 2 + size + 2);
    }
    body = out;
  } else {
    const len = Number(/^content-length: *(\d+)/im.exec(head)?.[1] ?? body.length);
    body = body.slice(0, len);
  }
  return { status, headers: head, body };
}

/** True once `text` holds a whole response: its head and all of a fixed-length body. */
export function completeResponse(text: string): boolean {
  const end = text.indexOf("\r\n\r\n");
  if (end < 0) return false;
  const len = /^content-length: *(\d+)/im.exec(text.slice(0, end))?.[1];
  return len !== undefined && enc.encode(text.slice(end + 4)).length >= Number(len);
}
