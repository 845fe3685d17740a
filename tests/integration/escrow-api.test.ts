/**
 * Escrow through the API on a real anvil and PostgreSQL: every transition and refusal, the
 * database's state equal to the contract's after each step, the webhook payloads field by field,
 * and release racing dispute (exactly one wins on chain; the database agrees).
 */
import assert from "node:assert/strict";
import { catchUpClock, startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { startReceiver } from "../helpers/receiver.ts";
import { waitFor } from "../helpers/poll.ts";
import { rpc } from "../helpers/chain.ts";
import { M } from "../../src/http/messages.ts";
import { getEscrow, onChain } from "../../src/modules/escrow/escrow.service.ts";

const USDC = 1_000_000n;

type Escrow = Record<string, unknown> & { reference: string; status: string };

Deno.test("escrow API: transitions, refusals, events, races", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const receiver = startReceiver();
  const call = api(svc);
  const chain = svc.deps.chain;
  const profile = "production" as const;
  try {
    const a = await createMerchant(svc);
    const b = await createMerchant(svc);
    const auth = { authorization: `Bearer ${a.apiKey}` };
    const newWallet = async (key: string) => {
      const r = await call("POST", "/api/wallets", { headers: { "x-api-key": key }, body: {} });
      assert.equal(r.status, 201, r.text);
      return r.json.wallet as { id: string; address: string };
    };
    const depositor = await newWallet(a.apiKey);
    const beneficiary = await newWallet(a.apiKey);
    const bystander = await newWallet(a.apiKey);
    const foreign = await newWallet(b.apiKey);
    await chain.mintUsdc({
      profile,
      to: depositor.address as `0x${string}`,
      amount: 1_000n * USDC,
    });
    const txCount = async () =>
      Number((await svc.db.sql`select count(*)::int as n from chain_transactions`)[0].n);

    let n = 0;
    const post = (path: string, body: unknown, headers: Record<string, string> = auth) =>
      call("POST", path, { headers: { ...headers, "idempotency-key": `k${n++}` }, body });
    const create = async (over: Record<string, unknown> = {}) => {
      const r = await post("/api/escrow/create", {
        depositorWalletId: depositor.id,
        beneficiarySCA: beneficiary.address,
        amount: "10.50",
        expiresInSeconds: 3600,
        description: "Logo",
        webhookUrl: `${receiver.url}/hooks`,
        ...over,
      });
      assert.equal(r.status, 201, r.text);
      return r.json as Escrow & { escrow: Escrow };
    };
    /** The database's view equals the contract's. */
    const agrees = async (reference: string, status: string) => {
      const row = await getEscrow(svc.deps, { merchantId: a.id, profile: "production" }, reference);
      assert.equal(row.status, status);
      const c = await onChain(svc.deps, row);
      assert.equal(c.status, status);
      assert.equal(c.amount, row.amount);
      assert.equal(c.depositor, row.depositor);
      assert.equal(c.beneficiary, row.beneficiary);
      assert.equal(c.expiresAt, BigInt(row.expiresAt.getTime() / 1000));
      assert.equal(c.confirmed, row.confirmedAt !== null);
      assert.equal(c.disputedBy, row.disputedBy);
    };
    const hook = async (event: string, reference: string) => {
      const got = await waitFor(
        () =>
          receiver.received.map((r) => JSON.parse(r.body)).find((b) =>
            b.event === event && b.reference === reference
          ),
        { what: `${event} for ${reference}` },
      );
      return got as Record<string, unknown>;
    };
    const explorer = (hash: string) => chain.explorerTxUrl(profile, hash);

    await t.step("create: 201, ACTIVE, funds held, escrow.created", async () => {
      const before = await chain.usdcBalance(profile, depositor.address as `0x${string}`);
      const r = await create();
      assert.match(r.reference, /^escrow_[0-9A-Za-z]+_[0-9A-Za-z]+$/);
      assert.equal(r.status, "ACTIVE");
      assert.equal(r.amount, "10.500000");
      assert.equal(r.currency, "USDC");
      assert.equal(r.depositor, depositor.address);
      assert.equal(r.beneficiary, beneficiary.address);
      assert.equal(r.explorerUrl, explorer(r.txHash as string));
      assert.equal(
        await chain.usdcBalance(profile, depositor.address as `0x${string}`),
        before - 10_500_000n,
      );
      await agrees(r.reference, "ACTIVE");
      assert.deepEqual(await hook("escrow.created", r.reference), {
        event: "escrow.created",
        reference: r.reference,
        amount: 10.5,
        currency: "USDC",
        txHash: r.txHash,
      });
      const one = await call("GET", `/api/escrow?reference=${r.reference}`, { headers: auth });
      assert.equal(one.status, 200);
      assert.equal((one.json.escrow as Escrow).status, "ACTIVE");
    });

    await t.step(
      "a retry under another of the merchant's keys (same Idempotency-Key) finds the first escrow",
      async () => {
        const newKey = async () => {
          const r = await call("POST", "/api/keys", {
            cookie: a.cookie,
            body: { type: "secret", environment: "live" },
          });
          assert.equal(r.status, 201, r.text);
          return { authorization: `Bearer ${(r.json.key as { key: string }).key}` };
        };
        const other = await newKey();
        const third = await newKey();
        const body = {
          depositorWalletId: depositor.id,
          beneficiarySCA: beneficiary.address,
          amount: "1.25",
          expiresInSeconds: 3600,
        };
        const key = { "idempotency-key": `retry-${crypto.randomUUID()}` };
        const before = await chain.usdcBalance(profile, depositor.address as `0x${string}`);
        const first = await call("POST", "/api/escrow/create", {
          headers: { ...auth, ...key },
          body,
        });
        assert.equal(first.status, 201, first.text);
        // The client's first answer was lost and a key rotation happened meanwhile.
        const retry = await call("POST", "/api/escrow/create", {
          headers: { ...other, ...key },
          body,
        });
        assert.equal(retry.status, 201, retry.text);
        assert.equal(retry.json.reference, first.json.reference);
        assert.equal(retry.json.txHash, first.json.txHash);
        // Another request under the same Idempotency-Key, under either kind of key: refused,
        // nothing locked (the merchant key's records and the secret keys' each hold the key).
        for (const headers of [third, auth]) {
          const changed = await call("POST", "/api/escrow/create", {
            headers: { ...headers, ...key },
            body: { ...body, amount: "1.5" },
          });
          assert.equal(changed.status, 400, changed.text);
        }
        assert.equal(
          await chain.usdcBalance(profile, depositor.address as `0x${string}`),
          before - 1_250_000n,
          "funded once",
        );
      },
    );

    await t.step("create refusals: foreign depositor 403, balance 400; nothing sent", async () => {
      const sent = await txCount();
      const foreignDep = await post("/api/escrow/create", {
        depositorSCA: foreign.address,
        beneficiarySCA: beneficiary.address,
        amount: "1",
        expiresInSeconds: 3600,
      });
      assert.equal(foreignDep.status, 403, foreignDep.text);
      assert.equal(foreignDep.json.error, M.escrowDepositorNotControlled);
      const poor = await post("/api/escrow/create", {
        depositorWalletId: bystander.id,
        beneficiarySCA: beneficiary.address,
        amount: "1",
        expiresInSeconds: 3600,
      });
      assert.equal(poor.status, 400, poor.text);
      assert.equal(poor.json.error, M.escrowInsufficient);
      assert.equal(poor.json.balance, "0.000000");
      const both = await post("/api/escrow/create", {
        depositorWalletId: depositor.id,
        beneficiarySCA: beneficiary.address,
        amount: "1",
      });
      assert.equal(both.status, 400);
      assert.equal(both.json.error, M.escrowExpiry);
      // The vault itself as beneficiary: 400 before anything is sent (was 502 InvalidParties()).
      const vault = await post("/api/escrow/create", {
        depositorWalletId: depositor.id,
        beneficiarySCA: svc.deps.chain.runtime("production").contracts.EscrowVault,
        amount: "1",
        expiresInSeconds: 3600,
      });
      assert.deepEqual([vault.status, vault.json.error], [400, M.escrowBeneficiaryContract]);
      assert.equal(await txCount(), sent);
    });

    await t.step("confirm: beneficiary only; stays ACTIVE; not twice", async () => {
      const e = await create();
      const sent = await txCount();
      const wrong = await post("/api/escrow/confirm", {
        reference: e.reference,
        callerSCA: depositor.address,
      });
      assert.equal(wrong.status, 403);
      assert.equal(wrong.json.error, M.escrowNotBeneficiary);
      assert.equal(await txCount(), sent);
      const ok = await post("/api/escrow/confirm", {
        reference: e.reference,
        callerSCA: beneficiary.address,
      });
      assert.equal(ok.status, 200, ok.text);
      assert.equal((ok.json.escrow as Escrow).status, "ACTIVE");
      assert.equal((ok.json.escrow as Escrow).confirmed, true);
      await agrees(e.reference, "ACTIVE");
      const again = await post("/api/escrow/confirm", {
        reference: e.reference,
        callerSCA: beneficiary.address,
      });
      assert.equal(again.status, 400);
      assert.equal(again.json.error, M.escrowAlreadyConfirmed);
    });

    await t.step(
      "release: depositor only; RELEASED; escrow.released; then no dispute",
      async () => {
        const e = await create();
        const wrong = await post("/api/escrow/release", {
          reference: e.reference,
          callerSCA: beneficiary.address,
        });
        assert.equal(wrong.status, 403);
        assert.equal(wrong.json.error, M.escrowNotDepositor);
        const before = await chain.usdcBalance(profile, beneficiary.address as `0x${string}`);
        const r = await post("/api/escrow/release", {
          reference: e.reference,
          callerSCA: depositor.address,
        });
        assert.equal(r.status, 200, r.text);
        assert.equal(r.json.message, M.escrowReleased);
        const released = r.json.escrow as Escrow;
        assert.equal(released.status, "RELEASED");
        assert.equal(released.releaseTxHash, r.json.txHash);
        assert.equal(
          await chain.usdcBalance(profile, beneficiary.address as `0x${string}`),
          before + 10_500_000n,
        );
        await agrees(e.reference, "RELEASED");
        assert.deepEqual(await hook("escrow.released", e.reference), {
          event: "escrow.released",
          reference: e.reference,
          amount: 10.5,
          currency: "USDC",
          releaseTxHash: r.json.txHash,
        });
        const sent = await txCount();
        const d = await post("/api/escrow/dispute", {
          reference: e.reference,
          callerSCA: depositor.address,
          reason: "late",
        });
        assert.equal(d.status, 400);
        assert.equal(d.json.error, "Escrow is RELEASED — cannot dispute.");
        const again = await post("/api/escrow/release", {
          reference: e.reference,
          callerSCA: depositor.address,
        });
        assert.equal(again.status, 400);
        assert.equal(again.json.error, "Escrow is RELEASED — cannot release.");
        assert.equal(await txCount(), sent);
      },
    );

    await t.step("dispute: the spec's answer; refusals; blocks release and confirm", async () => {
      const e = await create();
      const sent = await txCount();
      const stranger = await post("/api/escrow/dispute", {
        reference: e.reference,
        callerSCA: bystander.address,
        reason: "x",
      });
      assert.equal(stranger.status, 403);
      assert.equal(stranger.json.error, M.escrowNotParty);
      assert.equal(await txCount(), sent);

      const r = await post("/api/escrow/dispute", {
        reference: e.reference,
        callerSCA: beneficiary.address,
        reason: "",
      });
      assert.equal(r.status, 200, r.text);
      assert.match(r.headers.get("content-type")!, /application\/json/);
      const txHash = r.json.txHash as string;
      assert.deepEqual(r.json, {
        success: true,
        escrow: {
          reference: e.reference,
          status: "DISPUTED",
          disputeReason: "No reason provided",
          disputedBy: beneficiary.address,
          disputeTxHash: txHash,
        },
        txHash,
        explorerUrl: explorer(txHash),
        message: M.escrowDisputed,
      });
      await agrees(e.reference, "DISPUTED");
      const got = await hook("escrow.disputed", e.reference);
      const row = await getEscrow(
        svc.deps,
        { merchantId: a.id, profile: "production" },
        e.reference,
      );
      assert.deepEqual(got, {
        event: "escrow.disputed",
        reference: e.reference,
        amount: 10.5,
        currency: "USDC",
        disputedBy: beneficiary.address,
        reason: "No reason provided",
        txHash,
        disputedAt: row.disputedAt!.toISOString(),
        explorerUrl: explorer(txHash),
      });
      const twice = await post("/api/escrow/dispute", {
        reference: e.reference,
        callerSCA: depositor.address,
        reason: "me too",
      });
      assert.equal(twice.status, 400);
      assert.equal(twice.json.error, "Escrow is DISPUTED — cannot dispute.");
      const rel = await post("/api/escrow/release", {
        reference: e.reference,
        callerSCA: depositor.address,
      });
      assert.equal(rel.status, 400);
      assert.equal(rel.json.error, "Escrow is DISPUTED — cannot release.");
      const conf = await post("/api/escrow/confirm", {
        reference: e.reference,
        callerSCA: beneficiary.address,
      });
      assert.equal(conf.status, 400);
      assert.equal(conf.json.error, "Escrow is DISPUTED — cannot confirm.");
    });

    await t.step("dispute without a reason field: recorded as `No reason provided`", async () => {
      const e = await create();
      const r = await post("/api/escrow/dispute", {
        reference: e.reference,
        callerSCA: depositor.address,
      });
      assert.equal(r.status, 200, r.text);
      assert.match(r.headers.get("content-type")!, /application\/json/);
      const escrow = r.json.escrow as Escrow;
      assert.equal(escrow.status, "DISPUTED");
      assert.equal(escrow.disputeReason, "No reason provided");
      assert.equal(escrow.disputedBy, depositor.address);
      await agrees(e.reference, "DISPUTED");
      const c = await onChain(
        svc.deps,
        await getEscrow(svc.deps, { merchantId: a.id, profile: "production" }, e.reference),
      );
      assert.equal(c.disputeReasonHash, chain.escrow.reasonHash("No reason provided"));
      const got = await hook("escrow.disputed", e.reference);
      assert.equal(got.reason, "No reason provided");
      const notText = await post("/api/escrow/dispute", {
        reference: e.reference,
        callerSCA: depositor.address,
        reason: 42,
      });
      assert.equal(notText.status, 400, "a reason that is not text is still refused");
      assert.equal(notText.json.error, M.escrowReason);
    });

    await t.step("a party wallet the merchant does not control: 403, nothing sent", async () => {
      const e = await create({ beneficiarySCA: foreign.address });
      const sent = await txCount();
      for (const path of ["/api/escrow/dispute", "/api/escrow/confirm"]) {
        const r = await post(path, {
          reference: e.reference,
          callerSCA: foreign.address,
          reason: "",
        });
        assert.equal(r.status, 403, r.text);
        assert.equal(r.json.error, M.escrowNotControlled);
      }
      // Another merchant cannot see or act on it at all.
      const other = await post("/api/escrow/release", {
        reference: e.reference,
        callerSCA: depositor.address,
      }, { authorization: `Bearer ${b.apiKey}` });
      assert.equal(other.status, 404);
      assert.equal(await txCount(), sent);
    });

    await t.step("refund: 400 before expiry; after (chain time and clock) REFUNDED", async () => {
      await catchUpClock(svc);
      const e = await create({ expiresInSeconds: 120 });
      const early = await post("/api/escrow/refund", { reference: e.reference });
      assert.equal(early.status, 400);
      assert.equal(early.json.error, M.escrowNotExpired);
      svc.clock.advance(121_000);
      await rpc(chain.runtime(profile).rpcUrl, "evm_increaseTime", [121]);
      await rpc(chain.runtime(profile).rpcUrl, "evm_mine", []);
      const before = await chain.usdcBalance(profile, depositor.address as `0x${string}`);
      const r = await post("/api/escrow/refund", { reference: e.reference });
      assert.equal(r.status, 200, r.text);
      assert.equal((r.json.escrow as Escrow).status, "REFUNDED");
      assert.equal(
        await chain.usdcBalance(profile, depositor.address as `0x${string}`),
        before + 10_500_000n,
      );
      await agrees(e.reference, "REFUNDED");
      assert.deepEqual(await hook("refund.completed", e.reference), {
        event: "refund.completed",
        reference: e.reference,
        amount: 10.5,
        txHash: r.json.txHash,
      });
      const again = await post("/api/escrow/refund", { reference: e.reference });
      assert.equal(again.status, 400);
      assert.equal(again.json.error, "Escrow is REFUNDED — cannot refund.");
    });

    await t.step("release and dispute at the same moment: exactly one wins", async () => {
      for (let i = 0; i < 3; i++) {
        const e = await create();
        const [rel, dis] = await Promise.all([
          post("/api/escrow/release", { reference: e.reference, callerSCA: depositor.address }),
          post("/api/escrow/dispute", {
            reference: e.reference,
            callerSCA: beneficiary.address,
            reason: "race",
          }),
        ]);
        const statuses = [rel.status, dis.status].sort();
        assert.deepEqual(statuses, [200, 400], `${rel.text} / ${dis.text}`);
        await agrees(e.reference, rel.status === 200 ? "RELEASED" : "DISPUTED");
      }
    });

    await t.step("GET /api/escrow: newest first, status filter, 404 for unknown", async () => {
      const all = await call("GET", "/api/escrow", { headers: { "x-api-key": a.apiKey } });
      assert.equal(all.status, 200);
      const list = all.json.escrows as Escrow[];
      assert.ok(list.length >= 8);
      const disputed = await call("GET", "/api/escrow?status=DISPUTED", { headers: auth });
      assert.ok((disputed.json.escrows as Escrow[]).every((e) => e.status === "DISPUTED"));
      const none = await call("GET", "/api/escrow?reference=escrow_nope", { headers: auth });
      assert.equal(none.status, 404);
      assert.equal(none.json.error, M.escrowNotFound);
      const theirs = await call("GET", "/api/escrow", { headers: { "x-api-key": b.apiKey } });
      assert.deepEqual(theirs.json.escrows, []);
    });
  } finally {
    await receiver.close();
    await svc.close();
  }
});
