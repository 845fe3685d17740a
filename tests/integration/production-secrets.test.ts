/**
 * The service as an operator starts it (a child process of src/main.ts, and the migrate command):
 * APP_ENV=production with development secrets exits at once with EX_CONFIG and one message
 * naming every offending variable, before it touches the database; the same configuration
 * with secrets of its own gets past that refusal.
 */
import assert from "node:assert/strict";
import { freePort } from "../helpers/service.ts";
import { ANVIL_KEYS } from "../helpers/anvil.ts";

const ROOT = new URL("../../", import.meta.url);

async function run(script: string, args: string[], env: Record<string, string>) {
  const dataDir = Deno.makeTempDirSync({ prefix: "prod-secrets-" });
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-all", new URL(script, ROOT).pathname, ...args],
      cwd: ROOT.pathname,
      env: { ...env, DATA_DIR: dataDir },
      clearEnv: true,
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(60_000),
    }).output();
    const text = new TextDecoder().decode(out.stderr) + new TextDecoder().decode(out.stdout);
    return { code: out.code, text };
  } finally {
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
}

function randomHex(): string {
  return Array.from(
    crypto.getRandomValues(new Uint8Array(32)),
    (b) => b.toString(16).padStart(2, "0"),
  )
    .join("");
}

/** Production, complete, pointing at a database and chains nobody listens on. */
function production(): Record<string, string> {
  const closed = () => `127.0.0.1:${freePort()}`;
  return {
    PATH: Deno.env.get("PATH") ?? "",
    HOME: Deno.env.get("HOME") ?? "/tmp",
    APP_ENV: "production",
    PORT: String(freePort()),
    HOST: "127.0.0.1",
    BASE_URL: "https://pay.example.com",
    SMTP_URL: `smtp://${closed()}`,
    DATABASE_URL: `postgres://settlement:${randomHex()}@${closed()}/settlement`,
    TESTNET_RPC_URL: `http://${closed()}`,
    PRODUCTION_RPC_URL: `http://${closed()}`,
    JWT_SECRET: randomHex(),
    WALLET_MASTER_KEY: randomHex(),
    METRICS_TOKEN: randomHex(),
    TESTNET_OPERATOR_KEY: `0x${randomHex()}`,
    PRODUCTION_OPERATOR_KEY: `0x${randomHex()}`,
  };
}

const DEV_SECRETS = {
  JWT_SECRET: "compose-dev-jwt-secret-change-me-0123456789",
  WALLET_MASTER_KEY: "11".repeat(32),
  METRICS_TOKEN: "compose-dev-metrics-token",
  TESTNET_OPERATOR_KEY: ANVIL_KEYS[0],
};

Deno.test("production secrets: the service refuses development values, naming each", async () => {
  const r = await run("src/main.ts", ["web"], { ...production(), ...DEV_SECRETS });
  assert.equal(r.code, 78, r.text);
  assert.match(r.text, /^Invalid configuration:/m);
  for (const name of Object.keys(DEV_SECRETS)) {
    assert.match(
      r.text,
      new RegExp(`^  - ${name}: a known development value .* APP_ENV=production`, "m"),
    );
  }
  // Refused before anything was started: no database attempt, no startup failure.
  assert.doesNotMatch(r.text, /startup failed|ECONNREFUSED/);
  assert.doesNotMatch(r.text, /PRODUCTION_OPERATOR_KEY/);
});

Deno.test("production secrets: the migrate command refuses them too", async () => {
  const r = await run("src/cli/migrate.ts", [], { ...production(), ...DEV_SECRETS });
  assert.equal(r.code, 78, r.text);
  assert.match(r.text, /^ {2}- WALLET_MASTER_KEY: a known development value \(one byte repeated/m);
});

Deno.test("production: the migrate command needs only DATABASE_URL (README's docker run)", async () => {
  const { PATH, HOME, DATABASE_URL } = production();
  const r = await run("src/cli/migrate.ts", [], {
    PATH,
    HOME,
    APP_ENV: "production",
    DATABASE_URL,
    DATABASE_STARTUP_WAIT_MS: "500",
  });
  // Nobody listens there: it got as far as the database, past the configuration.
  assert.equal(r.code, 1, r.text);
  assert.match(r.text, /^Migrations not applied to postgres:\/\/settlement:\*\*\*@/m);
  assert.doesNotMatch(r.text, /Invalid configuration/);
  const none = await run("src/cli/migrate.ts", [], { PATH, HOME, APP_ENV: "production" });
  assert.equal(none.code, 78, none.text);
  assert.match(none.text, /DATABASE_URL: required when APP_ENV=production/);
});

Deno.test("production secrets: values of one's own pass the refusal (and meet the database)", async () => {
  // Nobody listens there: the role's wait for its database (60 s by default) is cut to a
  // second, which is all this needs to show that it got as far as the database.
  const r = await run("src/main.ts", ["web"], {
    ...production(),
    DATABASE_STARTUP_WAIT_MS: "1000",
  });
  assert.equal(r.code, 1, r.text);
  assert.match(r.text, /"msg":"startup failed"/);
  assert.match(r.text, /DATABASE_STARTUP_WAIT_MS/, "it waited for the database, then gave up");
  assert.doesNotMatch(r.text, /development value|Invalid configuration/);
});
