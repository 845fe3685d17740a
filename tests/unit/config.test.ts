import assert from "node:assert/strict";
import { join } from "node:path";
import { ConfigError, DEV_SECRETS_FILE, loadConfig, resolveSecrets } from "../../src/config.ts";

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
