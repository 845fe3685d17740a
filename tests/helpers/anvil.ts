/**
 * A throwaway anvil for tests: a free loopback port, automining, the default mnemonic's ten
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

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
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
  // The free port may be taken again between probing and anvil's bind; then try another.
  for (let attempt = 1;; attempt++) {
    try {
      return await spawnAnvil(opts.chainId ?? 31337, opts.timeoutMs ?? 10_000);
    } catch (e) {
      if (!(e instanceof EarlyExit) || attempt === 3) throw e;
    }
  }
}

class EarlyExit extends Error {}

async function spawnAnvil(chainId: number, timeoutMs: number): Promise<Anvil> {
  const port = freePort();
  const rpcUrl = `http://127.0.0.1:${port}`;
  const child = new Deno.Command(ANVIL_BIN, {
    args: [
      "--silent",
      "--host",
      "127.0.0.1",
      "--port",
      String(port),
      "--chain-id",
      String(chainId),
    ],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  // Keep the tail of stderr so a failed start says why; draining also keeps the pipe from filling.
  let stderr = "";
  const drained = child.stderr.pipeThrough(new TextDecoderStream()).pipeTo(
    new WritableStream({ write: (chunk) => void (stderr = (stderr + chunk).slice(-4_000)) }),
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
      await drained;
    })();

  try {
    await waitFor(async () => exited || (await rpcChainId(rpcUrl)) === chainId, {
      timeoutMs,
      intervalMs: 50,
      what: `anvil to answer eth_chainId on ${rpcUrl}`,
    });
  } catch (e) {
    await stop();
    throw new Error(`${e instanceof Error ? e.message : e}\n${stderr}`.trimEnd());
  }
  if (exited) {
    await stop();
    throw new EarlyExit(`anvil exited at start: ${stderr.trim() || "(no output)"}`);
  }
  return { rpcUrl, port, chainId, stop };
}
