/**
 * Records of both environments for the generated environment test, made through the API: a
 * merchant with a test secret key (`svc_sec_test_`, testnet) and a live one (`svc_sec_`,
 * production), a dashboard session in each mode, and in each environment a payment, a payment
 * link, an escrow, a stream, a payroll batch, a job, a wallet holding USDC there only, and (for a
 * second merchant with an external payout wallet) a payroll sign request.
 */
import assert from "node:assert/strict";
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts";
import type { TestService } from "./service.ts";
import { api, cookieFrom, createMerchant, type TestMerchant } from "./accounts.ts";
import { setSessionMode } from "../../src/modules/merchants/merchants.service.ts";
import type { ProfileName } from "../../src/chain/index.ts";

export type Env = "test" | "live";
export const PROFILE: Record<Env, ProfileName> = { test: "testnet", live: "production" };
export const OTHER: Record<Env, Env> = { test: "live", live: "test" };
const USDC = 1_000_000n;

/** How a request presents a credential of one environment. */
export interface Credentials {
  /** A secret key of the environment. */
  key: string;
  /** A merchant session in the environment's mode. */
  cookie: string;
}

export interface Records {
  payment: string;
  link: string;
  escrow: string;
  stream: string;
  batch: string;
  job: string;
  /** A wallet that holds USDC in this environment only. */
  fundedWallet: string;
  signRequest: string;
}

export interface World {
  a: TestMerchant;
  /** The second merchant, paying payroll from an external wallet (sign requests). */
  e: TestMerchant;
  creds: Record<Env, Credentials>;
  eCreds: Record<Env, Credentials>;
  records: Record<Env, Records>;
  wallets: {
    payout: string;
    payoutAddress: `0x${string}`;
    provider: string;
    providerAddress: `0x${string}`;
    evaluator: string;
  };
  /** Addresses whose USDC must not move while the other environment is probed. */
  watched: `0x${string}`[];
  /**
   * Job ids count from 1 on each chain: the live job the test-key probes address must not exist
   * on testnet. Makes production's jobs outnumber testnet's (call between the two directions).
   */
  moreLiveJobs(): Promise<void>;
}

const fresh = () => privateKeyToAccount(generatePrivateKey()).address;

export async function buildWorld(svc: TestService): Promise<World> {
  const call = api(svc);
  const chain = svc.deps.chain;
  const ok = <T extends { status: number; text: string }>(r: T, status = 200) => {
    assert.equal(r.status, status, r.text);
    return r as T & { json: Record<string, unknown> };
  };

  const a = await createMerchant(svc);
  const e = await createMerchant(svc);
  await linkExternal(svc, e, privateKeyToAccount(generatePrivateKey()));
  const creds = {
    test: await credentials(svc, a, "test"),
    live: await credentials(svc, a, "live"),
  };
  const eCreds = {
    test: await credentials(svc, e, "test"),
    live: await credentials(svc, e, "live"),
  };

  const payoutAddress = a.walletAddress!.toLowerCase() as `0x${string}`;
  const me = ok(await call("GET", "/api/merchant/wallet", { cookie: a.cookie }));
  const payout = (me.json.wallet as { managedWalletId: string }).managedWalletId;
  const wallet = async (label: string) => {
    const r = ok(await call("POST", "/api/wallets", { cookie: a.cookie, body: { label } }), 201);
    return r.json.wallet as { id: string; address: `0x${string}` };
  };
  const provider = await wallet("Provider");
  const evaluator = await wallet("Evaluator");
  const funded = { test: await wallet("Test money"), live: await wallet("Live money") };
  const eWallet = (await svc.db.sql<{ walletAddress: `0x${string}` }[]>`
    select wallet_address from merchants where id = ${e.id}`)[0].walletAddress;
  for (const env of ["test", "live"] as const) {
    const profile = PROFILE[env];
    await chain.mintUsdc({ profile, to: payoutAddress, amount: 20n * USDC });
    await chain.mintUsdc({ profile, to: funded[env].address, amount: 5n * USDC });
    await chain.mintUsdc({ profile, to: eWallet, amount: 5n * USDC });
  }

  const jobs: Record<Env, string[]> = { test: [], live: [] };
  const createJob = async (env: Env) => {
    const r = ok(
      await call("POST", "/api/jobs/create", {
        headers: { "x-api-key": creds[env].key },
        body: {
          clientWalletId: payout,
          provider: provider.address,
          evaluator: evaluator.address,
          budget: "1",
          expiresInSeconds: 3600,
          description: `${env} job`,
        },
      }),
      201,
    );
    jobs[env].push(r.json.jobId as string);
  };

  const records = {} as Record<Env, Records>;
  for (const env of ["test", "live"] as const) {
    const key = { "x-api-key": creds[env].key };
    const payment = ok(
      await call("POST", "/api/payments/initialize", { headers: key, body: { amount: "1.25" } }),
      201,
    );
    const link = ok(
      await call("POST", "/api/merchant/payment-link", {
        cookie: creds[env].cookie,
        body: { amount: "2.50", description: `${env} link` },
      }),
      201,
    );
    const escrow = ok(
      await call("POST", "/api/escrow/create", {
        headers: key,
        body: {
          depositorWalletId: payout,
          beneficiarySCA: provider.address,
          amount: "1",
          expiresInSeconds: 3600,
        },
      }),
      201,
    );
    const stream = ok(
      await call("POST", "/api/payments/stream", {
        headers: key,
        body: {
          senderSCA: payoutAddress,
          receiverSCA: provider.address,
          ratePerSecond: "0.000001",
          totalDeposited: "1",
        },
      }),
    );
    const batch = ok(
      await call("POST", "/api/payroll/run", {
        headers: key,
        body: { recipients: [{ recipientSCA: fresh(), amount: "0.5" }] },
      }),
    );
    const signing = ok(
      await call("POST", "/api/payroll/run", {
        headers: { "x-api-key": eCreds[env].key },
        body: { recipients: [{ recipientSCA: fresh(), amount: "0.25" }] },
      }),
    );
    const [request] = signing.json.results as Array<{ requestId: string }>;
    assert.ok(request.requestId, signing.text);
    records[env] = {
      payment: payment.json.reference as string,
      link: link.json.reference as string,
      escrow: ((escrow.json.escrow ?? escrow.json) as { reference: string }).reference,
      stream: stream.json.reference as string,
      batch: batch.json.batchRef as string,
      job: "",
      fundedWallet: funded[env].id,
      signRequest: request.requestId,
    };
  }
  // Testnet: jobs 1 and 2; production: job 1. The live key's probes address testnet's job 2.
  await createJob("test");
  await createJob("test");
  await createJob("live");
  records.test.job = jobs.test[1];
  records.live.job = jobs.live[0];

  const watched = [payoutAddress, provider.address, evaluator.address, eWallet, ...[
    funded.test.address,
    funded.live.address,
  ]].map((x) => x.toLowerCase() as `0x${string}`);
  for (const p of Object.values(PROFILE)) {
    for (const c of ["EscrowVault", "StreamVault", "AgenticCommerce", "BatchPayout"] as const) {
      watched.push(chain.contract(p, c).toLowerCase() as `0x${string}`);
    }
  }
  return {
    a,
    e,
    creds,
    eCreds,
    records,
    wallets: {
      payout,
      payoutAddress,
      provider: provider.id,
      providerAddress: provider.address,
      evaluator: evaluator.id,
    },
    watched: [...new Set(watched)],
    moreLiveJobs: async () => {
      // Production: jobs 1, 2 and 3; the test key's probes address job 3 (testnet has 1 and 2).
      await createJob("live");
      await createJob("live");
      records.live.job = jobs.live[2];
    },
  };
}

/** A secret key of `env`, and a dashboard session switched to `env`'s mode. */
async function credentials(svc: TestService, m: TestMerchant, env: Env): Promise<Credentials> {
  const call = api(svc);
  const k = await call("POST", "/api/keys", {
    cookie: m.cookie,
    body: { type: "secret", environment: env, label: `${env} key` },
  });
  assert.equal(k.status, 201, k.text);
  const key = (k.json.key as { key: string }).key;
  assert.match(key, env === "test" ? /^svc_sec_test_/ : /^svc_sec_[0-9a-f]/);
  const login = await call("POST", "/api/merchant/login", {
    body: { email: m.email, password: m.password },
  });
  assert.equal(login.status, 200, login.text);
  const cookie = cookieFrom(login.headers, "merchant_token")!;
  await switchMode(svc, cookie, env);
  return { key, cookie };
}

/**
 * The dashboard's mode switch for the session a `merchant_token=…` cookie names (no API route
 * sets it), as another tab of that session would.
 */
export async function switchMode(svc: TestService, cookie: string, env: Env): Promise<void> {
  const token = cookie.split("=")[1];
  const sid = JSON.parse(atob(token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/"))).sid;
  await setSessionMode(svc.deps, sid, env);
}

/** Links `account` as the merchant's external payout wallet (SIWE, as the dashboard does). */
async function linkExternal(svc: TestService, m: TestMerchant, account: PrivateKeyAccount) {
  const call = api(svc);
  const c = await call("GET", `/api/merchant/wallet/connect?address=${account.address}`, {
    cookie: m.cookie,
  });
  assert.equal(c.status, 200, c.text);
  const nonce = cookieFrom(c.headers, "wallet_connect_nonce")!;
  const message = c.json.message as string;
  const r = await call("POST", "/api/merchant/wallet/connect", {
    cookie: `${m.cookie}; ${nonce}`,
    body: {
      address: account.address,
      message,
      signature: await account.signMessage({ message }),
      walletKind: "EXTENSION_WALLET",
    },
  });
  assert.equal(r.status, 200, r.text);
}
