/** A real local HTTP receiver for webhooks: records every request; its answer is programmable. */
export interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
  at: number;
}

export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** What to answer next: a status, or "hang" (never answer). Default 200. */
  respond: (r: Received) => number | "hang" | Response;
  close(): Promise<void>;
}

export function startReceiver(hostname = "127.0.0.1"): Receiver {
  const hanging: Array<() => void> = [];
  const r: Receiver = {
    url: "",
    port: 0,
    received: [],
    respond: () => 200,
    close: async () => {
      for (const release of hanging.splice(0)) release();
      await server.shutdown();
    },
  };
  const server = Deno.serve({ hostname, port: 0, onListen: () => {} }, async (req) => {
    const entry: Received = {
      path: new URL(req.url).pathname,
      headers: Object.fromEntries(req.headers),
      body: await req.text(),
      at: Date.now(),
    };
    r.received.push(entry);
    const answer = r.respond(entry);
    if (answer instanceof Response) return answer;
    if (answer === "hang") {
      await new Promise<void>((resolve) => hanging.push(resolve));
      return new Response("late", { status: 200 });
    }
    return new Response(answer === 200 ? "ok" : "nope", { status: answer });
  });
  r.port = server.addr.port;
  r.url = `http://${hostname.includes(":") ? `[${hostname}]` : hostname}:${r.port}`;
  return r;
}
