/**
 * The operator credential and dispute resolution: `deno task operator:key` prints a key accepted
 * only by /api/escrow/resolve (merchant keys are 403 there; the operator key is refused
 * elsewhere), resolution both ways through the API and `deno task escrow:resolve`, with the
 * `dispute.resolved` payload and the database equal to the contract.
 */
import assert from "node:assert/strict";
import { startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { startReceiver } from "../helpers/receiver.ts";
import { waitFor } from "../helpers/poll.ts";
import { ANVIL_KEYS } from "../helpers/anvil.ts";
import { M } from "../../src/http/messages.ts";
import { getEscrow, onChain } from "../../src/modules/escrow/escrow.service.ts";

const USDC = 1_000_000n;

Deno.test("escrow operator: operator key, resolve via API and CLI", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const receiver = startReceiver();
  const call = api(svc);
  const chain = svc.deps.chain;
  const profile = "production" as const;
  const env: Record<string, string> = {
    DATABASE_URL: svc.db.url,
    JWT_SECRET: svc.deps.config.JWT_SECRET!,
    WALLET_MASTER_KEY: svc.deps.config.WALLET_MASTER_KEY!,
    DATA_DIR: Deno.makeTempDirSync(),
    APP_ENV: "test",
    LOG_LEVEL: "error",
  };
  for (const p of chain.profiles()) {
    const rt = chain.runtime(p);
    env[`${rt.profile.envPrefix}_RPC_URL`] = rt.rpcUrl;
    env[`${rt.profile.envPrefix}_OPERATOR_KEY`] = ANVIL_KEYS[0];
    env[`${rt.profile.envPrefix}_CONFIRMATIONS`] = "0";
  }
  const run = async (script: string, ...args: string[]) => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-all", `src/cli/${script}`, ...args],
      env,
      stdout: "piped",
      stderr: "piped",
    }).output();
    return {
      code: out.code,
      stdout: new TextDecoder().decode(out.stdout),
      stderr: new TextDecoder().decode(out.stderr),
    };
  };
  try {
    const a = await createMerchant(svc);
    const wallet = async () => {
      const r = await call("POST", "/api/wallets", {
        headers: { "x-api-key": a.apiKey },
        body: {},
      });
      return r.json.wallet as { id: string; address: string };
    };
    const depositor = await wallet();
    const beneficiary = await wallet();
    await chain.mintUsdc({ profile, to: depositor.address as `0x${string}`, amount: 100n * USDC });
    let n = 0;
    const post = (path: string, body: unknown, key: string) =>
      call("POST", path, {
        headers: { authorization: `Bearer ${key}`, "idempotency-key": `op${n++}` },
        body,
      });
    const disputed = async () => {
      const c = await post("/api/escrow/create", {
        depositorWalletId: depositor.id,
        beneficiarySCA: beneficiary.address,
        amount: "5",
        expiresInSeconds: 600,
        webhookUrl: `${receiver.url}/h`,
      }, a.apiKey);
      assert.equal(c.status, 201, c.text);
      const reference = c.json.reference as string;
      const d = await post("/api/escrow/dispute", {
        reference,
        callerSCA: depositor.address,
        reason: "wrong colour",
      }, a.apiKey);
      assert.equal(d.status, 200, d.text);
      return reference;
    };
    const hook = async (reference: string) =>
      await waitFor(
        () =>
          receiver.received.map((r) => JSON.parse(r.body)).find((b) =>
            b.event === "dispute.resolved" && b.reference === reference
          ),
        { what: `dispute.resolved for ${reference}` },
      );
    const agrees = async (reference: string, status: string) => {
      const row = await getEscrow(svc.deps, { merchantId: a.id, profile: "production" }, reference);
      assert.equal(row.status, status);
      assert.equal((await onChain(svc.deps, row)).status, status);
    };

    let operatorKey = "";
    await t.step("operator:key prints the key alone on its last line", async () => {
      const out = await run("operator-key.ts", "ops", "team");
      assert.equal(out.code, 0, out.stderr);
      const lines = out.stdout.trim().split("\n");
      operatorKey = lines[lines.length - 1];
      assert.match(operatorKey, /^svc_op_[0-9a-f]{48}$/);
      assert.match(out.stdout, /\(ops team\)/);
      // --help says how, and issues nothing (it issued a key labelled "--help"); another flag
      // is refused.
      const keys = async () =>
        (await svc.db.sql`select count(*)::int as n from operator_keys`)[0].n;
      const before = await keys();
      const help = await run("operator-key.ts", "--help");
      assert.equal(help.code, 0, help.stderr);
      assert.match(help.stdout, /^usage: deno task operator:key \[label\]/);
      assert.doesNotMatch(help.stdout, /svc_op_/);
      const flag = await run("operator-key.ts", "--label", "x");
      assert.equal(flag.code, 2);
      assert.match(flag.stderr, /Unknown option --label/);
      assert.equal(await keys(), before);
    });

    await t.step("every command refuses a flag it does not take, and --help says how", async () => {
      // A mistyped flag was ignored: `faucet … --netwrok testnet` paid on the default chain.
      const refused: [string, string[], RegExp][] = [
        [
          "faucet.ts",
          ["0x000000000000000000000000000000000000dEaD", "1", "--netwrok", "testnet"],
          /^Unknown option --netwrok\./,
        ],
        ["contracts-deploy.ts", ["--network", "testnet", "--forse"], /^Unknown option --forse\./],
        ["escrow-resolve.ts", ["x", "released", "--now"], /^Unknown option --now\./],
        ["webhooks-replay.ts", ["--undelivered", "--sinse", "2026-01-01"], /--sinse/],
        ["chain-accept-reset.ts", ["testnet", "--yes"], /^Unknown option --yes\./],
        ["chain-status.ts", ["--json"], /^Unknown option --json\./],
        ["doctor.ts", ["--verbose"], /^Unknown option --verbose\./],
        [
          "faucet.ts",
          ["0x000000000000000000000000000000000000dEaD", "1", "2"],
          /^usage: deno task faucet/,
        ],
        ["chain-status.ts", ["testnet"], /^usage: deno task chain:status/],
      ];
      for (const [script, args, text] of refused) {
        const out = await run(script, ...args);
        assert.equal(out.code, 2, `${script} ${args.join(" ")}: ${out.stderr}`);
        assert.match(out.stderr, text, script);
        assert.match(out.stderr, /usage: deno task /, script);
      }
      for (const script of ["faucet.ts", "contracts-deploy.ts", "doctor.ts", "chain-status.ts"]) {
        const help = await run(script, "--help");
        assert.equal(help.code, 0, help.stderr);
        assert.match(help.stdout, /^usage: deno task /, script);
      }
    });

    await t.step("merchant keys are 403 on resolve; the operator key elsewhere too", async () => {
      const reference = await disputed();
      const merchant = await post(
        "/api/escrow/resolve",
        { reference, outcome: "released" },
        a.apiKey,
      );
      assert.equal(merchant.status, 403);
      assert.equal(merchant.json.error, M.insufficientPermissions);
      for (
        const [method, path] of [
          ["GET", "/api/escrow"],
          ["GET", "/api/wallets"],
          ["GET", "/api/payments"],
        ]
      ) {
        const r = await call(method, path, { headers: { authorization: `Bearer ${operatorKey}` } });
        assert.equal(r.status, 403, `${path}: ${r.text}`);
      }
      const dispute = await post("/api/escrow/dispute", {
        reference,
        callerSCA: depositor.address,
        reason: "",
      }, operatorKey);
      assert.equal(dispute.status, 403);
      const bogus = await post(
        "/api/escrow/resolve",
        { reference, outcome: "released" },
        `svc_op_${"0".repeat(48)}`,
      );
      assert.equal(bogus.status, 401);
      await agrees(reference, "DISPUTED");
    });

    await t.step("resolve released: paid to the beneficiary; dispute.resolved", async () => {
      const reference = await disputed();
      const before = await chain.usdcBalance(profile, beneficiary.address as `0x${string}`);
      const r = await post("/api/escrow/resolve", { reference, outcome: "released" }, operatorKey);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.message, M.escrowResolvedReleased);
      const e = r.json.escrow as Record<string, unknown>;
      assert.equal(e.status, "RELEASED");
      assert.equal(e.resolution, "released");
      assert.equal(
        await chain.usdcBalance(profile, beneficiary.address as `0x${string}`),
        before + 5n * USDC,
      );
      await agrees(reference, "RELEASED");
      assert.deepEqual(await hook(reference), {
        event: "dispute.resolved",
        reference,
        outcome: "released",
        resolveTxHash: r.json.txHash,
      });
      const again = await post(
        "/api/escrow/resolve",
        { reference, outcome: "refunded" },
        operatorKey,
      );
      assert.equal(again.status, 400);
      assert.equal(again.json.error, "Escrow is RELEASED — cannot resolve.");
    });

    await t.step("resolve on an ACTIVE escrow is 400; bad outcome 400", async () => {
      const c = await post("/api/escrow/create", {
        depositorWalletId: depositor.id,
        beneficiarySCA: beneficiary.address,
        amount: "1",
        expiresInSeconds: 600,
      }, a.apiKey);
      const reference = c.json.reference as string;
      const r = await post("/api/escrow/resolve", { reference, outcome: "refunded" }, operatorKey);
      assert.equal(r.status, 400);
      assert.equal(r.json.error, "Escrow is ACTIVE — cannot resolve.");
      const bad = await post("/api/escrow/resolve", { reference, outcome: "split" }, operatorKey);
      assert.equal(bad.status, 400);
      assert.equal(bad.json.error, M.escrowOutcome);
    });

    await t.step("deno task escrow:resolve refunds to the depositor", async () => {
      const reference = await disputed();
      const before = await chain.usdcBalance(profile, depositor.address as `0x${string}`);
      const out = await run("escrow-resolve.ts", reference, "refunded");
      assert.equal(out.code, 0, out.stderr);
      assert.match(out.stdout, /REFUNDED \(refunded\) 0x[0-9a-f]{64}/);
      // The command's environment names no PORT or BASE_URL: its link is the running service's.
      const hash = /0x[0-9a-f]{64}/.exec(out.stdout)![0];
      assert.ok(out.stdout.includes(`${svc.baseUrl}/explorer/`), out.stdout);
      assert.ok(out.stdout.includes(`/tx/${hash}\n`), out.stdout);
      assert.equal(
        await chain.usdcBalance(profile, depositor.address as `0x${string}`),
        before + 5n * USDC,
      );
      await agrees(reference, "REFUNDED");
      // Recorded with the state change by the command's own transaction; the service's
      // workers deliver it.
      const [delivery] = await svc.db.sql<{ payload: string }[]>`
        select payload from webhook_deliveries
        where reference = ${reference} and event = 'dispute.resolved'`;
      const row = await getEscrow(svc.deps, { merchantId: a.id, profile: "production" }, reference);
      assert.deepEqual(JSON.parse(delivery.payload), {
        event: "dispute.resolved",
        reference,
        outcome: "refunded",
        resolveTxHash: row.resolveTxHash,
      });
      const twice = await run("escrow-resolve.ts", reference, "released");
      assert.equal(twice.code, 1);
      assert.match(twice.stderr, /Escrow is REFUNDED — cannot resolve\./);
      const usage = await run("escrow-resolve.ts", reference);
      assert.equal(usage.code, 2);
    });
  } finally {
    await receiver.close();
    await svc.close();
  }
});
