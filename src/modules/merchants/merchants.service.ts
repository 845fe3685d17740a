/** Merchant accounts: signup with an emailed code, verification, login sessions, the profile. */
import type { Deps } from "../../deps.ts";
import { DomainError } from "../../errors.ts";
import { signToken } from "../../http/session-token.ts";
import { MERCHANT_SESSION_SECONDS } from "../../http/session-token.ts";
import { checksum } from "../../chain/address.ts";
import * as repo from "./merchants.repo.ts";
import { activeMerchantKeyHint, issueKey } from "../keys/keys.service.ts";
import {
  checkCode,
  CODE_TTL_MS,
  codeExpired,
  codeLive,
  DUMMY_PASSWORD_HASH,
  EMAIL_MAX_LENGTH,
  hashCode,
  hashPassword,
  MAX_CODE_ATTEMPTS,
  newVerificationCode,
  normaliseEmail,
  PASSWORD_MAX_LENGTH,
  verifyPassword,
} from "./merchants.rules.ts";
import { computeStats, recentPayment } from "./merchants.stats.ts";
import { clearLoginFailures, countLoginAttempt } from "./merchants.login-throttle.ts";
import type { MerchantRow, WalletProvider } from "./merchants.types.ts";
import * as payments from "../payments/payments.service.ts";
import { createManagedWallet } from "../wallets/wallets.service.ts";
import { paymentRecord } from "../payments/payments.rules.ts";
import type { ProfileName } from "../../chain/profiles.ts";

export async function signup(
  deps: Deps,
  body: { email: string; businessName: string; password: string; walletProvider: WalletProvider },
) {
  const email = normaliseEmail(body.email);
  const existing = await repo.findByEmail(deps.sql, email);
  const now = deps.clock.now();
  // Verified, or a registration whose code is still live (its owner may be verifying now): 409.
  if (existing && (existing.verifiedAt || codeLive(existing, now))) {
    throw new DomainError("email_taken");
  }
  // A code killed by wrong tries before its time: only the registration's own password signs up
  // again (a new code for its owner) until the code would have expired; anyone else gets 409.
  const sameRegistrant = existing && !codeExpired(existing, now)
    ? await verifyPassword(body.password, existing.passwordHash)
    : false;
  if (existing && !codeExpired(existing, now) && !sameRegistrant) {
    throw new DomainError("email_taken");
  }
  const code = newVerificationCode();
  const passwordHash = await hashPassword(body.password);
  await deps.sql.begin(async (tx) => {
    const row = await repo.upsertUnverified(tx, {
      email,
      businessName: body.businessName,
      passwordHash,
      walletProvider: body.walletProvider,
      codeHash: hashCode(email, code),
      codeExpiresAt: new Date(now.getTime() + CODE_TTL_MS),
      now,
      // The killed registration may be replaced only while it still has this password.
      killedWithPassword: sameRegistrant ? existing!.passwordHash : null,
    });
    // Verified, or signed up by a concurrent request, between our read and this write.
    if (!row) throw new DomainError("email_taken");
    await deps.mailer.send({
      to: email,
      // The code stays out of the subject: subjects appear in delivery logs.
      subject: "Verify your email",
      text: [
        `Hello ${body.businessName},`,
        "",
        `Your verification code is ${code}. It is valid for 10 minutes.`,
        "",
        "If you did not sign up, ignore this message.",
      ].join("\n"),
    }, { tx });
  });
  return { email };
}

export async function verify(deps: Deps, body: { email: string; code: string }) {
  const email = normaliseEmail(body.email);
  const result = await deps.sql.begin(async (tx) => {
    const m = await repo.findByEmail(tx, email, { forUpdate: true });
    if (!m) throw new DomainError("account_not_found");
    if (m.verifiedAt) throw new DomainError("account_already_verified");
    const outcome = checkCode(m, body.code, deps.clock.now());
    if (outcome === "locked" || outcome === "none") {
      throw new DomainError("verification_code_locked");
    }
    if (outcome === "expired") throw new DomainError("verification_code_expired");
    if (outcome === "wrong") {
      // Committed: the count must survive, so this returns instead of throwing.
      const attempts = await repo.recordWrongCode(tx, m.id);
      return {
        wrong: attempts >= MAX_CODE_ATTEMPTS
          ? "verification_code_locked"
          : "verification_code_invalid",
      } as const;
    }

    let walletAddress: string | null = null;
    let managedWalletId: string | null = null;
    if (m.walletProvider === "MANAGED") {
      try {
        const w = await createManagedWallet(deps, m.id, { tx });
        walletAddress = w.address;
        managedWalletId = w.walletId;
      } catch (e) {
        deps.log.error("merchant wallet provisioning failed", { merchantId: m.id, error: e });
        throw new DomainError("wallet_setup_failed", {}, { cause: e });
      }
    }
    const now = deps.clock.now();
    const merchant = await repo.markVerified(tx, m.id, { walletAddress, managedWalletId, now });
    const issued = await issueKey(tx, now, m.id, { kind: "merchant", environment: "live" });
    return { merchant, apiKey: issued.key } as const;
  });
  if ("wrong" in result) throw new DomainError(result.wrong!);
  return result;
}

export async function login(deps: Deps, body: { email: string; password: string }) {
  // Longer than signup allows: no account can match, and hashing 100 KB on request is a gift to
  // a flood. The same answer as a wrong password, so the bound reveals nothing about accounts.
  if (body.password.length > PASSWORD_MAX_LENGTH || body.email.length > EMAIL_MAX_LENGTH) {
    throw new DomainError("login_invalid");
  }
  const email = normaliseEmail(body.email);
  await countLoginAttempt(deps, email);
  const m = await repo.findByEmail(deps.sql, email);
  const ok = await verifyPassword(body.password, m?.passwordHash ?? DUMMY_PASSWORD_HASH);
  if (!m || !ok) throw new DomainError("login_invalid");
  await clearLoginFailures(deps, email);
  if (!m.verifiedAt) throw new DomainError("login_unverified");
  const now = deps.clock.now();
  const sessionId = await repo.createSession(
    deps.sql,
    m.id,
    now,
    new Date(now.getTime() + MERCHANT_SESSION_SECONDS * 1000),
  );
  const token = await signToken(
    deps.config,
    "merchant",
    { sub: m.id, sid: sessionId },
    now,
    MERCHANT_SESSION_SECONDS,
  );
  return { merchant: m, token };
}

/** The merchant of a live session, in one query (every cookie request asks). */
export async function sessionMerchant(
  deps: Pick<Deps, "sql">,
  sessionId: string,
  merchantId: string,
  now: Date,
) {
  return await repo.sessionMerchant(deps.sql, sessionId, merchantId, now);
}

/** The dashboard's test/live switch: the session's environment, as a key's prefix is a key's. */
export async function setSessionMode(deps: Deps, sessionId: string, mode: "live" | "test") {
  return await repo.setSessionMode(deps.sql, sessionId, mode);
}

export async function logout(deps: Deps, sessionId: string) {
  await repo.revokeSession(deps.sql, sessionId, deps.clock.now());
}

/**
 * The profile: the merchant, payment stats over the 50 most recent, the 20 newest, on `profile`'s
 * chain (the session's mode: a test-mode session never sees live payments).
 */
export async function profile(deps: Deps, m: MerchantRow, chain: ProfileName) {
  const hint = await activeMerchantKeyHint(deps, m.id);
  const recent = await payments.recentForMerchant(deps, m.id, 50, [chain]);
  return {
    merchant: {
      id: m.id,
      email: m.email,
      businessName: m.businessName,
      createdAt: m.createdAt.toISOString(),
      walletProvider: m.walletProvider,
      walletAddress: displayAddress(m.walletAddress),
      apiKeyHint: hint,
    },
    stats: computeStats(recent),
    recentPayments: recent.slice(0, 20).map((p) => recentPayment(p, deps.config.BASE_URL)),
  };
}

/** The dashboard JSON: full payment records on the key's chain, newest first. */
export async function dashboardPayments(deps: Deps, merchantId: string, profile: ProfileName) {
  const rows = await payments.recentForMerchant(deps, merchantId, 100, [profile]);
  const now = deps.clock.now();
  return rows.map((p) => paymentRecord(p, profile, now));
}

export function publicMerchant(m: MerchantRow) {
  return {
    id: m.id,
    email: m.email,
    businessName: m.businessName,
    walletProvider: m.walletProvider,
    walletAddress: displayAddress(m.walletAddress),
    createdAt: m.createdAt.toISOString(),
  };
}

export function displayAddress(a: string | null): string | null {
  return a ? checksum(a) : null;
}
