/**
 * A server-sent events client for tests (what a browser's EventSource does, minus reconnects):
 * opens the stream, then hands out its messages one at a time, each wait bounded.
 */
export interface SseMessage {
  event: string;
  data: string;
}

export interface SseStream {
  status: number;
  contentType: string | null;
  /** The first bytes: the `retry:` field and the opening comment. */
  preamble: string;
  /** The next message, or "end" when the server closed the stream; throws after `timeoutMs`. */
  next(timeoutMs?: number): Promise<SseMessage | "end">;
  close(): Promise<void>;
}

export async function openSse(
  url: string,
  opts: { cookie?: string; headers?: Record<string, string> } = {},
): Promise<SseStream> {
  const res = await fetch(url, {
    headers: {
      accept: "text/event-stream",
      ...(opts.cookie ? { cookie: opts.cookie } : {}),
      ...opts.headers,
    },
    redirect: "manual",
  });
  const contentType = res.headers.get("content-type");
  if (res.status !== 200 || !contentType?.startsWith("text/event-stream")) {
    const text = await res.text();
    return {
      status: res.status,
      contentType,
      preamble: text,
      next: () => Promise.resolve("end"),
      close: () => Promise.resolve(),
    };
  }
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let ended = false;
  let pending: Promise<ReadableStreamReadResult<string>> | undefined;

  // One frame (up to a blank line), or null at the end of the stream.
  async function frame(deadline: number): Promise<string | null> {
    while (true) {
      const at = buffer.indexOf("\n\n");
      if (at >= 0) {
        const f = buffer.slice(0, at);
        buffer = buffer.slice(at + 2);
        return f;
      }
      if (ended) return null;
      pending ??= reader.read();
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timeout = new Promise<"timeout">((r) => {
        timer = setTimeout(() => r("timeout"), Math.max(0, deadline - Date.now()));
      });
      const got = await Promise.race([pending, timeout]).finally(() => clearTimeout(timer));
      if (got === "timeout") throw new Error(`no server-sent event within the bound (${url})`);
      pending = undefined;
      if (got.done) ended = true;
      else buffer += got.value;
    }
  }

  const preamble = (await frame(Date.now() + 10_000)) ?? "";
  return {
    status: res.status,
    contentType,
    preamble,
    async next(timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (true) {
        const f = await frame(deadline);
        if (f === null) return "end";
        let event = "message";
        const data: string[] = [];
        for (const line of f.split("\n")) {
          if (line.startsWith("event: ")) event = line.slice(7);
          else if (line.startsWith("data: ")) data.push(line.slice(6));
        }
        // Comments (heartbeats) and bare fields are not messages.
        if (data.length) return { event, data: data.join("\n") };
      }
    },
    async close() {
      await reader.cancel().catch(() => {});
    },
  };
}
