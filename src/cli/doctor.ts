/**
 * `deno task doctor`: checks a configuration before it goes live, without changing anything.
 * Every check prints one line (ok / FAIL / warn) and, when it is not ok, the fix. Exits 1 when
 * any check fails.
 *
 *   configuration parses · secrets present · no known development secret (production: the
 *   same refusal the service applies at start) · BASE_URL https (production) · METRICS_TOKEN
 *   (production) · database reachable and migrated · each chain (bridge source chains with an
 *   RPC URL too): RPC answers with the expected chain id, our contracts deployed from our
 *   artifacts, operator funded; CCTP: domains, links, token pairs, attestations · SMTP accepts
 *   a connection
 */
import { type Config, ConfigError, loadConfig } from "../config.ts";
import { createSql, describeUrl, ping } from "../db/client.ts";
import { pendingMigrations } from "../db/migrate.ts";
import { type DoctorCheck, inspectChains } from "../chain/doctor.ts";
import { minWithdrawalDelay } from "../modules/x402/x402.batched.rules.ts";
import { developmentSecretProblems } from "../dev-secrets.ts";
import { smtpProblem } from "../modules/mail/mail.service.ts";

export type { DoctorCheck };

import { masterKeyOpens } from "../chain/wallets.ts";
import { fail, parseArgs } from "./context.ts";

const DB_TIMEOUT_S = 5;

export async function runDoctor(env: Record<string, string | undefined>): Promise<DoctorCheck[]> {
  const checks: DoctorCheck[] = [];
  let config: Config;
  try {
    config = loadConfig(env);
    checks.push({ name: "configuration", ok: true, detail: `APP_ENV=${config.APP_ENV}` });
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    for (const problem of e.problems) {
      const variable = problem.split(":")[0];
      checks.push({
        name: `configuration: ${variable}`,
        ok: false,
        // The name is the check's: once is enough.
        detail: problem.startsWith(`${variable}: `) ? problem.slice(variable.length + 2) : problem,
        fix: `set ${variable} correctly in the environment (see README, Configuration)`,
      });
    }
    // Go on with what can still be checked: the same values without production's demands.
    try {
      config = loadConfig({ ...env, APP_ENV: "development", WEBHOOK_TARGETS: undefined });
    } catch {
      return checks;
    }
    config = { ...config, isProduction: env.APP_ENV === "production" };
  }
  const prod = config.isProduction;
  const devSecrets = new Map(
    (prod ? developmentSecretProblems(env) : []).map((p) => [p.slice(0, p.indexOf(":")), p]),
  );
  for (const [variable, problem] of devSecrets) {
    checks.push({
      name: `secret ${variable}`,
      ok: false,
      detail: problem.slice(variable.length + 2),
      fix: `replace ${variable}: the service refuses to start with it in production`,
    });
  }

  for (const name of ["JWT_SECRET", "WALLET_MASTER_KEY"] as const) {
    if (devSecrets.has(name)) continue;
    if (config[name]) checks.push({ name: `secret ${name}`, ok: true, detail: "set" });
    else if (!prod) {
      checks.push({
        name: `secret ${name}`,
        ok: true,
        warn: true,
        detail: "not set: a development value is generated under DATA_DIR",
        fix: `set ${name} before going live`,
      });
    } else if (!checks.some((c) => c.name === `configuration: ${name}`)) {
      checks.push({ name: `secret ${name}`, ok: false, detail: "missing", fix: `set ${name}` });
    }
  }
  if (prod) {
    const https = config.BASE_URL.startsWith("https://");
    checks.push({
      name: "BASE_URL is https",
      ok: https,
      detail: config.BASE_URL,
      fix: https ? undefined : "set BASE_URL to the public https:// origin (cookies are Secure)",
    });
    if (!devSecrets.has("METRICS_TOKEN")) {
      checks.push({
        name: "secret METRICS_TOKEN",
        ok: !!config.METRICS_TOKEN,
        detail: config.METRICS_TOKEN ? "set" : "missing: /metrics refuses every scrape",
        fix: config.METRICS_TOKEN ? undefined : "set METRICS_TOKEN (16+ characters) for Prometheus",
      });
    }
  }

  // Database.
  let sql: ReturnType<typeof createSql> | null = null;
  if (!config.DATABASE_URL) {
    checks.push({
      name: "database",
      ok: !prod,
      warn: !prod,
      detail: "DATABASE_URL not set: the embedded PostgreSQL under DATA_DIR is used",
      fix: "set DATABASE_URL to a managed PostgreSQL for production",
    });
  } else {
    sql = createSql(config.DATABASE_URL, { max: 1, camel: true });
    const where = describeUrl(config.DATABASE_URL);
    try {
      await Promise.race([
        ping(sql),
        new Promise((_, reject) =>
          setTimeout(() => reject(new Error(`no answer in ${DB_TIMEOUT_S} s`)), DB_TIMEOUT_S * 1000)
        ),
      ]);
      checks.push({ name: "database reachable", ok: true, detail: where });
      const pending = await pendingMigrations(sql);
      checks.push({
        name: "database migrated",
        ok: pending.length === 0,
        detail: pending.length ? `pending migrations: ${pending.join(", ")}` : "all applied",
        fix: pending.length
          ? "run `deno task migrate` (the service also migrates at start)"
          : undefined,
      });
      if (config.WALLET_MASTER_KEY && !pending.length) {
        const opens = await masterKeyOpens(sql, config.WALLET_MASTER_KEY);
        if (opens !== null) {
          checks.push({
            name: "WALLET_MASTER_KEY opens the wallets",
            ok: opens,
            detail: opens
              ? "a managed wallet's key opens with it"
              : "it does not open the managed wallets' keys in this database (another key)",
            fix: opens
              ? undefined
              : "set the WALLET_MASTER_KEY this database's wallets were sealed with; the service refuses to start without it",
          });
        }
      }
    } catch (e) {
      checks.push({
        name: "database reachable",
        ok: false,
        detail: `${where}: ${e instanceof Error ? e.message.split("\n")[0] : e}`,
        fix: "check DATABASE_URL (host, port, user, password, database) and that PostgreSQL is up",
      });
      await sql.end({ timeout: 1 }).catch(() => {});
      sql = null;
    }
  }

  try {
    checks.push(
      ...await inspectChains(config.chain, sql, {
        vaultDelayNeeded: minWithdrawalDelay(config.X402_BATCH_SECONDS),
        production: config.isProduction,
      }),
    );
  } finally {
    await sql?.end({ timeout: 1 }).catch(() => {});
  }

  if (config.SMTP_URL) {
    const problem = await smtpProblem(config.SMTP_URL);
    checks.push({
      name: "SMTP accepts a connection",
      ok: problem === null,
      detail: problem ?? describeUrl(config.SMTP_URL),
      fix: problem
        ? "check SMTP_URL (host, port, credentials; ?ignoreTLS=true for a server without TLS)"
        : undefined,
    });
  } else if (!checks.some((c) => c.name === "configuration: SMTP_URL")) {
    checks.push({
      name: "SMTP",
      ok: !prod,
      warn: !prod,
      detail: "SMTP_URL not set: mail goes to the log and /dev/mailbox",
      fix: "set SMTP_URL for real mail",
    });
  }
  return checks;
}

export function formatCheck(c: DoctorCheck): string {
  const tag = !c.ok ? "FAIL" : c.warn ? "warn" : "ok  ";
  const fix = (!c.ok || c.warn) && c.fix ? `\n       fix: ${c.fix}` : "";
  return `${tag}  ${c.name}: ${c.detail}${fix}`;
}

if (import.meta.main) {
  const usage = "usage: deno task doctor\n" +
    "Checks the configuration in the environment (or .env) before it goes live; changes nothing.";
  if (parseArgs(Deno.args, { usage }).positional.length) fail(usage);
  const checks = await runDoctor(Deno.env.toObject());
  for (const c of checks) console.log(formatCheck(c));
  console.log(`\n${summary(checks)}`);
  Deno.exit(checks.some((c) => !c.ok) ? 1 : 0);
}

/** The last line: what failed, or what passed and what was left to development defaults. */
export function summary(checks: DoctorCheck[]): string {
  const failed = checks.filter((c) => !c.ok);
  if (failed.length) {
    return `${failed.length} check(s) failed: ${failed.map((c) => c.name).join("; ")}`;
  }
  const warned = checks.filter((c) => c.warn);
  if (!warned.length) return `all ${checks.length} checks passed`;
  return `nothing failed, but only ${checks.length - warned.length} of ${checks.length} checks ` +
    `ran against a real setting; ${warned.length} use development defaults (warn) and were not ` +
    `checked: ${warned.map((c) => c.name).join("; ")}`;
}
