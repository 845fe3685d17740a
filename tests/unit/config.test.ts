import assert from "node:assert/strict";
import { join } from "node:path";
import {
  ConfigError,
  DEV_SECRETS_FILE,
  loadConfig,
  loadServiceConfig,
  resolveSecrets,
} from "../../src/config.ts";
import { developmentSecretProblems } from "../../src/dev-secrets.ts";
import { ANVIL_KEYS } from "../helpers/anvil.ts";
import { LOCAL_ATTESTER_KEY, testConfig } from "../helpers/service.ts";

Deno.test("config: defaults are a working development setup", () => {
  const c = loadConfig({});
  assert.equal(c.APP_ENV, "development");
  assert.equal(c.PORT, 3000);
  assert.equal(c.BASE_URL, "http://localhost:3000");
  assert.equal(c.DATABASE_URL, undefined);
  assert.ok(c.DATA_DIR.endsWith("/.data"));
  assert.equal(c.isProduction, false);
  assert.equal(c.MAX_BODY_BYTES, 1024 * 1024);
  assert.equal(c.BODY_READ_TIMEOUT_MS, 10_000);
});

Deno.test("config: request limits are bounded", () => {
  const c = loadConfig({ MAX_BODY_BYTES: "65536", BODY_READ_TIMEOUT_MS: "300" });
  assert.equal(c.MAX_BODY_BYTES, 65536);
  assert.equal(c.BODY_READ_TIMEOUT_MS, 300);
  assert.throws(() => loadConfig({ MAX_BODY_BYTES: "10" }), /MAX_BODY_BYTES/);
  assert.throws(() => loadConfig({ MAX_BODY_BYTES: "1mb" }), /MAX_BODY_BYTES/);
  assert.throws(() => loadConfig({ BODY_READ_TIMEOUT_MS: "0" }), /BODY_READ_TIMEOUT_MS/);
});

Deno.test("config: failures name every bad variable at once", () => {
  let err: ConfigError | undefined;
  try {
    loadConfig({ PORT: "eighty", APP_ENV: "staging", DATABASE_URL: "mysql://x" });
  } catch (e) {
    err = e as ConfigError;
  }
  assert.ok(err instanceof ConfigError);
  const text = err.message;
  assert.match(text, /PORT/);
  assert.match(text, /APP_ENV/);
  assert.match(text, /DATABASE_URL: must be a postgres:\/\/ URL/);
  assert.equal(err.problems.length, 3);
});

Deno.test("config: production requires secrets and BASE_URL", () => {
  assert.throws(
    () => loadConfig({ APP_ENV: "production" }),
    (e: unknown) =>
      e instanceof ConfigError &&
      e.problems.some((p) => p.startsWith("JWT_SECRET")) &&
      e.problems.some((p) => p.startsWith("WALLET_MASTER_KEY")) &&
      e.problems.some((p) => p.startsWith("BASE_URL")),
  );
  assert.throws(
    () =>
      loadConfig({
        APP_ENV: "production",
        JWT_SECRET: "x".repeat(32),
        WALLET_MASTER_KEY: "ab".repeat(32),
        BASE_URL: "https://pay.example.com/",
        SMTP_URL: "smtp://mail.example.com:587",
      }),
    /TESTNET_RPC_URL: required when APP_ENV=production/,
  );
  const ok = loadConfig({
    APP_ENV: "production",
    JWT_SECRET: "x".repeat(32),
    WALLET_MASTER_KEY: "ab".repeat(32),
    BASE_URL: "https://pay.example.com/",
    SMTP_URL: "smtp://mail.example.com:587",
    CHAINS: "production",
    PRODUCTION_RPC_URL: "https://rpc.example.com",
  });
  assert.equal(ok.chain.profiles.length, 1);
  assert.equal(ok.chain.profiles[0].confirmations, 2);
  assert.equal(ok.chain.profiles[0].explorerUrl, "https://pay.example.com/explorer/production");
  assert.equal(ok.BASE_URL, "https://pay.example.com");
  assert.equal(ok.isProduction, true);
});

Deno.test("config: weak secrets and bad URLs are refused", () => {
  assert.throws(() => loadConfig({ JWT_SECRET: "short" }), /JWT_SECRET: must be at least 32/);
  assert.throws(() => loadConfig({ WALLET_MASTER_KEY: "abcd" }), /WALLET_MASTER_KEY/);
  assert.throws(() => loadConfig({ SMTP_URL: "http://mail" }), /SMTP_URL/);
  assert.throws(() => loadConfig({ BASE_URL: "ftp://x" }), /BASE_URL/);
  // Blank means unset.
  assert.equal(loadConfig({ DATABASE_URL: "  " }).DATABASE_URL, undefined);
});

Deno.test("config: development secrets are generated once and kept", async () => {
  const dir = await Deno.makeTempDir();
  const c = loadConfig({ DATA_DIR: dir });
  const first = await resolveSecrets(c);
  assert.deepEqual(first.generated.sort(), ["JWT_SECRET", "WALLET_MASTER_KEY"]);
  assert.match(first.config.WALLET_MASTER_KEY!, /^[0-9a-f]{64}$/);
  const second = await resolveSecrets(c);
  assert.equal(second.config.JWT_SECRET, first.config.JWT_SECRET);
  assert.equal(second.config.WALLET_MASTER_KEY, first.config.WALLET_MASTER_KEY);
  const stat = await Deno.stat(join(dir, DEV_SECRETS_FILE));
  assert.equal(stat.mode! & 0o777, 0o600);
  // A configured value wins and is not reported as generated.
  const given = await resolveSecrets(loadConfig({ DATA_DIR: dir, JWT_SECRET: "j".repeat(40) }));
  assert.equal(given.config.JWT_SECRET, "j".repeat(40));
  assert.deepEqual(given.generated, ["WALLET_MASTER_KEY"]);
  await Deno.remove(dir, { recursive: true });
});

/** A production configuration whose secrets are nobody else's (fresh random values). */
function soundProduction(): Record<string, string> {
  const hex = () =>
    Array.from(crypto.getRandomValues(new Uint8Array(32)), (b) => b.toString(16).padStart(2, "0"))
      .join("");
  return {
    APP_ENV: "production",
    JWT_SECRET: hex(),
    WALLET_MASTER_KEY: hex(),
    METRICS_TOKEN: hex(),
    BASE_URL: "https://pay.example.com",
    SMTP_URL: "smtp://mail.example.com:587",
    DATABASE_URL: `postgres://settlement:${hex()}@db.example.com:5432/settlement`,
    TESTNET_RPC_URL: "https://rpc-testnet.example.com",
    PRODUCTION_RPC_URL: "https://rpc.example.com",
    TESTNET_OPERATOR_KEY: `0x${hex()}`,
    PRODUCTION_OPERATOR_KEY: `0x${hex()}`,
    CCTP_ATTESTER_KEY: `0x${hex()}`,
  };
}

function refusal(env: Record<string, string>): ConfigError {
  try {
    loadServiceConfig(env);
  } catch (e) {
    if (e instanceof ConfigError) return e;
    throw e;
  }
  assert.fail("loadServiceConfig accepted development secrets in production");
}

Deno.test("config: production refuses development secrets, naming every offending variable", () => {
  const env = {
    ...soundProduction(),
    JWT_SECRET: "compose-dev-jwt-secret-change-me-0123456789",
    WALLET_MASTER_KEY: "11".repeat(32),
    METRICS_TOKEN: "compose-dev-metrics-token",
    DATABASE_URL: "postgres://settlement:compose-dev@postgres:5432/settlement",
    TESTNET_OPERATOR_KEY: ANVIL_KEYS[0],
    PRODUCTION_OPERATOR_KEY: `0x${ANVIL_KEYS[1].slice(2).toUpperCase()}`,
    CCTP_ATTESTER_KEY: LOCAL_ATTESTER_KEY,
  };
  const e = refusal(env);
  assert.deepEqual(e.problems.map((p) => p.split(":")[0]).sort(), [
    "CCTP_ATTESTER_KEY",
    "DATABASE_URL",
    "JWT_SECRET",
    "METRICS_TOKEN",
    "PRODUCTION_OPERATOR_KEY",
    "TESTNET_OPERATOR_KEY",
    "WALLET_MASTER_KEY",
  ]);
  assert.match(
    e.message,
    /JWT_SECRET: a known development value \(the compose development default\)/,
  );
  assert.match(e.message, /WALLET_MASTER_KEY: a known development value \(one byte repeated/);
  assert.match(e.message, /TESTNET_OPERATOR_KEY: .*anvil's well-known dev account 0/);
  assert.match(e.message, /PRODUCTION_OPERATOR_KEY: .*anvil's well-known dev account 1/);
  assert.match(e.message, /CCTP_ATTESTER_KEY: .*anvil's well-known dev account 9/);
  // The same values are fine outside production: the development path stays open.
  assert.equal(loadServiceConfig({ ...env, APP_ENV: "development" }).isProduction, false);
  // A sound production configuration starts.
  assert.equal(loadServiceConfig(soundProduction()).isProduction, true);
});

Deno.test("config: production's BASE_URL is https (a loopback origin aside)", () => {
  const e = refusal({ ...soundProduction(), BASE_URL: "http://pay.example.com" });
  assert.deepEqual(e.problems.map((p) => p.split(":")[0]), ["BASE_URL"]);
  assert.match(e.message, /must be the public https:\/\/ origin .*http:\/\/pay\.example\.com/);
  for (const local of ["http://localhost:3000", "http://127.0.0.1:8080", "http://[::1]:3000"]) {
    assert.equal(loadServiceConfig({ ...soundProduction(), BASE_URL: local }).BASE_URL, local);
  }
  // Outside production, http is the development default.
  assert.equal(
    loadServiceConfig({ ...soundProduction(), APP_ENV: "development", BASE_URL: "http://x.test" })
      .isProduction,
    false,
  );
});

Deno.test("config: every anvil dev key, one-byte keys and the suite's secret are refused", () => {
  for (const key of [...ANVIL_KEYS, LOCAL_ATTESTER_KEY]) {
    assert.equal(developmentSecretProblems({ TESTNET_OPERATOR_KEY: key }).length, 1, key);
  }
  for (const key of ["22".repeat(32), `0x${"3".repeat(64)}`, "0x" + "ab".repeat(32)]) {
    assert.match(refusal({ ...soundProduction(), WALLET_MASTER_KEY: key }).message, /one byte/);
  }
  // A bridge source chain's operator key is an operator key too.
  assert.match(
    refusal({ ...soundProduction(), BASE_SEPOLIA_OPERATOR_KEY: ANVIL_KEYS[2] }).message,
    /BASE_SEPOLIA_OPERATOR_KEY: .*dev account 2/,
  );
  const suite = testConfig().JWT_SECRET!;
  assert.match(
    refusal({ ...soundProduction(), JWT_SECRET: suite }).message,
    /JWT_SECRET: a known development value \(the test suite's secret\)/,
  );
  assert.match(
    refusal({ ...soundProduction(), METRICS_TOKEN: "m".repeat(20) }).message,
    /METRICS_TOKEN: .*one character repeated/,
  );
});

Deno.test("config: every secret compose.dev.env sets is refused in production", async () => {
  const file = await Deno.readTextFile(new URL("../../compose.dev.env", import.meta.url));
  const devEnv: Record<string, string> = {};
  for (const line of file.split("\n")) {
    const m = /^([A-Z0-9_]+)=(.*)$/.exec(line.trim());
    if (m) devEnv[m[1]] = m[2];
  }
  assert.equal(devEnv.APP_ENV, "development");
  const secrets = ["JWT_SECRET", "WALLET_MASTER_KEY", "METRICS_TOKEN", "TESTNET_OPERATOR_KEY"];
  for (const name of [...secrets, "PRODUCTION_OPERATOR_KEY", "POSTGRES_PASSWORD"]) {
    assert.ok(devEnv[name], `compose.dev.env sets ${name}`);
  }
  const env = {
    ...soundProduction(),
    ...Object.fromEntries([...secrets, "PRODUCTION_OPERATOR_KEY"].map((n) => [n, devEnv[n]])),
    DATABASE_URL: `postgres://settlement:${devEnv.POSTGRES_PASSWORD}@postgres:5432/settlement`,
  };
  const named = refusal(env).problems.map((p) => p.split(":")[0]).sort();
  assert.deepEqual(named, [
    "DATABASE_URL",
    "JWT_SECRET",
    "METRICS_TOKEN",
    "PRODUCTION_OPERATOR_KEY",
    "TESTNET_OPERATOR_KEY",
    "WALLET_MASTER_KEY",
  ]);
});
