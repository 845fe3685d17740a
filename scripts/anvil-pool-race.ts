/**
 * Reproduces anvil's stranded transaction (docs/decisions.md, "Anvil strands a transaction in its
 * pool"): one account sends WIDTH transactions per round, each round waiting until the previous
 * one is mined, and a round whose account nonce stops below its last nonce with the next one
 * queued in `txpool_content` is counted as stranded, then repaired the way the sender does it
 * (`anvil_removePoolTransactions`, the same bytes again in nonce order).
 *
 *   deno run -A scripts/anvil-pool-race.ts [rounds=1500] [width=3] [concurrent|sequential|batch]
 *
 * Measured on 2 busy cores (anvil 1.7.1): concurrent 3 of 1,500 rounds stranded; sequential
 * (each send after the node answered the one before) and batch (one JSON-RPC batch) 0 of 1,500.
 */
import { privateKeyToAccount } from "viem/accounts";

const ANVIL = new URL(
  "../node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil",
  import.meta.url,
).pathname;
const rounds = Number(Deno.args[0] ?? 1500);
const width = Number(Deno.args[1] ?? 3);
const mode = Deno.args[2] ?? "concurrent";

const child = new Deno.Command(ANVIL, {
  args: ["--host", "127.0.0.1", "--port", "0", "--chain-id", "31337"],
  stdout: "piped",
  stderr: "null",
}).spawn();
const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
let banner = "";
let port = 0;
while (!port) {
  const { value, done } = await reader.read();
  if (done) throw new Error("anvil exited before listening");
  banner += value;
  port = Number(banner.match(/Listening on 127\.0\.0\.1:(\d+)/)?.[1] ?? 0);
}
void (async () => {
  while (!(await reader.read()).done) { /* drain */ }
})();
const url = `http://127.0.0.1:${port}`;

let id = 0;
async function rpc(method: string, params: unknown[]): Promise<unknown> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: ++id, method, params }),
  });
  const body = await res.json();
  if (body.error) throw new Error(`${method}: ${JSON.stringify(body.error)}`);
  return body.result;
}
async function sendAll(raws: string[], how = mode) {
  if (how === "batch") {
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(
        raws.map((raw, i) => ({
          jsonrpc: "2.0",
          id: i,
          method: "eth_sendRawTransaction",
          params: [raw],
        })),
      ),
    });
    await res.text();
  } else if (how === "concurrent") {
    await Promise.all(raws.map((raw) => rpc("eth_sendRawTransaction", [raw])));
  } else {
    for (const raw of raws) await rpc("eth_sendRawTransaction", [raw]);
  }
}

// anvil's default mnemonic, account 1.
const account = privateKeyToAccount(
  "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
);
const sign = (nonce: number) =>
  account.signTransaction({
    chainId: 31337,
    type: "eip1559",
    nonce,
    to: account.address,
    value: 0n,
    gas: 21_000n,
    maxFeePerGas: 10_000_000_000n,
    maxPriorityFeePerGas: 1_000_000_000n,
  });
const latest = async () =>
  Number(await rpc("eth_getTransactionCount", [account.address, "latest"]));
async function minedUpTo(nonce: number, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await latest() >= nonce) return true;
    await new Promise((r) => setTimeout(r, 2));
  }
  return false;
}

let next = 0;
let stranded = 0;
let repaired = 0;
try {
  for (let round = 0; round < rounds; round++) {
    const raws = await Promise.all(Array.from({ length: width }, (_, i) => sign(next + i)));
    await sendAll(raws);
    next += width;
    if (await minedUpTo(next, 2_000)) continue;
    const at = await latest();
    const pool = await rpc("txpool_content", []) as {
      queued?: Record<string, Record<string, unknown>>;
    };
    const queued = Object.values(pool.queued ?? {}).flatMap((byNonce) => Object.keys(byNonce));
    if (!queued.includes(String(at))) throw new Error(`round ${round}: not mined, not stranded`);
    stranded++;
    console.log(`round ${round}: nonce ${at} stranded (queued with the account at its nonce)`);
    await rpc("anvil_removePoolTransactions", [account.address]);
    // The same bytes (deterministic signatures) in nonce order, in one batch, as the sender does.
    const again = await Promise.all(Array.from({ length: next - at }, (_, i) => sign(at + i)));
    await sendAll(again, "batch");
    if (await minedUpTo(next, 2_000)) repaired++;
  }
  console.log(
    `${rounds} rounds of ${width} (${mode}): ${stranded} stranded, ${repaired} repaired`,
  );
} finally {
  child.kill("SIGKILL");
  await child.status;
}
