/** A Chain on throwaway local nodes (or a given RPC), over a test database. */
import { Chain } from "../../src/chain/index.ts";
import { parseChainConfig } from "../../src/chain/profiles.ts";
import type { SenderHooks } from "../../src/chain/sender.ts";
import { type Logger, silentLogger } from "../../src/log.ts";
import type { Sql } from "../../src/db/client.ts";

export const TEST_MASTER_KEY = "11".repeat(32);

export async function startTestChain(
  sql: Sql,
  opts: { env?: Record<string, string>; hooks?: SenderHooks; log?: Logger } = {},
): Promise<Chain> {
  const problems: string[] = [];
  const config = parseChainConfig(
    {
      CHAINS: "testnet",
      CHAIN_RECEIPT_TIMEOUT_MS: "20000",
      CHAIN_POLL_INTERVAL_MS: "50",
      ...opts.env,
    },
    { baseUrl: "http://127.0.0.1", isProduction: false },
    problems,
  );
  if (problems.length) throw new Error(problems.join("; "));
  return await Chain.start({
    config,
    masterKey: TEST_MASTER_KEY,
    sql,
    log: opts.log ?? silentLogger,
    hooks: opts.hooks,
  });
}

/** JSON-RPC straight to a node (anvil test methods: evm_mine, evm_setAutomine, ...). */
export async function rpc(url: string, method: string, params: unknown[] = []): Promise<unknown> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  const body = await res.json();
  if (body.error) throw new Error(`${method}: ${JSON.stringify(body.error)}`);
  return body.result;
}
