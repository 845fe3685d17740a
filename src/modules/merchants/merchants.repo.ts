/** SQL for merchants, their sessions and wallet-link challenges. */
import type { Db } from "../../db/client.ts";
import type { MerchantRow, WalletProvider } from "./merchants.types.ts";
import { MAX_CODE_ATTEMPTS } from "./merchants.rules.ts";

export async function findById(
  sql: Db,
  id: string,
  opts: { forUpdate?: boolean } = {},
): Promise<MerchantRow | null> {
  const [row] = opts.forUpdate
    ? await sql<MerchantRow[]>`select * from merchants where id = ${id} for update`
    : await sql<MerchantRow[]>`select * from merchants where id = ${id}`;
  return row ?? null;
}

export async function findByEmail(
  sql: Db,
  email: string,
  opts: { forUpdate?: boolean } = {},
): Promise<MerchantRow | null> {
  const [row] = opts.forUpdate
    ? await sql<MerchantRow[]>`select * from merchants where email = ${email} for update`
    : await sql<MerchantRow[]>`select * from merchants where email = ${email}`;
  return row ?? null;
}

export interface SignupFields {
  email: string;
  businessName: string;
  passwordHash: string;
  walletProvider: WalletProvider;
  codeHash: string;
  codeExpiresAt: Date;
  now: Date;
  /**
   * The password hash of a registration whose code wrong tries killed before its time, checked to
   * be this signup's password: only then is such a registration replaced (else only once expired).
   */
  killedWithPassword?: string | null;
}

/** A new unverified merchant, or the unverified one with this email replaced (new code). */
export async function upsertUnverified(sql: Db, f: SignupFields): Promise<MerchantRow | null> {
  const [row] = await sql<MerchantRow[]>`
    insert into merchants (email, business_name, password_hash, wallet_provider,
                           verification_code_hash, verification_expires_at, verification_attempts,
                           created_at, updated_at)
    values (${f.email}, ${f.businessName}, ${f.passwordHash}, ${f.walletProvider},
            ${f.codeHash}, ${f.codeExpiresAt}, 0, ${f.now}, ${f.now})
    on conflict (email) do update set
      business_name = excluded.business_name, password_hash = excluded.password_hash,
      wallet_provider = excluded.wallet_provider,
      verification_code_hash = excluded.verification_code_hash,
      verification_expires_at = excluded.verification_expires_at,
      verification_attempts = 0, updated_at = excluded.updated_at
    where merchants.verified_at is null
      -- Only once the registration's code has expired; or, killed by wrong tries before that,
      -- by its own registrant (the password checked by the caller, unchanged since): no one
      -- else's signup replaces the password or the code its owner may be about to use.
      and (merchants.verification_code_hash is null
        or merchants.verification_expires_at < ${f.now}
        or (merchants.verification_attempts >= ${MAX_CODE_ATTEMPTS}
          and merchants.password_hash = ${f.killedWithPassword ?? null}))
    returning *`;
  return row ?? null;
}

export async function recordWrongCode(sql: Db, id: string): Promise<number> {
  const [row] = await sql<{ verificationAttempts: number }[]>`
    update merchants set verification_attempts = verification_attempts + 1
    where id = ${id} returning verification_attempts`;
  return row.verificationAttempts;
}

export async function markVerified(
  sql: Db,
  id: string,
  f: { walletAddress: string | null; managedWalletId: string | null; now: Date },
): Promise<MerchantRow> {
  const [row] = await sql<MerchantRow[]>`
    update merchants set verified_at = ${f.now}, wallet_address = ${f.walletAddress},
      managed_wallet_id = ${f.managedWalletId}, verification_code_hash = null,
      verification_expires_at = null, verification_attempts = 0, updated_at = ${f.now}
    where id = ${id} returning *`;
  return row;
}

export async function setPayoutWallet(
  sql: Db,
  id: string,
  f: {
    walletProvider: WalletProvider;
    walletAddress: string;
    managedWalletId: string | null;
    now: Date;
  },
): Promise<MerchantRow> {
  const [row] = await sql<MerchantRow[]>`
    update merchants set wallet_provider = ${f.walletProvider}, wallet_address = ${f.walletAddress},
      managed_wallet_id = ${f.managedWalletId}, updated_at = ${f.now}
    where id = ${id} returning *`;
  return row;
}

// ---- webhook signing secret (kept on the merchant; the webhooks module signs with it) -------

export async function webhookSecret(sql: Db, merchantId: string): Promise<string | null> {
  const [row] = await sql<{ webhookSecret: string }[]>`
    select webhook_secret from merchants where id = ${merchantId}`;
  return row?.webhookSecret ?? null;
}

export async function setWebhookSecret(sql: Db, merchantId: string, secret: string): Promise<void> {
  await sql`update merchants set webhook_secret = ${secret}, updated_at = now() where id = ${merchantId}`;
}

// ---- sessions ---------------------------------------------------------------------------------

export async function createSession(
  sql: Db,
  merchantId: string,
  now: Date,
  expiresAt: Date,
): Promise<string> {
  const [row] = await sql<{ id: string }[]>`
    insert into merchant_sessions (merchant_id, created_at, expires_at)
    values (${merchantId}, ${now}, ${expiresAt}) returning id`;
  return row.id;
}

/** The merchant of a live session, in one query (every cookie request asks). */
export async function sessionMerchant(
  sql: Db,
  sessionId: string,
  merchantId: string,
  now: Date,
): Promise<{ live: boolean; merchant: MerchantRow | null; mode: "live" | "test" }> {
  const [row] = await sql<(MerchantRow & { sessionLive: boolean; sessionMode: "live" | "test" })[]>`
    select m.*, true as session_live, s.mode as session_mode from merchant_sessions s
    left join merchants m on m.id = s.merchant_id
    where s.id = ${sessionId} and s.merchant_id = ${merchantId}
      and s.revoked_at is null and s.expires_at > ${now}`;
  if (!row) return { live: false, merchant: null, mode: "live" };
  const { sessionLive: _live, sessionMode, ...merchant } = row;
  return { live: true, merchant: merchant.id ? merchant as MerchantRow : null, mode: sessionMode };
}

/** Switches a live session between the dashboard's live and test mode. */
export async function setSessionMode(
  sql: Db,
  sessionId: string,
  mode: "live" | "test",
): Promise<boolean> {
  const rows = await sql`
    update merchant_sessions set mode = ${mode} where id = ${sessionId} and revoked_at is null
    returning id`;
  return rows.length === 1;
}

export async function revokeSession(sql: Db, id: string, now: Date): Promise<void> {
  await sql`update merchant_sessions set revoked_at = ${now} where id = ${id} and revoked_at is null`;
}

// ---- wallet-link challenges ---------------------------------------------------------------------

export async function insertChallenge(
  sql: Db,
  c: {
    nonce: string;
    merchantId: string;
    address: string;
    messageHash: string;
    issuedAt: Date;
    expiresAt: Date;
  },
): Promise<void> {
  await sql`
    insert into wallet_link_challenges (nonce, merchant_id, address, message_hash, issued_at, expires_at)
    values (${c.nonce}, ${c.merchantId}, ${c.address}, ${c.messageHash}, ${c.issuedAt}, ${c.expiresAt})`;
}

export interface ChallengeRow {
  nonce: string;
  merchantId: string;
  address: string;
  messageHash: string;
  issuedAt: Date;
  expiresAt: Date;
  usedAt: Date | null;
}

/** Marks the challenge used and returns it, only if it was unused and unexpired: single use. */
export async function consumeChallenge(
  sql: Db,
  nonce: string,
  merchantId: string,
  now: Date,
): Promise<ChallengeRow | null> {
  const [row] = await sql<ChallengeRow[]>`
    update wallet_link_challenges set used_at = ${now}
    where nonce = ${nonce} and merchant_id = ${merchantId} and used_at is null and expires_at > ${now}
    returning *`;
  return row ?? null;
}

/**
 * One more login attempt for a hashed address: its window's count after it, a new window (count 1)
 * when the last one started at or before `windowStartsAfter`.
 */
export async function countLoginAttempt(
  sql: Db,
  emailHash: string,
  f: { now: Date; windowStartsAfter: Date },
): Promise<{ failures: number; windowStart: Date }> {
  const [row] = await sql<{ failures: number; windowStart: Date }[]>`
    insert into login_failures (email_hash, failures, window_start)
    values (${emailHash}, 1, ${f.now})
    on conflict (email_hash) do update set
      failures = case when login_failures.window_start <= ${f.windowStartsAfter} then 1
                      else login_failures.failures + 1 end,
      window_start = case when login_failures.window_start <= ${f.windowStartsAfter}
                          then excluded.window_start else login_failures.window_start end
    returning failures, window_start`;
  return row;
}

export async function clearLoginFailures(sql: Db, emailHash: string): Promise<void> {
  await sql`delete from login_failures where email_hash = ${emailHash}`;
}

/** Windows that ended before `before` (worth nothing since); how many rows went. */
export async function deleteLoginWindowsBefore(sql: Db, before: Date): Promise<number> {
  const result = await sql`delete from login_failures where window_start < ${before}`;
  return result.count;
}
