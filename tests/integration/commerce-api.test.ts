/**
 * ERC-8183 jobs through the API on a real anvil and PostgreSQL, across three merchants (client,
 * provider, evaluator): the full lifecycle, reject and refund after expiry (chain time moved),
 * every 403 text with its `{ error }` body, 404 `{ error: "Job not found" }`, a wrong-status
 * action refused 400 with nothing broadcast (issue 23: decided from the job's state before
 * sending, no longer the contract's 502), and the database equal to the contract after each step.
 */
import assert from "node:assert/strict";
import { keccak256, stringToHex } from "viem";
import { catchUpClock, startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { rpc } from "../helpers/chain.ts";
import { M } from "../../src/http/messages.ts";
import { getJob, onChain } from "../../src/modules/commerce/commerce.service.ts";

const USDC = 1_000_000n;
const ZERO32 = `0x${"0".repeat(64)}`;

Deno.test("jobs API: lifecycle, reject, refund, refusals, database = contract", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const call = api(svc);
  const chain = svc.deps.chain;
  const profile = "production" as const;
  try {
    const [a, b, c] = await Promise.all([
      createMerchant(svc),
      createMerchant(svc),
      createMerchant(svc),
    ]);
    const newWallet = async (key: string) => {
      const r = await call("POST", "/api/wallets", { headers: { "x-api-key": key }, body: {} });
      assert.equal(r.status, 201, r.text);
      return r.json.wallet as { id: string; address: `0x${string}` };
    };
    const client = await newWallet(a.apiKey);
    const provider = await newWallet(b.apiKey);
    const evaluator = await newWallet(c.apiKey);
    const stranger = await newWallet(b.apiKey);
    await chain.mintUsdc({ profile, to: client.address, amount: 1_000n * USDC });
    const balance = (w: { address: `0x${string}` }) => chain.usdcBalance(profile, w.address);
    // Transactions other than gas top-ups (a wallet's first action tops it up before estimating).
    const txCount = async () =>
      Number(
        (await svc.db.sql`select count(*)::int as n from chain_transactions
          where intent_key not like 'gas:%'`)[0].n,
      );

    const post = (path: string, key: string, body: unknown) =>
      call("POST", path, { headers: { "x-api-key": key }, body });
    const create = async (over: Record<string, unknown> = {}) => {
      const r = await post("/api/jobs/create", a.apiKey, {
        clientWalletId: client.id,
        provider: provider.address,
        evaluator: evaluator.address,
        budget: "25.50",
        expiresInSeconds: 3600,
        description: "Summarise a paper",
        ...over,
      });
      assert.equal(r.status, 201, r.text);
      return r.json as {
        jobId: string;
        status: string;
        txHash: string;
        job: Record<string, unknown>;
      };
    };
    /** The database's view equals the contract's. */
    const agrees = async (jobId: string, status: string) => {
      const row = await getJob(svc.deps, profile, jobId);
      assert.equal(row.status, status);
      const onchain = await onChain(svc.deps, row);
      assert.equal(onchain.status, status);
      assert.equal(onchain.client, row.client);
      assert.equal(onchain.provider, row.provider);
      assert.equal(onchain.evaluator, row.evaluator);
      assert.equal(onchain.budget, row.budget);
      assert.equal(onchain.expiredAt, BigInt(row.expiresAt.getTime() / 1000));
      assert.equal(onchain.deliverable, row.deliverableHash ?? ZERO32);
      assert.equal(onchain.reason, row.reasonHash ?? ZERO32);
      return row;
    };
    const bare = (r: { status: number; json: unknown }, status: number, error: string) => {
      assert.equal(r.status, status, JSON.stringify(r.json));
      assert.deepEqual(r.json, { error });
    };

    let jobId = "";

    await t.step("create: 201 OPEN with the budget set on chain", async () => {
      const r = await create();
      jobId = r.jobId;
      assert.match(jobId, /^[1-9][0-9]*$/);
      assert.equal(r.status, "OPEN");
      assert.equal(r.job.budget, "25.500000");
      assert.equal(r.job.client, client.address);
      assert.equal(r.job.provider, provider.address);
      assert.equal(r.job.evaluator, evaluator.address);
      await agrees(jobId, "OPEN");
    });

    await t.step("create refusals: a wallet you do not control 403, bad input 400", async () => {
      const sent = await txCount();
      bare(
        await post("/api/jobs/create", a.apiKey, {
          clientWalletId: provider.id,
          provider: provider.address,
          evaluator: evaluator.address,
          budget: "1",
          expiresInSeconds: 3600,
          description: "x",
        }),
        403,
        M.jobClientNotControlled,
      );
      const bad = await post("/api/jobs/create", a.apiKey, {
        clientWalletId: client.id,
        provider: "0x123",
        evaluator: evaluator.address,
        budget: "1",
        expiresInSeconds: 3600,
        description: "x",
      });
      assert.equal(bad.status, 400);
      assert.equal(bad.json.error, M.jobAddress);
      assert.equal(await txCount(), sent);
    });

    await t.step(
      "jobId: a string (the spec's); a number is told so, not called missing",
      async () => {
        const sent = await txCount();
        const cases: [unknown, string][] = [
          [Number(jobId), M.jobIdString],
          [undefined, M.jobId],
          ["abc", M.jobIdFormat],
          ["007", M.jobIdFormat],
        ];
        for (const [value, error] of cases) {
          const r = await post("/api/jobs/fund", a.apiKey, {
            jobId: value,
            clientWalletId: client.id,
          });
          assert.equal(r.status, 400, r.text);
          assert.equal(r.json.error, error, JSON.stringify(value));
        }
        const number = await post("/api/jobs/fund", a.apiKey, {
          jobId: Number(jobId),
          clientWalletId: client.id,
        });
        assert.doesNotMatch(number.json.error as string, /required/);
        assert.match(number.json.error as string, /must be a string/);
        assert.equal(await txCount(), sent);
        await agrees(jobId, "OPEN");
      },
    );

    await t.step("reads cross merchants; unknown 404 { error }; no credential 401", async () => {
      for (const key of [a.apiKey, b.apiKey, c.apiKey]) {
        const r = await call("GET", `/api/jobs/${jobId}`, { headers: { "x-api-key": key } });
        assert.equal(r.status, 200, r.text);
        assert.equal((r.json.job as { status: string }).status, "OPEN");
        assert.deepEqual((r.json.database as { deliverableHash: unknown }).deliverableHash, null);
      }
      const viaCookie = await call("GET", `/api/jobs/${jobId}`, {
        cookie: b.cookie,
      });
      assert.equal(viaCookie.status, 200, viaCookie.text);
      bare(
        await call("GET", "/api/jobs/999999", { headers: { "x-api-key": b.apiKey } }),
        404,
        M.jobNotFound,
      );
      bare(
        await call("GET", "/api/jobs/abc", { headers: { "x-api-key": b.apiKey } }),
        404,
        M.jobNotFound,
      );
      const none = await call("GET", `/api/jobs/${jobId}`);
      assert.equal(none.status, 401);
      assert.equal(none.json.error, M.jobsAuthRequired);
      // A publishable key (a browser page's, anyone's to read) reads no job: its description and
      // off-chain deliverable are the merchant's (an outside audit read them with one).
      const pub = await call("POST", "/api/keys", {
        cookie: b.cookie,
        body: { type: "publishable", environment: "live" },
      });
      assert.equal(pub.status, 201, pub.text);
      bare(
        await call("GET", `/api/jobs/${jobId}`, {
          headers: { "x-api-key": (pub.json.key as { key: string }).key },
        }),
        403,
        "Insufficient permissions",
      );
      bare(
        await post("/api/jobs/fund", a.apiKey, { jobId: "999999", clientWalletId: client.id }),
        404,
        M.jobNotFound,
      );
    });

    await t.step("every 403 text, checked before anything is sent", async () => {
      const sent = await txCount();
      // The id resolves to another address.
      bare(
        await post("/api/jobs/fund", b.apiKey, { jobId, clientWalletId: stranger.id }),
        403,
        M.jobClientMismatch,
      );
      bare(
        await post("/api/jobs/fund", a.apiKey, { jobId, clientWalletId: crypto.randomUUID() }),
        403,
        M.jobClientMismatch,
      );
      // The right wallet, but another merchant's.
      bare(
        await post("/api/jobs/fund", b.apiKey, { jobId, clientWalletId: client.id }),
        403,
        M.jobClientNotControlled,
      );
      const submit = { jobId, deliverableData: "ipfs://bafyresult" };
      bare(
        await post("/api/jobs/submit", b.apiKey, { ...submit, providerWalletId: stranger.id }),
        403,
        M.jobProviderMismatch,
      );
      bare(
        await post("/api/jobs/submit", a.apiKey, { ...submit, providerWalletId: provider.id }),
        403,
        M.jobProviderNotControlled,
      );
      bare(
        await post("/api/jobs/complete", c.apiKey, { jobId, evaluatorWalletId: client.id }),
        403,
        M.jobEvaluatorMismatch,
      );
      bare(
        await post("/api/jobs/complete", a.apiKey, { jobId, evaluatorWalletId: evaluator.id }),
        403,
        M.jobEvaluatorNotControlled,
      );
      bare(
        await post("/api/jobs/reject", b.apiKey, { jobId, evaluatorWalletId: evaluator.id }),
        403,
        M.jobEvaluatorNotControlled,
      );
      bare(
        await post("/api/jobs/refund", c.apiKey, { jobId, clientWalletId: client.id }),
        403,
        M.jobClientNotControlled,
      );
      assert.equal(await txCount(), sent);
      await agrees(jobId, "OPEN");
    });

    await t.step("a wrong status is refused before sending: 400, nothing broadcast", async () => {
      const sent = await txCount();
      const r = await post("/api/jobs/submit", b.apiKey, {
        jobId,
        providerWalletId: provider.id,
        deliverableData: "ipfs://bafyresult",
      });
      assert.equal(r.status, 400, r.text);
      assert.equal(r.json.success, false);
      assert.equal(r.json.error, M.jobWrongStatus);
      assert.match(r.json.hint as string, /OPEN.*submit/);
      // An OPEN job is rejected by its client only: the evaluator's reject is the state's refusal.
      const early = await post("/api/jobs/reject", c.apiKey, {
        jobId,
        evaluatorWalletId: evaluator.id,
      });
      assert.equal(early.status, 400, early.text);
      assert.equal(early.json.error, M.jobWrongStatus);
      assert.equal(await txCount(), sent);
      await agrees(jobId, "OPEN");
    });

    await t.step("fund: approval then escrow; FUNDED", async () => {
      const before = await balance(client);
      const r = await post("/api/jobs/fund", a.apiKey, { jobId, clientWalletId: client.id });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.status, "FUNDED");
      assert.match(r.json.approveTx as string, /^0x[0-9a-f]{64}$/);
      assert.match(r.json.fundTx as string, /^0x[0-9a-f]{64}$/);
      assert.notEqual(r.json.approveTx, r.json.fundTx);
      assert.equal(await balance(client), before - 25_500_000n);
      assert.equal(await chain.usdcBalance(profile, chain.jobs.address(profile)), 25_500_000n);
      await agrees(jobId, "FUNDED");
      const again = await post("/api/jobs/fund", a.apiKey, { jobId, clientWalletId: client.id });
      assert.equal(again.status, 400, again.text);
      assert.match(again.json.hint as string, /FUNDED/);
      assert.equal(await balance(client), before - 25_500_000n);
    });

    await t.step(
      "fund beyond the client's balance: 400 with the balance, no approval sent",
      async () => {
        const big = await create({ budget: "100000" });
        const sent = await txCount();
        const allowance = () =>
          chain.runtime(profile).client.readContract({
            address: chain.contract(profile, "TestUSDC"),
            abi: [{
              type: "function",
              name: "allowance",
              stateMutability: "view",
              inputs: [{ type: "address" }, { type: "address" }],
              outputs: [{ type: "uint256" }],
            }],
            functionName: "allowance",
            args: [client.address, chain.jobs.address(profile)],
          });
        const before = await allowance();
        const r = await post("/api/jobs/fund", a.apiKey, {
          jobId: big.jobId,
          clientWalletId: client.id,
        });
        assert.equal(r.status, 400, r.text);
        assert.equal(r.json.error, M.jobInsufficientBalance);
        assert.equal(r.json.balance, (Number(await balance(client)) / 1e6).toFixed(6));
        assert.equal(await txCount(), sent, "nothing was broadcast");
        assert.equal(await allowance(), before);
        await agrees(big.jobId, "OPEN");
      },
    );

    await t.step("three jobs funded at once from one wallet: all FUNDED", async () => {
      const jobs = await Promise.all(["3", "4", "5"].map((budget) => create({ budget })));
      const before = await balance(client);
      const rs = await Promise.all(
        jobs.map((j) =>
          post("/api/jobs/fund", a.apiKey, { jobId: j.jobId, clientWalletId: client.id })
        ),
      );
      for (const r of rs) assert.equal(r.status, 200, r.text);
      assert.equal(await balance(client), before - 12_000_000n);
      for (const j of jobs) await agrees(j.jobId, "FUNDED");
    });

    await t.step("submit: deliverable hash on chain and in database.deliverableHash", async () => {
      const badData = await post("/api/jobs/submit", b.apiKey, {
        jobId,
        providerWalletId: provider.id,
        deliverableData: "http://insecure.example/result",
      });
      assert.equal(badData.status, 400);
      assert.equal(badData.json.error, M.jobDeliverable);
      const data = "https://results.example/job/summary.pdf";
      const r = await post("/api/jobs/submit", b.apiKey, {
        jobId,
        providerWalletId: provider.id,
        deliverableData: data,
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.status, "SUBMITTED");
      assert.equal(r.json.deliverableHash, keccak256(stringToHex(data)));
      const got = await call("GET", `/api/jobs/${jobId}`, { headers: { "x-api-key": c.apiKey } });
      assert.equal(
        (got.json.database as { deliverableHash: string }).deliverableHash,
        r.json.deliverableHash,
      );
      assert.equal((got.json.job as { status: string }).status, "SUBMITTED");
      await agrees(jobId, "SUBMITTED");
    });

    await t.step("complete: the provider is paid in the same transaction; COMPLETED", async () => {
      const before = await balance(provider);
      const r = await post("/api/jobs/complete", c.apiKey, {
        jobId,
        evaluatorWalletId: evaluator.id,
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.status, "COMPLETED");
      assert.equal(r.json.reasonHash, keccak256(stringToHex("deliverable-approved")));
      assert.equal(await balance(provider), before + 25_500_000n);
      const row = await agrees(jobId, "COMPLETED");
      assert.equal(row.reason, "deliverable-approved");
      const again = await post("/api/jobs/complete", c.apiKey, {
        jobId,
        evaluatorWalletId: evaluator.id,
      });
      assert.equal(again.status, 400, again.text);
      assert.equal(again.json.error, M.jobWrongStatus);
      assert.match(again.json.hint as string, /COMPLETED/);
      await agrees(jobId, "COMPLETED");
    });

    await t.step("reject by the evaluator: the budget goes back to the client", async () => {
      const { jobId: id } = await create({ budget: "4" });
      const r0 = await post("/api/jobs/fund", a.apiKey, { jobId: id, clientWalletId: client.id });
      assert.equal(r0.status, 200, r0.text);
      const before = await balance(client);
      const r = await post("/api/jobs/reject", c.apiKey, {
        jobId: id,
        evaluatorWalletId: evaluator.id,
        reason: "off topic",
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.status, "REJECTED");
      assert.equal(await balance(client), before + 4n * USDC);
      const row = await agrees(id, "REJECTED");
      assert.equal(row.reason, "off topic");
    });

    await t.step(
      "refund: refused before expiry, the client's after (chain time moved)",
      async () => {
        await catchUpClock(svc);
        const { jobId: id } = await create({ budget: "3", expiresInSeconds: 120 });
        const r0 = await post("/api/jobs/fund", a.apiKey, { jobId: id, clientWalletId: client.id });
        assert.equal(r0.status, 200, r0.text);
        const early = await post("/api/jobs/refund", a.apiKey, {
          jobId: id,
          clientWalletId: client.id,
        });
        assert.equal(early.status, 502, early.text);
        assert.equal(early.json.error, M.jobNotExpired);
        await agrees(id, "FUNDED");
        const rpcUrl = chain.runtime(profile).rpcUrl;
        await rpc(rpcUrl, "evm_increaseTime", [180]);
        await rpc(rpcUrl, "evm_mine", []);
        const before = await balance(client);
        const r = await post("/api/jobs/refund", a.apiKey, {
          jobId: id,
          clientWalletId: client.id,
        });
        assert.equal(r.status, 200, r.text);
        assert.equal(r.json.status, "EXPIRED");
        assert.equal(await balance(client), before + 3n * USDC);
        await agrees(id, "EXPIRED");
      },
    );

    await t.step(
      "a retry with its Idempotency-Key released (after a 408) answers with the first transactions",
      async () => {
        const keyed = (path: string, key: string, idem: string, body: unknown) =>
          call("POST", path, { headers: { "x-api-key": key, "idempotency-key": idem }, body });
        const body = {
          clientWalletId: client.id,
          provider: provider.address,
          evaluator: evaluator.address,
          budget: "2",
          expiresInSeconds: 3600,
          description: "Retried job",
        };
        const first = await keyed("/api/jobs/create", a.apiKey, "job-retry-create", body);
        assert.equal(first.status, 201, first.text);
        const sent = await txCount();
        // As after a 408: the stored answer is gone and the same request comes again.
        await svc.db.sql`delete from idempotency_keys`;
        const again = await keyed("/api/jobs/create", a.apiKey, "job-retry-create", body);
        assert.equal(again.status, 201, again.text);
        assert.equal(again.json.jobId, first.json.jobId, "the same job");
        assert.equal(again.json.txHash, first.json.txHash);
        assert.equal(await txCount(), sent, "nothing sent again");
        const id = first.json.jobId as string;

        const before = await balance(client);
        const fundBody = { jobId: id, clientWalletId: client.id };
        const funded = await keyed("/api/jobs/fund", a.apiKey, "job-retry-fund", fundBody);
        assert.equal(funded.status, 200, funded.text);
        await svc.db.sql`delete from idempotency_keys`;
        const refunded = await keyed("/api/jobs/fund", a.apiKey, "job-retry-fund", fundBody);
        assert.equal(refunded.status, 200, refunded.text);
        assert.deepEqual(
          [refunded.json.approveTx, refunded.json.fundTx],
          [funded.json.approveTx, funded.json.fundTx],
        );
        assert.equal(await balance(client), before - 2n * USDC, "funded once");
        await agrees(id, "FUNDED");

        const submitBody = {
          jobId: id,
          providerWalletId: provider.id,
          deliverableData: "https://results.example/retried",
        };
        const submitted = await keyed("/api/jobs/submit", b.apiKey, "job-retry-submit", submitBody);
        assert.equal(submitted.status, 200, submitted.text);
        await svc.db.sql`delete from idempotency_keys`;
        const resubmitted = await keyed(
          "/api/jobs/submit",
          b.apiKey,
          "job-retry-submit",
          submitBody,
        );
        assert.equal(resubmitted.status, 200, resubmitted.text);
        assert.equal(resubmitted.json.txHash, submitted.json.txHash);
        // Without a key a repeat is a new request: the contract refuses it in the new status.
        const repeat = await post("/api/jobs/submit", b.apiKey, submitBody);
        assert.equal(repeat.status, 400, repeat.text);
        assert.match(repeat.json.hint as string, /SUBMITTED/);
        await agrees(id, "SUBMITTED");
      },
    );

    await t.step(
      "the chain wins: a transaction mined without its row changing is caught up on read",
      async () => {
        const { jobId: id } = await create({ budget: "1" });
        const r0 = await post("/api/jobs/fund", a.apiKey, { jobId: id, clientWalletId: client.id });
        assert.equal(r0.status, 200, r0.text);
        const row = await getJob(svc.deps, profile, id);
        // As if the process stopped after the submit was mined, before its row was changed.
        const data = "https://results.example/crashed";
        const tx = await chain.jobs.act(profile, {
          walletId: provider.id,
          action: "submit",
          jobId: BigInt(id),
          hash: keccak256(stringToHex(data)),
          intentKey: `job:${row.chainId}:${row.contractAddress}:${id}:submit:crash`,
        });
        assert.equal((await getJob(svc.deps, profile, id)).status, "FUNDED", "the row is behind");
        const got = await call("GET", `/api/jobs/${id}`, { headers: { "x-api-key": b.apiKey } });
        assert.equal(got.status, 200, got.text);
        const job = got.json.job as Record<string, unknown>;
        assert.equal(job.status, "SUBMITTED");
        assert.equal(job.submitTx, tx.txHash);
        assert.equal(job.deliverableHash, keccak256(stringToHex(data)));
        assert.equal((got.json.database as { status: string }).status, "SUBMITTED");
        await agrees(id, "SUBMITTED");

        // An evaluator acting on the contract directly (no transaction of ours): the status and
        // the reason's hash still arrive, through a refused action this time.
        await chain.jobs.act(profile, {
          walletId: evaluator.id,
          action: "complete",
          jobId: BigInt(id),
          hash: keccak256(stringToHex("direct")),
          intentKey: `direct-complete:${id}`,
        });
        const refused = await post("/api/jobs/submit", b.apiKey, {
          jobId: id,
          providerWalletId: provider.id,
          deliverableData: data,
        });
        assert.equal(refused.status, 400, refused.text);
        const done = await agrees(id, "COMPLETED");
        assert.equal(done.reasonHash, keccak256(stringToHex("direct")));
        assert.equal(done.completeTxHash, null, "not one of our job intents");
      },
    );
  } finally {
    await svc.close();
  }
});
