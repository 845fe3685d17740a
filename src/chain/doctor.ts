/**
 * The chain half of `deno task doctor`: for one configured profile, does its RPC answer with the
 * expected chain id, are our contracts there and built from our artifacts, and is the operator
 * funded. Read-only: nothing is deployed or sent.
 */
import { createPublicClient, formatEther, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import type { Db } from "../db/client.ts";
import { ARTIFACTS, planFor } from "./deploy.ts";
import type { ProfileConfig } from "./profiles.ts";
import * as contractsRepo from "./contracts.repo.ts";

export interface DoctorCheck {
  name: string;
  ok: boolean;
  /** What was found. */
  detail: string;
  /** What to do when it is not ok. */
  fix?: string;
  /** Informational only: never fails the run. */
  warn?: boolean;
}

const RPC_TIMEOUT_MS = 5000;

export async function inspectChain(
  profile: ProfileConfig,
  sql: Db | null,
): Promise<DoctorCheck[]> {
  const p = profile.envPrefix;
  const out: DoctorCheck[] = [];
  if (!profile.rpcUrl) {
    out.push({
      name: `${profile.name}: RPC`,
      ok: true,
      warn: true,
      detail: "no RPC URL: a local anvil is started for it (development only)",
      fix: `set ${p}_RPC_URL to use a real chain`,
    });
    return out;
  }
  const client = createPublicClient({
    transport: http(profile.rpcUrl, { timeout: RPC_TIMEOUT_MS, retryCount: 0 }),
  });
  let chainId: number;
  try {
    chainId = await client.getChainId();
  } catch (e) {
    out.push({
      name: `${profile.name}: RPC answers`,
      ok: false,
      detail: `${profile.rpcUrl} did not answer: ${String(e).split("\n")[0].slice(0, 160)}`,
      fix: `check ${p}_RPC_URL (scheme, host, port, API key) and that the node is reachable`,
    });
    return out;
  }
  if (chainId !== profile.chainId) {
    out.push({
      name: `${profile.name}: chain id`,
      ok: false,
      detail: `${profile.rpcUrl} serves chain ${chainId}, expected ${profile.chainId}`,
      fix: `point ${p}_RPC_URL at a node of chain ${profile.chainId}`,
    });
    return out;
  }
  out.push({ name: `${profile.name}: RPC answers`, ok: true, detail: `chain ${chainId}` });

  const recorded = new Map(
    (sql ? await contractsRepo.list(sql, profile.chainId).catch(() => []) : []).map((r) => [
      r.name,
      r,
    ]),
  );
  // The contracts this profile gets (deploy.ts planFor): the CCTP pair only where the profile
  // has a CCTP domain, and there it is optional (without it, bridging is unavailable).
  for (const { name, on } of planFor({ profile, attester: true })) {
    const address = profile.contracts[name] ?? recorded.get(name)?.address;
    const check = `${profile.name}: contract ${name}`;
    const deployFix =
      `run \`deno task contracts:deploy --network ${profile.name}\` (or set the address variable)`;
    if (!address && on === "cctp") {
      out.push({
        name: check,
        ok: true,
        warn: true,
        detail: "not deployed: bridging to or from this chain is unavailable",
        fix:
          `set ${p}_TOKEN_MESSENGER_ADDRESS and ${p}_MESSAGE_TRANSMITTER_ADDRESS (Circle's CCTP v2)`,
      });
      continue;
    }
    if (!address) {
      out.push({
        name: check,
        ok: false,
        detail: "no address configured or recorded",
        fix: deployFix,
      });
      continue;
    }
    const code = await client.getCode({ address: address as `0x${string}` }).catch(() => undefined);
    if (!code || code === "0x") {
      out.push({ name: check, ok: false, detail: `no code at ${address}`, fix: deployFix });
      continue;
    }
    const row = recorded.get(name);
    const expected = ARTIFACTS[name].inputHash;
    if (row && row.address.toLowerCase() === address.toLowerCase() && row.inputHash) {
      const same = row.inputHash === expected;
      out.push({
        name: check,
        ok: same,
        detail: same
          ? `${address}, built from our artifact`
          : `${address} was built from other sources (input ${row.inputHash.slice(0, 12)}…, ours ${
            expected.slice(0, 12)
          }…)`,
        fix: same
          ? undefined
          : `redeploy with \`deno task contracts:deploy --network ${profile.name} --force\` (fund-holding contracts: move balances first)`,
      });
    } else {
      out.push({
        name: check,
        ok: true,
        warn: true,
        detail:
          `${address} has code, but it was not recorded by contracts:deploy, so its build is unknown`,
        fix: `deploy with \`deno task contracts:deploy --network ${profile.name}\` to record it`,
      });
    }
  }

  if (!profile.operatorKey) {
    out.push({
      name: `${profile.name}: operator`,
      ok: false,
      detail: `${p}_OPERATOR_KEY is not set: no deployments, top-ups, relays or payment orders`,
      fix: `set ${p}_OPERATOR_KEY to the 0x private key of a funded account`,
    });
    return out;
  }
  const operator = privateKeyToAccount(profile.operatorKey).address;
  const balance = await client.getBalance({ address: operator }).catch(() => null);
  const low = profile.gas.operatorLowWei;
  out.push({
    name: `${profile.name}: operator funded`,
    ok: balance !== null && balance >= low && balance > 0n,
    detail: balance === null
      ? `could not read the balance of ${operator}`
      : `${operator} holds ${formatEther(balance)} (low mark ${formatEther(low)})`,
    fix: `send native gas to ${operator} (or lower ${p}_OPERATOR_LOW_WEI)`,
  });
  return out;
}
