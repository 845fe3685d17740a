/**
 * The base URL of the serving process, kept in `app_settings`: operator commands (src/cli/) are
 * other processes, usually started without the service's PORT or BASE_URL, so a link built from
 * their own configuration would point at the default port; the local explorer pages are served by
 * the service, so its links are the ones that open. Every explorer link an operator command prints
 * (the faucet's, an escrow resolution's, a bridge source chain's) is built on it.
 */
import type { Db } from "../db/client.ts";
import type { ChainConfig, ProfileConfig } from "./profiles.ts";
import { getSetting, putSetting } from "./settings.repo.ts";

const KEY = "service:base-url";

/** Called by a serving process at start. */
export async function publishServiceUrl(sql: Db, baseUrl: string): Promise<void> {
  await putSetting(sql, KEY, { baseUrl });
}

/** The base URL the last serving process had, if any did. */
export async function publishedServiceUrl(sql: Db): Promise<string | undefined> {
  const value = await getSetting(sql, KEY) as { baseUrl?: unknown } | null | undefined;
  const url = value?.baseUrl;
  return typeof url === "string" && /^https?:\/\//.test(url) ? url.replace(/\/+$/, "") : undefined;
}

/**
 * `chain` with the explorer links derived from `ownBaseUrl` (no `<PREFIX>_EXPLORER_URL` set)
 * rebased on `servedUrl`; a configured explorer is kept.
 */
export function withServedExplorers(
  chain: ChainConfig,
  ownBaseUrl: string,
  servedUrl: string,
): ChainConfig {
  const own = `${ownBaseUrl.replace(/\/+$/, "")}/explorer/`;
  const rebase = (p: ProfileConfig): ProfileConfig =>
    p.explorerUrl.startsWith(own)
      ? { ...p, explorerUrl: `${servedUrl}/explorer/${p.explorerUrl.slice(own.length)}` }
      : p;
  return { ...chain, profiles: chain.profiles.map(rebase), sources: chain.sources.map(rebase) };
}
