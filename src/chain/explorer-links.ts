/**
 * The explorer base URLs the serving process links to, kept in `app_settings`. Operator commands
 * are other processes, usually started without the service's PORT or BASE_URL, so a link built
 * from their own configuration would point at the default port; the local explorer pages are
 * served by the service, so its links are the ones that open.
 */
import type { Db } from "../db/client.ts";
import type { ProfileName } from "./profiles.ts";
import { getSetting, putSetting } from "./settings.repo.ts";

const KEY = "service:explorer-urls";

/** Called by a serving process at start: the explorer base URL of each of its chain profiles. */
export async function publishExplorerUrls(
  sql: Db,
  urls: Partial<Record<ProfileName, string>>,
): Promise<void> {
  await putSetting(sql, KEY, urls);
}

/** The explorer base URL the last serving process used for `profile`, if any did. */
export async function publishedExplorerUrl(
  sql: Db,
  profile: ProfileName,
): Promise<string | undefined> {
  const value = await getSetting(sql, KEY) as Record<string, unknown> | null | undefined;
  const url = value?.[profile];
  return typeof url === "string" && /^https?:\/\//.test(url) ? url : undefined;
}
