/**
 * A throwaway anvil for tests: a loopback port anvil picks itself, automining, the default mnemonic's ten
 * funded accounts (account 0 is a convenient operator/deployer). `stop()` kills it.
 */
import { fileURLToPath } from "node:url";
import { waitFor } from "./poll.ts";

export const ANVIL_BIN = fileURLToPath(
  new URL("../../node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil", import.meta.url),
);

/** Private keys of anvil's default mnemonic ("test test … junk"), accounts 0–3. */
export const ANVIL_KEYS = [
  "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
  "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
  "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a",
  "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6",
] as const;

export interface Anvil {
  rpcUrl: string;
  port: number;
  chainId: number;
  stop(): Promise<void>;
}

async function rpcChainId(rpcUrl: string): Promise<number | undefined> {
  const res = await fetch(rpcUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
    signal: AbortSignal.timeout(1_000),
  });
  const body = await res.json() as { result?: string };
  return body.result ? Number(body.result) : undefined;
}

export async function startAnvil(
  opts: { chainId?: number; timeoutMs?: number } = {},
): Promise<Anvil> {
  return await spawnAnvil(opts.chainId ?? 31337, opts.timeoutMs ?? 10_000);
}

/**
 * Port 0: anvil binds a free port itself and prints it ("Listening on 127.0.0.1:<port>"). A port
 * chosen here first could be taken by another test's node in between, and that node (same chain
 * id) would then answer for this one.
 */
async function spawnAnvil(chainId: number, timeoutMs: number): Promise<Anvil> {
  const child = new Deno.Command(ANVIL_BIN, {
    args: ["--host", "127.0.0.1", "--port", "0", "--chain-id", String(chainId)],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  // Keep the tail of stderr so a failed start says why; draining also keeps the pipes from
  // filling (stdout carries the banner, then a line per request).
  let stderr = "";
  const drainedErr = child.stderr.pipeThrough(new TextDecoderStream()).pipeTo(
    new WritableStream({ write: (chunk) => void (stderr = (stderr + chunk).slice(-4_000)) }),
  ).catch(() => {});
  let port = 0;
  let banner = "";
  const drainedOut = child.stdout.pipeThrough(new TextDecoderStream()).pipeTo(
    new WritableStream({
      write: (chunk) => {
        if (port) return;
        banner = (banner + chunk).slice(-8_000);
        const m = banner.match(/Listening on 127\.0\.0\.1:(\d+)/);
        if (m) port = Number(m[1]);
      },
    }),
  ).catch(() => {});
  let exited = false;
  const status = child.status.then((s) => {
    exited = true;
    return s;
  });

  let stopped: Promise<void> | undefined;
  const stop = () =>
    stopped ??= (async () => {
      if (!exited) {
        try {
          child.kill("SIGTERM");
        } catch { /* already gone */ }
      }
      await status;
      await Promise.all([drainedErr, drainedOut]);
    })();

  try {
    await waitFor(
      async () =>
        exited || (port > 0 && (await rpcChainId(`http://127.0.0.1:${port}`)) === chainId),
      { timeoutMs, intervalMs: 50, what: "anvil to print its port and answer eth_chainId" },
    );
  } catch (e) {
    await stop();
    throw new Error(`${e instanceof Error ? e.message : e}\n${stderr}`.trimEnd());
  }
  if (exited) {
    await stop();
    throw new Error(`anvil exited at start: ${stderr.trim() || "(no output)"}`);
  }
  return { rpcUrl: `http://127.0.0.1:${port}`, port, chainId, stop };
}

/** A JSON-RPC request passed on to `url` as sent, for the tests' proxies in front of a node. */
export async function forwardRpc(url: string, body: string): Promise<Response> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
  });
  return new Response(await res.text(), {
    status: res.status,
    headers: { "content-type": "application/json" },
  });
}
