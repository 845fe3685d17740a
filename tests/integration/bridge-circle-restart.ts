/**
 * Steps of the Circle suite (bridge-circle.test.ts): a transfer through Circle's contracts
 * driven by worker processes SIGKILLed after the burn and after the attestation. A deployment
 * of its own (its own database, no in-process workers) on the same nodes; the workers ask the
 * first service's attester over HTTP, as CCTP_ATTESTATION_API_URL says.
 */
import assert from "node:assert/strict";
import { startTestService, type TestService } from "../helpers/service.ts";
import { api, cookieFrom } from "../helpers/accounts.ts";
import { waitFor } from "../helpers/poll.ts";
import { rpc } from "../helpers/chain.ts";
import type { CircleDeployment } from "../helpers/circle-cctp.ts";
import { circleArtifact } from "../helpers/circle-cctp.ts";

export async function restartSteps(
  t: Deno.TestContext,
  ctx: { A: CircleDeployment; B: CircleDeployment; env: Record<string, string>; svc: TestService },
) {
  await t.step("SIGKILL after the burn and after the attestation: minted once", async () => {
    const { A, B } = ctx;
    const { PORT: _port, BASE_URL: _base, ...env } = ctx.env;
    const svc = await startTestService({ workers: false, env });
    const call = api(svc);
    const workers: Deno.ChildProcess[] = [];
    try {
      const session = await call("POST", "/api/consumer/session", { body: {} });
      const cookie = cookieFrom(session.headers, "consumer_token")!;
      const wallet = (session.json.account as { walletAddress: `0x${string}` }).walletAddress;
      await svc.deps.chain.ensure("Base_Sepolia");
      await svc.deps.chain.faucet("Base_Sepolia", wallet, 20_000_000n);
      const worker = (extra: Record<string, string> = {}) => {
        const child = new Deno.Command(Deno.execPath(), {
          args: ["run", "--allow-all", "tests/fixtures/bridge-worker.ts"],
          env: {
            ...env,
            APP_ENV: "test",
            DATABASE_URL: svc.db.url,
            DATA_DIR: Deno.makeTempDirSync({ prefix: "bridge-circle-worker-" }),
            JWT_SECRET: "test-jwt-secret-0123456789abcdef0123456789",
            WALLET_MASTER_KEY: "11".repeat(32),
            BASE_URL: svc.baseUrl,
            LOG_LEVEL: "error",
            CHAIN_POLL_INTERVAL_MS: "50",
            ...extra,
          },
          stdout: "piped",
          stderr: "piped",
        }).spawn();
        workers.push(child);
        let out = "";
        for (const s of [child.stdout, child.stderr]) {
          s.pipeThrough(new TextDecoderStream()).pipeTo(
            new WritableStream({ write: (x) => void (out += x) }),
          ).catch(() => {});
        }
        return { child, output: () => out };
      };
      const kill = async (w: { child: Deno.ChildProcess }) => {
        w.child.kill("SIGKILL");
        await w.child.status;
      };
      const status = async (reference: string) =>
        (await call("GET", `/api/cctp/transfer/status?reference=${reference}`)).json;
      const recipient = "0x000000000000000000000000000000000000bEEF" as const;
      const r = await call("POST", "/api/cctp/transfer", {
        body: { fromChain: "Base_Sepolia", toChain: "Settle_Testnet", amount: "7", recipient },
        cookie,
      });
      assert.equal(r.status, 202, r.text);
      const reference = r.json.reference as string;
      assert.equal(r.json.maxFee, "0.000700", "1 bps of 7 USDC: the fee switch is on");

      const a = worker();
      await waitFor(async () => {
        const s = await status(reference);
        return s.status === "burned" && (s.attestation as { attempts: number }).attempts >= 1;
      }, { timeoutMs: 30_000, what: `the burn (worker output: ${a.output()})` });
      await kill(a);
      await rpc(B.rpcUrl, "evm_mine");
      const b = worker({ BRIDGE_HOLD_MINT: "1" });
      await waitFor(
        async () =>
          (await status(reference)).status === "attested" && b.output().includes("holding mint"),
        { timeoutMs: 30_000, what: `the attestation and the held mint (${b.output()})` },
      );
      await kill(b);
      const c = worker();
      const done = await waitFor(async () => {
        const s = await status(reference);
        return s.status === "minted" ? s : null;
      }, { timeoutMs: 30_000, what: `the mint (worker output: ${c.output()})` });
      c.child.kill("SIGTERM");
      await c.child.status;

      assert.deepEqual([done.fee, done.mintedAmount], ["0.000700", "6.999300"]);
      const usdc = circleArtifact("FiatTokenV2_1").abi;
      const got = await A.client.readContract({
        address: A.usdc,
        abi: usdc,
        functionName: "balanceOf",
        args: [recipient],
      }) as bigint;
      assert.equal(got, 6_999_300n, "minted once");
      const intents = await svc.db.sql`
        select intent_key, count(*)::int as n from chain_transactions
        where intent_key like ${`bridge:${reference}%`} group by intent_key order by intent_key`;
      assert.deepEqual(intents.map((i) => [i.intentKey, i.n]), [
        [`bridge:${reference}:approve`, 1],
        [`bridge:${reference}:burn`, 1],
        [`bridge:${reference}:mint`, 1],
      ]);
    } finally {
      for (const w of workers) {
        try {
          w.kill("SIGKILL");
        } catch { /* already gone */ }
        await w.status;
      }
      await svc.close();
    }
  });
}
