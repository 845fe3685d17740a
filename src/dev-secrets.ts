/**
 * Known development secrets, refused when APP_ENV=production (decisions.md, "Production refuses
 * development secrets"). A value is a development value when it is published somewhere: our
 * compose development file, the test suite, anvil's well-known mnemonic ("test test … junk"),
 * or a key that is one byte (one character) repeated, like "11"×32. Pure: environment in,
 * one problem per offending variable out, in ConfigError's `NAME: text` form.
 */
import { toHex } from "viem";
import { mnemonicToAccount } from "viem/accounts";
import { ANVIL_MNEMONIC } from "./chain/local-node.ts";

/** Secrets published in this repository; each says where it comes from. */
const PUBLISHED: Record<string, string> = {
  "compose-dev-jwt-secret-change-me-0123456789": "the compose development default",
  "compose-dev-metrics-token": "the compose development default",
  "compose-dev": "the compose development default",
  "test-jwt-secret-0123456789abcdef0123456789": "the test suite's secret",
};

/** anvil's default accounts are 0–9; local setups often ask for 20, relayers sit at 1000+. */
const ANVIL_INDEXES = [
  ...Array.from({ length: 20 }, (_, i) => i),
  ...Array.from({ length: 8 }, (_, i) => 1000 + i),
];
let anvilKeys: Map<string, number> | undefined;

/** Private key (lowercase, no 0x) → account index, derived once and only when asked. */
function anvilKeyIndex(): Map<string, number> {
  anvilKeys ??= new Map(
    ANVIL_INDEXES.map((i) => {
      const key = mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: i }).getHdKey().privateKey!;
      return [toHex(key).slice(2), i];
    }),
  );
  return anvilKeys;
}

/** Why `value` is a known development value, or undefined when it is not one we know. */
export function developmentValue(value: string, kind: "key" | "text"): string | undefined {
  const published = PUBLISHED[value];
  if (published) return published;
  if (kind === "key") {
    const hex = value.toLowerCase().replace(/^0x/, "");
    const index = anvilKeyIndex().get(hex);
    if (index !== undefined) return `anvil's well-known dev account ${index} ("test test … junk")`;
    if (/^([0-9a-f]{2})\1*$/.test(hex)) return `one byte repeated (0x${hex.slice(0, 2)}…)`;
    return undefined;
  }
  if (value.length > 0 && value === value[0].repeat(value.length)) {
    return `one character repeated ("${value[0]}"…)`;
  }
  return undefined;
}

/** The secrets checked, by variable: `*_OPERATOR_KEY` covers every chain profile. */
function secretsIn(env: Record<string, string | undefined>): [string, string, "key" | "text"][] {
  const out: [string, string, "key" | "text"][] = [];
  const add = (name: string, kind: "key" | "text") => {
    const v = env[name]?.trim();
    if (v) out.push([name, v, kind]);
  };
  add("JWT_SECRET", "text");
  add("METRICS_TOKEN", "text");
  add("WALLET_MASTER_KEY", "key");
  add("CCTP_ATTESTER_KEY", "key");
  for (const name of Object.keys(env).sort()) {
    if (name.endsWith("_OPERATOR_KEY")) add(name, "key");
  }
  return out;
}

/**
 * One problem per variable holding a known development value (the database password in
 * DATABASE_URL included). Callers apply it to production only.
 */
export function developmentSecretProblems(env: Record<string, string | undefined>): string[] {
  const problems: string[] = [];
  for (const [name, value, kind] of secretsIn(env)) {
    const why = developmentValue(value, kind);
    if (why) {
      problems.push(
        `${name}: a known development value (${why}) is refused when APP_ENV=production; ` +
          (kind === "key" ? "use a key of your own" : "set a random value (openssl rand -hex 32)"),
      );
    }
  }
  const password = databasePassword(env.DATABASE_URL);
  if (password && PUBLISHED[password]) {
    problems.push(
      `DATABASE_URL: its password is a known development value (${PUBLISHED[password]}) and ` +
        "is refused when APP_ENV=production; set POSTGRES_PASSWORD (or the URL) to a random value",
    );
  }
  return problems;
}

function databasePassword(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    return decodeURIComponent(new URL(url).password);
  } catch {
    return undefined;
  }
}
