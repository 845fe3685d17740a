/**
 * `deno task test`: runs the whole suite against real parts.
 *
 * With DATABASE_URL set, test databases are created on that server. Without it, one embedded
 * PostgreSQL is started for the run (under .data/test) and shared by every test file; each file
 * still gets its own database, a copy of a template migrated once (tests/helpers/template-db.ts).
 * Extra arguments go to `deno test` (e.g. a file or `--filter`).
 *
 * Files run one more at a time than the machine has cores (DENO_JOBS overrides): most of a file's
 * time is spent waiting on a chain, a browser or a service process, so one file per core leaves
 * the cores idle. On the 2-core CI machine the whole suite took 16.5–17.7 min with 2 files at
 * once, 13.2 min with 3, 14.8 min with 4 (the cores saturated); docs/decisions.md.
 */
import { createLogger } from "../src/log.ts";
import { startEmbeddedPostgres } from "../src/db/embedded.ts";
import { prepareTemplateDatabase } from "./helpers/template-db.ts";

const log = createLogger({ level: "warn" });
let adminUrl = Deno.env.get("DATABASE_URL");
let stopEmbedded: (() => Promise<void>) | undefined;
if (!adminUrl) {
  const dataDir = Deno.env.get("TEST_DATA_DIR") ?? "./.data/test";
  const db = await startEmbeddedPostgres({ dataDir, log });
  adminUrl = db.adminUrl;
  stopEmbedded = db.stop;
  console.log(`test run: embedded PostgreSQL on port ${db.port}`);
}

// Every test database is a copy of this one (tests/helpers/db.ts).
const template = await prepareTemplateDatabase(adminUrl);

const args = Deno.args.length ? Deno.args : ["tests/"];
const child = new Deno.Command(Deno.execPath(), {
  args: ["test", "--allow-all", "--parallel", ...args],
  env: {
    TEST_DATABASE_URL: adminUrl,
    TEST_TEMPLATE_DATABASE: template,
    APP_ENV: "test",
    DENO_JOBS: Deno.env.get("DENO_JOBS") ?? String(navigator.hardwareConcurrency + 1),
  },
  stdin: "inherit",
  stdout: "inherit",
  stderr: "inherit",
}).spawn();

// Ctrl-C reaches the child through the process group; wait for it, then clean up.
Deno.addSignalListener("SIGINT", () => {});
const status = await child.status;
await stopEmbedded?.();
Deno.exit(status.code);
