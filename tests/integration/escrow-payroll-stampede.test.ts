/**
 * 50 identical requests at once (DESIGN §11) on a service whose pool has 5 connections: escrow
 * release, confirm, dispute and refund of one escrow, escrow creations beyond the depositor's
 * balance, and payroll runs sharing one Idempotency-Key. Each time exactly one request changes
 * the state on chain (the contract's view, and the balances it moves changed exactly once), the
 * rest are clean 4xx (400 for the state or the balance, 409 while another holds the resource),
 * every answer comes within the bound, `/readyz` and another merchant's read are served
 * throughout, and no transaction reverts (the database refuses before anything is broadcast).
 *
 * The service runs no job workers, so no expiry sweep races the refund; a peer process of the
 * deployment delivers the sign-up mails and is stopped before the stampedes.
 */
import assert from "node:assert/strict";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { startReceiver } from "../helpers/receiver.ts";
import { rpc } from "../helpers/chain.ts";
import { stampede, type StampedeResult, succeeded } from "../helpers/stampede.ts";
import { M } from "../../src/http/messages.ts";

const USDC = 1_000_000n;
const P = "production" as const;

Deno.test("stampedes: escrow actions and payroll runs on a pool of 5", async (t) => {
  const svc = await startTestService({
    env: { RATE_LIMITS: "off", DATABASE_POOL_MAX: "5" },
    workers: false,
  });
  const receiver = startReceiver();
  const call = api(svc);
  const chain = svc.deps.chain;
  const sql = svc.db.sql;
  try {
    const mailer = await startTestService({ sameDeploymentAs: svc, serve: false });
    const [a, b] = await Promise.all([createMerchant(svc), createMerchant(svc)]);
    await mailer.close();
    const bystander = { method: "GET", path: "/api/escrow", headers: { "x-api-key": b.apiKey } };
    const wallet = async () => {
      const r = await call("POST", "/api/wallets", {
        headers: { "x-api-key": a.apiKey },
        body: {},
      });
      assert.equal(r.status, 201, r.text);
      return r.json.wallet as { id: string; address: `0x${string}` };
    };
    const depositor = await wallet();
    const beneficiary = await wallet();
    await chain.mintUsdc({ profile: P, to: depositor.address, amount: 1_000n * USDC });
    const balance = (address: `0x${string}`) => chain.usdcBalance(P, address);
    const vault = chain.contract(P, "EscrowVault");
    const reverted = async () =>
      (await sql`select count(*)::int as n from chain_transactions where status = 'reverted'`)[0]
        .n as number;
    const intents = async (key: string) =>
      (await sql`select count(*)::int as n from chain_transactions where intent_key = ${key}`)[0]
        .n as number;
    const events = async (reference: string, event: string) =>
      (await sql`
        select count(*)::int as n from webhook_deliveries
        where reference = ${reference} and event = ${event}`)[0].n as number;
    const create = async (expiresInSeconds = 3600) => {
      const r = await call("POST", "/api/escrow/create", {
        headers: { authorization: `Bearer ${a.apiKey}` },
        body: {
          depositorWalletId: depositor.id,
          beneficiarySCA: beneficiary.address,
          amount: "7",
          expiresInSeconds,
          webhookUrl: `${receiver.url}/hooks`,
        },
      });
      assert.equal(r.status, 201, r.text);
      return r.json.reference as string;
    };
    const post = (path: string, body: unknown) => ({
      method: "POST",
      path,
      headers: { authorization: `Bearer ${a.apiKey}` },
      body,
    });
    /** One 200; every other answer the state's 400 (`texts`) or 409 resource_busy. */
    const exactlyOne = (r: StampedeResult, texts: string[]) => {
      assert.equal(succeeded(r).length, 1, JSON.stringify(r.byStatus));
      for (const x of r.answers.filter((x) => x.status !== 200)) {
        if (x.status === 409) assert.equal(x.json.error, M.resourceBusy, x.text);
        else {
          assert.equal(x.status, 400, x.text);
          assert.ok(texts.includes(x.json.error as string), x.text);
        }
      }
    };

    await t.step("release ×50: the beneficiary is paid once", async () => {
      const reference = await create();
      const before = await Promise.all([balance(beneficiary.address), balance(vault)]);
      const r = await stampede(
        svc,
        post("/api/escrow/release", { reference, callerSCA: depositor.address }),
        { bystander },
      );
      exactlyOne(r, ["Escrow is RELEASED — cannot release."]);
      assert.equal(await balance(beneficiary.address), before[0] + 7n * USDC);
      assert.equal(await balance(vault), before[1] - 7n * USDC);
      assert.equal((await chain.escrow.read(P, reference)).status, "RELEASED");
      assert.equal(await intents(`escrow:release:${reference}`), 1);
      assert.equal(await events(reference, "escrow.released"), 1);
      assert.equal(await reverted(), 0);
    });

    await t.step("confirm ×50: confirmed once, no money moves", async () => {
      const reference = await create();
      const before = await Promise.all([balance(beneficiary.address), balance(depositor.address)]);
      const r = await stampede(
        svc,
        post("/api/escrow/confirm", { reference, callerSCA: beneficiary.address }),
        { bystander },
      );
      exactlyOne(r, [M.escrowAlreadyConfirmed]);
      const onChain = await chain.escrow.read(P, reference);
      assert.equal(onChain.status, "ACTIVE");
      assert.equal(onChain.confirmed, true);
      assert.deepEqual(
        await Promise.all([balance(beneficiary.address), balance(depositor.address)]),
        before,
      );
      assert.equal(await intents(`escrow:confirm:${reference}`), 1);
      assert.equal(await reverted(), 0);
    });

    await t.step("dispute ×50: disputed once, the funds stay held", async () => {
      const reference = await create();
      const held = await balance(vault);
      const r = await stampede(
        svc,
        post("/api/escrow/dispute", { reference, callerSCA: beneficiary.address, reason: "late" }),
        { bystander },
      );
      exactlyOne(r, ["Escrow is DISPUTED — cannot dispute."]);
      const onChain = await chain.escrow.read(P, reference);
      assert.equal(onChain.status, "DISPUTED");
      assert.equal(onChain.disputedBy, beneficiary.address.toLowerCase());
      assert.equal(await balance(vault), held);
      assert.equal(await intents(`escrow:dispute:${reference}`), 1);
      assert.equal(await events(reference, "escrow.disputed"), 1);
      assert.equal(await reverted(), 0);
    });

    await t.step("refund ×50 of an expired escrow: the depositor is refunded once", async () => {
      const reference = await create(60);
      svc.clock.advance(61_000);
      await rpc(chain.runtime(P).rpcUrl, "evm_increaseTime", [61]);
      await rpc(chain.runtime(P).rpcUrl, "evm_mine", []);
      const before = await Promise.all([balance(depositor.address), balance(vault)]);
      const r = await stampede(svc, post("/api/escrow/refund", { reference }), { bystander });
      exactlyOne(r, ["Escrow is REFUNDED — cannot refund."]);
      assert.equal(await balance(depositor.address), before[0] + 7n * USDC);
      assert.equal(await balance(vault), before[1] - 7n * USDC);
      assert.equal((await chain.escrow.read(P, reference)).status, "REFUNDED");
      assert.equal(await intents(`escrow:refund:${reference}`), 1);
      assert.equal(await events(reference, "refund.completed"), 1);
      assert.equal(await reverted(), 0);
    });

    await t.step(
      "create ×50 beyond the balance: three funded, the rest 400 with `balance`",
      async () => {
        const poor = await wallet();
        await chain.mintUsdc({ profile: P, to: poor.address, amount: 10n * USDC });
        const r = await stampede(
          svc,
          post("/api/escrow/create", {
            depositorWalletId: poor.id,
            beneficiarySCA: beneficiary.address,
            amount: "3",
            expiresInSeconds: 3600,
          }),
          { bystander },
        );
        assert.equal(r.byStatus[201], 3, JSON.stringify(r.byStatus));
        for (const x of r.answers.filter((x) => x.status !== 201)) {
          if (x.status === 409) assert.equal(x.json.error, M.resourceBusy, x.text);
          else {
            assert.equal(x.status, 400, x.text);
            assert.equal(x.json.error, M.escrowInsufficient);
            assert.equal(x.json.balance, "1.000000");
          }
        }
        assert.equal(await balance(poor.address), 1n * USDC);
        const created = await sql`
        select status from escrow_creates where depositor_wallet_id = ${poor.id}`;
        assert.deepEqual(created.map((c) => c.status), ["completed", "completed", "completed"]);
        assert.equal(await reverted(), 0);
      },
    );

    await t.step(
      "payroll run ×50 with one Idempotency-Key (two credentials): one batch, everyone paid once",
      async () => {
        const payer = a.walletAddress!.toLowerCase() as `0x${string}`;
        await chain.mintUsdc({ profile: P, to: payer, amount: 100n * USDC });
        const start = await balance(payer);
        const recipients = Array.from({ length: 3 }, (_, i) => ({
          recipientSCA: privateKeyToAccount(generatePrivateKey()).address,
          amount: String(i + 1),
        }));
        // Two live credentials of the merchant take turns: the HTTP layer keeps a key per
        // credential, so the batch's own record of the key is what makes the second one find it.
        const secret = await call("POST", "/api/keys", {
          headers: { "x-api-key": a.apiKey },
          body: { type: "secret", environment: "live", label: "payroll", scopes: ["payroll"] },
        });
        assert.equal(secret.status, 201, secret.text);
        const keys = [a.apiKey, (secret.json.key as { key: string }).key];
        const r = await stampede(svc, (i) => ({
          method: "POST",
          path: "/api/payroll/run",
          headers: { "x-api-key": keys[i % 2], "idempotency-key": "one-payroll" },
          body: { recipients, webhookUrl: `${receiver.url}/payroll` },
        }), { bystander });
        const ok = succeeded(r);
        assert.ok(ok.length >= 1, JSON.stringify(r.byStatus));
        const refs = new Set(ok.map((x) => x.json.batchRef));
        assert.equal(refs.size, 1, "every answer names the same batch");
        for (const x of r.answers.filter((x) => x.status !== 200)) {
          assert.equal(x.status, 409, x.text);
        }
        const batches =
          await sql`select batch_ref from payroll_batches where merchant_id = ${a.id}`;
        assert.deepEqual(batches.map((x) => x.batchRef), [...refs]);
        for (const [i, x] of recipients.entries()) {
          assert.equal(await balance(x.recipientSCA), BigInt(i + 1) * USDC, `recipient ${i}`);
        }
        assert.equal(await balance(payer), start - 6n * USDC);
        const [ref] = [...refs] as string[];
        assert.equal(await intents(`payroll:${ref}:0`), 1);
        assert.equal(await events(ref, "payroll.completed"), 1);
        assert.equal(await reverted(), 0);
      },
    );
  } finally {
    await receiver.close();
    await svc.close();
  }
});
