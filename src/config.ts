/**
 * Configuration: the process environment parsed by one zod schema. Every variable is documented
 * in the README. `loadConfig` is pure (environment in, config out) so its failures are testable;
 * `resolveSecrets` fills the development secrets that are generated once under DATA_DIR.
 */
import { z } from "zod";
import { join, resolve } from "node:path";
import { type ChainConfig, parseChainConfig } from "./chain/profiles.ts";
import { developmentSecretProblems } from "./dev-secrets.ts";
import { registerSecret, registerUrlSecrets } from "./log.ts";

export const APP_ENVS = ["development", "test", "production"] as const;
export type AppEnv = typeof APP_ENVS[number];

const optionalString = z.preprocess(
  (v) => (typeof v === "string" && v.trim() === "" ? undefined : v),
  z.string().optional(),
);

const port = z.coerce.number().int().min(0).max(65535);

const envSchema = z.object({
  APP_ENV: z.enum(APP_ENVS).default("development"),
  PORT: port.default(3000),
  HOST: z.string().default("0.0.0.0"),
  BASE_URL: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional()),
  DATABASE_URL: optionalString.pipe(
    z.string().regex(/^postgres(ql)?:\/\//, "must be a postgres:// URL").optional(),
  ),
  DATABASE_POOL_MAX: z.coerce.number().int().min(1).max(200).default(10),
  /**
   * Backstops on the service's pool (PostgreSQL's lock_timeout, idle_in_transaction_session_timeout
   * and statement_timeout; 0 turns one off): a statement waiting this long for a lock gives up, a
   * transaction left idle this long is ended with its session (freeing its pool slot and locks),
   * a statement running this long is cancelled. Migrations and waits meant to wait lift them.
   */
  DATABASE_LOCK_TIMEOUT_MS: z.coerce.number().int().min(0).max(3_600_000).default(5_000),
  DATABASE_IDLE_TX_TIMEOUT_MS: z.coerce.number().int().min(0).max(3_600_000)
    .default(15_000),
  DATABASE_STATEMENT_TIMEOUT_MS: z.coerce.number().int().min(0).max(3_600_000).default(30_000),
  /**
   * At start, how long to wait for a database that refuses connections or is still starting or
   * recovering (a container's PostgreSQL coming up beside us) before giving up. 0: do not wait.
   */
  DATABASE_STARTUP_WAIT_MS: z.coerce.number().int().min(0).max(3_600_000).default(60_000),
  DATA_DIR: z.string().min(1).default("./.data"),
  JWT_SECRET: optionalString.pipe(
    z.string().min(32, "must be at least 32 characters").optional(),
  ),
  WALLET_MASTER_KEY: optionalString.pipe(
    z.string().regex(/^(0x)?[0-9a-fA-F]{64}$/, "must be 32 bytes as 64 hex characters").optional(),
  ),
  SMTP_URL: optionalString.pipe(
    z.string().regex(/^smtps?:\/\//, "must be an smtp:// or smtps:// URL").optional(),
  ),
  MAIL_FROM: z.string().default("Settlement <no-reply@localhost>"),
  LOG_LEVEL: z.enum(["debug", "info", "warn", "error"]).default("info"),
  /** Use X-Forwarded-For for the client address (only behind a proxy you control). */
  TRUST_PROXY: z.enum(["true", "false"]).default("false").transform((v) => v === "true"),
  RATE_LIMITS: z.enum(["on", "off"]).default("on"),
  /**
   * Jobs in flight tell the database every half of this that their worker is alive; a job whose
   * worker stopped telling (kill -9, a crash) is retried this long after (pg-boss heartbeats).
   */
  JOB_HEARTBEAT_SECONDS: z.coerce.number().int().min(10).max(3600).default(15),
  /** How often the queue's supervisor looks for such jobs (and expired ones). */
  JOB_SUPERVISE_SECONDS: z.coerce.number().int().min(1).max(3600).default(10),
  /** How long a webhook receiver has to answer. */
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(30_000),
  /** `public`: only public https targets (forced in production); `any`: loopback http too. */
  WEBHOOK_TARGETS: z.enum(["public", "any"]).optional(),
  RATE_LIMIT_DEFAULT_PER_MINUTE: z.coerce.number().int().min(1).default(100),
  RATE_LIMIT_PAYMENTS_PER_MINUTE: z.coerce.number().int().min(1).default(30),
  RATE_LIMIT_GROUP_PER_MINUTE: z.coerce.number().int().min(1).default(30),
  RATE_LIMIT_ANONYMOUS_PER_MINUTE: z.coerce.number().int().min(1).default(100),
  /** `POST /rpc/<profile>` (browser wallets' JSON-RPC), per client address. */
  RATE_LIMIT_RPC_PER_MINUTE: z.coerce.number().int().min(1).default(600),
  SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().min(0).default(10_000),
  /** Largest request body read (bytes); a route may declare a larger one. Beyond it: 413. */
  MAX_BODY_BYTES: z.coerce.number().int().min(1024).max(1024 ** 3).default(1024 * 1024),
  /** How long a request body may take to arrive in full; then 408. */
  BODY_READ_TIMEOUT_MS: z.coerce.number().int().min(50).max(600_000).default(10_000),
  /** How long POST /api/payroll/run waits for its batch before answering PROCESSING. */
  PAYROLL_WAIT_MS: z.coerce.number().int().min(0).max(120_000).default(25_000),
  /** Seconds between the x402 batch-settlement claim job's rounds (x402.channels.claims.ts). */
  X402_CHANNEL_CLAIM_SECONDS: z.coerce.number().int().min(1).max(3600).default(10),
  /** Gateway-balance charges (x402.batched.*): seconds between settlement rounds at most. */
  X402_BATCH_SECONDS: z.coerce.number().int().min(1).max(3600).default(5),
  /** …or as soon as this many charges wait (and the most one transaction carries). */
  X402_BATCH_MAX: z.coerce.number().int().min(1).max(2000).default(500),
  /** Bearer token /metrics requires (always in production, where it is refused without one). */
  METRICS_TOKEN: optionalString.pipe(
    z.string().min(16, "must be at least 16 characters").optional(),
  ),
  /** Seconds between webhook attempts after each failure (then undelivered). */
  WEBHOOK_RETRY_SECONDS: z.string().regex(/^\d+(,\d+)*$/, "must be seconds separated by commas")
    .default("60,300,1800").transform((v) => v.split(",").map(Number)),
});

export type RawEnv = z.infer<typeof envSchema>;

export interface Config extends Omit<RawEnv, "BASE_URL" | "DATA_DIR" | "WEBHOOK_TARGETS"> {
  WEBHOOK_TARGETS: "public" | "any";
  BASE_URL: string;
  /** Absolute path. */
  DATA_DIR: string;
  isProduction: boolean;
  chain: ChainConfig;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    this.name = "ConfigError";
  }
}

/** Parses the environment. Throws ConfigError naming every problem at once. */
export function loadConfig(env: Record<string, string | undefined>): Config {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((i) => `${i.path.join(".") || "environment"}: ${i.message}`),
    );
  }
  const raw = parsed.data;
  const isProduction = raw.APP_ENV === "production";
  const problems: string[] = [];
  if (isProduction) {
    if (!raw.JWT_SECRET) problems.push("JWT_SECRET: required when APP_ENV=production");
    if (!raw.WALLET_MASTER_KEY) {
      problems.push("WALLET_MASTER_KEY: required when APP_ENV=production");
    }
    if (!raw.BASE_URL) problems.push("BASE_URL: required when APP_ENV=production");
    if (!raw.SMTP_URL) problems.push("SMTP_URL: required when APP_ENV=production");
  }
  if (isProduction && raw.WEBHOOK_TARGETS === "any") {
    problems.push("WEBHOOK_TARGETS: must be public when APP_ENV=production");
  }
  const baseUrl = (raw.BASE_URL ?? `http://localhost:${raw.PORT}`).replace(/\/+$/, "");
  const chain = parseChainConfig(env, { baseUrl, isProduction }, problems);
  if (problems.length) throw new ConfigError(problems);
  // Values no log line or printed error may carry (src/log.ts `scrub`).
  for (const p of [...chain.profiles, ...chain.sources]) {
    registerUrlSecrets(p.rpcUrl);
    registerSecret(p.operatorKey);
  }
  for (const k of chain.cctp.attesterKeys) registerSecret(k);
  registerUrlSecrets(raw.DATABASE_URL, { path: false });
  registerUrlSecrets(raw.SMTP_URL, { path: false });
  for (const s of [raw.JWT_SECRET, raw.WALLET_MASTER_KEY, raw.METRICS_TOKEN]) registerSecret(s);
  return {
    ...raw,
    BASE_URL: baseUrl,
    DATA_DIR: resolve(raw.DATA_DIR),
    WEBHOOK_TARGETS: raw.WEBHOOK_TARGETS ?? (isProduction ? "public" : "any"),
    isProduction,
    chain,
  };
}

/**
 * The configuration a process runs with (the service's roles and the operator commands):
 * loadConfig, and in production the refusal of known development secrets (the compose
 * development values, anvil's dev keys, one-byte-repeated keys, the test suite's secret), every
 * offending variable named at once. Tests that build a production-like config in-process with
 * the suite's own secrets call loadConfig.
 */
export function loadServiceConfig(env: Record<string, string | undefined>): Config {
  const config = loadConfig(env);
  if (config.isProduction) {
    const problems = [...developmentSecretProblems(env), ...insecureBaseUrl(config.BASE_URL)];
    if (problems.length) throw new ConfigError(problems);
  }
  return config;
}

/**
 * In production the public origin is https: session cookies are Secure, so over plain http a
 * browser never sends them back (sign-in silently fails) and SIWE and links name an insecure
 * origin. A loopback origin is a browser's secure context and stays allowed (a trial on one
 * machine). Doctor reports the same as a FAIL (src/cli/doctor.ts).
 */
function insecureBaseUrl(baseUrl: string): string[] {
  const url = new URL(baseUrl);
  if (url.protocol === "https:") return [];
  if (["localhost", "127.0.0.1", "[::1]"].includes(url.hostname)) return [];
  return [
    `BASE_URL: must be the public https:// origin when APP_ENV=production (${baseUrl} is ` +
    "plain http: browsers would not send the Secure session cookie back)",
  ];
}

export const DEV_SECRETS_FILE = "dev-secrets.json";

interface DevSecrets {
  JWT_SECRET: string;
  WALLET_MASTER_KEY: string;
}

/**
 * Outside production, a missing JWT_SECRET or WALLET_MASTER_KEY is generated once and kept in
 * DATA_DIR/dev-secrets.json (mode 0600), so sessions and wallets survive restarts. Returns the
 * names that came from that file so the caller can warn about them.
 */
export async function resolveSecrets(
  config: Config,
): Promise<{ config: Config; generated: string[] }> {
  if (config.JWT_SECRET && config.WALLET_MASTER_KEY) return { config, generated: [] };
  if (config.isProduction) throw new ConfigError(["secrets missing in production"]);
  const file = join(config.DATA_DIR, DEV_SECRETS_FILE);
  let stored: Partial<DevSecrets> = {};
  try {
    stored = JSON.parse(await Deno.readTextFile(file));
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  const next: DevSecrets = {
    JWT_SECRET: stored.JWT_SECRET ?? randomHex(32),
    WALLET_MASTER_KEY: stored.WALLET_MASTER_KEY ?? randomHex(32),
  };
  if (
    next.JWT_SECRET !== stored.JWT_SECRET || next.WALLET_MASTER_KEY !== stored.WALLET_MASTER_KEY
  ) {
    await Deno.mkdir(config.DATA_DIR, { recursive: true });
    await Deno.writeTextFile(file, JSON.stringify(next, null, 2) + "\n", { mode: 0o600 });
  }
  const generated: string[] = [];
  const out = { ...config };
  if (!config.JWT_SECRET) {
    out.JWT_SECRET = next.JWT_SECRET;
    generated.push("JWT_SECRET");
  }
  if (!config.WALLET_MASTER_KEY) {
    out.WALLET_MASTER_KEY = next.WALLET_MASTER_KEY;
    generated.push("WALLET_MASTER_KEY");
  }
  return { config: out, generated };
}

function randomHex(bytes: number): string {
  const b = crypto.getRandomValues(new Uint8Array(bytes));
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}
