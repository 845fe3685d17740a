/**
 * An outside payer that never holds gas takes its gateway balance back out, as it put it in
 * (x402-payer-deposit.test.ts): it signs a `Withdraw` (or, on a vault with a delay, first an
 * `InitiateWithdrawal`) under the vault's domain and POST /api/x402/payer/withdraw(/start)
 * relays it. What a paid call not yet settled needs stays (that settlement then goes through);
 * refusals send nothing; 50 copies of one signed withdrawal send one transaction; an ERC-1271
 * account withdraws with its owner's signature.
 */
import assert from "node:assert/strict";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { GatewayClient } from "@circle-fin/x402-batching/client";
import { startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import {
  externalBuyer,
  listApi,
  okUpstream,
  signedDeposit,
  signedWithdrawal,
  useDelayedVault,
  X402_PROFILE,
} from "../helpers/x402.ts";
import { highS } from "../helpers/signatures.ts";
import { stampede, succeeded } from "../helpers/stampede.ts";
import { M, MF } from "../../src/http/messages.ts";
import { settleRound } from "../../src/modules/x402/x402.batched.settle.ts";

const USDC = 1_000_000n;
const START = "/api/x402/payer/withdraw/start";
const WITHDRAW = "/api/x402/payer/withdraw";
const DELAY = 3600n;

Deno.test("x402 payer withdraw: a wallet with no gas takes its balance out", async (t) => {
  const svc = await startTestService({
    env: { RATE_LIMITS: "off", X402_BATCH_SECONDS: "3600" },
    crons: false,
  });
  const upstream = okUpstream();
  const chain = svc.deps.chain;
  const rt = chain.runtime(X402_PROFILE);
  const call = api(svc);
  const key = generatePrivateKey();
  const payer = privateKeyToAccount(key);
  const address = payer.address.toLowerCase() as `0x${string}`;
  const fresh = () => privateKeyToAccount(generatePrivateKey()).address;
  const usdcOf = (a: string) => chain.usdcBalance(X402_PROFILE, a.toLowerCase() as `0x${string}`);
  const balanceOf = (a: `0x${string}`) => chain.gateway.balance(X402_PROFILE, a);
  const relayed = async () => {
    const [r] = await svc.db.sql`
      select count(*)::int as n from chain_transactions
      where intent_key like ${`x402-payer-relay-withdraw%:${address}:%`}`;
    return r.n as number;
  };
  try {
    // 10 USDC in the wallet, 8 of them deposited through the relayer; then one paid call of 0.01
    // that is not settled yet (the batch interval is an hour).
    await chain.mintUsdc({ profile: X402_PROFILE, to: address, amount: 10n * USDC });
    const deposited = await call("POST", "/api/x402/payer/deposit", {
      body: await signedDeposit(svc, payer, { value: 8n * USDC }),
    });
    assert.equal(deposited.status, 200, deposited.text);
    const seller = await createMerchant(svc);
    const resource = await listApi(svc, seller, {
      slug: "withdraw-after",
      upstreamUrl: `http://127.0.0.1:${upstream.addr.port}/`,
    });
    const circle = new GatewayClient({
      chain: "arcTestnet",
      privateKey: key,
      rpcUrl: `${svc.baseUrl}/rpc/testnet`,
    });
    assert.equal((await circle.pay(resource)).status, 200);
    const can = 8n * USDC - 10_000n; // what no paid call needs

    await t.step("refused before anything is sent", async () => {
      const now = BigInt(Math.floor(svc.clock.now().getTime() / 1000));
      const to = fresh();
      const sign = (terms: Parameters<typeof signedWithdrawal>[2]) =>
        signedWithdrawal(svc, payer, { to, ...terms });
      const good = await sign({ value: 2n * USDC });
      const cases: [string, string, unknown, number, string][] = [
        [
          "a start on a vault with no delay",
          START,
          await signedWithdrawal(svc, payer, { value: 2n * USDC }),
          400,
          M.x402WithdrawNoDelay,
        ],
        [
          "more than a paid call not yet settled leaves (with what is withdrawable)",
          WITHDRAW,
          await sign({ value: 8n * USDC }),
          400,
          M.x402WithdrawExceeds,
        ],
        [
          "under 1 USDC, and not everything",
          WITHDRAW,
          await sign({ value: USDC - 1n }),
          400,
          M.x402RelayWithdrawMinimum,
        ],
        [
          "expiring before it can be mined",
          WITHDRAW,
          await sign({ value: 2n * USDC, validBefore: now + 30n }),
          400,
          M.x402RelayDeadline,
        ],
        [
          "signed by another key",
          WITHDRAW,
          {
            ...good,
            signature: (await signedWithdrawal(
              svc,
              privateKeyToAccount(generatePrivateKey()),
              { to, value: 2n * USDC, account: payer.address, nonce: good.authorization.nonce },
            )).signature,
          },
          400,
          M.x402RelayWithdrawSignature,
        ],
        [
          "the high-s twin of a good signature",
          WITHDRAW,
          { ...good, signature: highS(good.signature) },
          400,
          M.x402RelayWithdrawSignature,
        ],
        [
          "paid to another address than signed",
          WITHDRAW,
          { ...good, authorization: { ...good.authorization, to: fresh() } },
          400,
          M.x402RelayWithdrawSignature,
        ],
        [
          "another value than signed",
          WITHDRAW,
          { ...good, authorization: { ...good.authorization, value: "3000000" } },
          400,
          M.x402RelayWithdrawSignature,
        ],
        [
          "a NUL byte in the nonce",
          WITHDRAW,
          { ...good, authorization: { ...good.authorization, nonce: "0x\u0000" } },
          400,
          MF.textNotAllowed("authorization.nonce"),
        ],
        [
          "no signature",
          WITHDRAW,
          { authorization: good.authorization },
          400,
          M.x402RelayWithdrawBody,
        ],
        [
          "no recipient",
          WITHDRAW,
          {
            ...good,
            authorization: { ...good.authorization, to: undefined },
          },
          400,
          M.x402RelayWithdrawBody,
        ],
        [
          "to the zero address",
          WITHDRAW,
          { ...good, authorization: { ...good.authorization, to: `0x${"0".repeat(40)}` } },
          400,
          M.x402RelayWithdrawBody,
        ],
        [
          "nothing",
          WITHDRAW,
          { ...good, authorization: { ...good.authorization, value: "0" } },
          400,
          M.x402RelayWithdrawBody,
        ],
      ];
      for (const [what, path, body, status, error] of cases) {
        const r = await call("POST", path, { body });
        assert.equal(r.status, status, `${what}: ${r.text}`);
        assert.equal(r.json.error, error, what);
        if (error === M.x402WithdrawExceeds) {
          assert.equal(r.json.withdrawable, "7.990000", "8 deposited, 0.01 promised");
        }
      }
      assert.equal(await relayed(), 0, "nothing was sent");
      assert.equal((await balanceOf(address)).available, 8n * USDC);
    });

    const to = fresh();
    const out = await signedWithdrawal(svc, payer, { to, value: 3n * USDC });
    await t.step("50 copies at once: one transaction, every copy answers it", async () => {
      const r = await stampede(svc, { method: "POST", path: WITHDRAW, body: out });
      assert.deepEqual(r.byStatus, { 200: r.answers.length }, JSON.stringify(r.byStatus));
      const hashes = new Set(succeeded(r).map((a) => a.json.txHash));
      assert.equal(hashes.size, 1, [...hashes].join(", "));
      assert.equal(await relayed(), 1);
      const [first] = r.answers;
      assert.equal(first.json.amount, "3.000000");
      assert.equal(first.json.payer, payer.address);
      assert.equal(first.json.recipient, to);
      assert.equal(first.json.network, "eip155:5042002");
      assert.equal((first.json.gateway as { available: string }).available, "5.000000");
      assert.equal(await usdcOf(to), 3n * USDC);
      assert.equal(await rt.client.getBalance({ address }), 0n, "no gas: the relayer paid");

      // A replay holds nothing: it leaves the payer's hold as it finds it (a mark planted here,
      // which a hold would have replaced and then lifted).
      const planted = new Date("2100-01-01T00:00:00Z");
      const hold = async (until?: Date | null) =>
        (await svc.db.sql`
          update x402_gateway_accounts
          set withdrawing_until = coalesce(${until ?? null}::timestamptz, withdrawing_until)
          where chain_id = ${chain.chainId(X402_PROFILE)} and payer = ${address}
          returning withdrawing_until`)[0].withdrawingUntil;
      await hold(planted);
      const again = await call("POST", WITHDRAW, { body: out });
      assert.equal(again.status, 200, again.text);
      assert.equal(again.json.txHash, first.json.txHash);
      assert.deepEqual(await hold(), planted);
      await svc.db.sql`
        update x402_gateway_accounts set withdrawing_until = null
        where chain_id = ${chain.chainId(X402_PROFILE)} and payer = ${address}`;
      const sameNonce = await signedWithdrawal(svc, payer, {
        to,
        value: USDC,
        nonce: out.authorization.nonce,
      });
      const used = await call("POST", WITHDRAW, { body: sameNonce });
      assert.equal(used.status, 409, used.text);
      assert.equal(used.json.error, M.x402RelayUsed);
      assert.equal(await relayed(), 1);
    });

    await t.step(
      "everything the paid call leaves comes out, and that call still settles",
      async () => {
        const rest = can - 3n * USDC;
        const view = async () => {
          const r = await call("GET", `/api/x402/payer/balance?address=${payer.address}`);
          assert.equal(r.status, 200, r.text);
          return r.json as { gateway: { withdrawable: string }; withdrawal: unknown };
        };
        const shown = await view();
        assert.equal(shown.gateway.withdrawable, "5.000000", "the vault's, paid call included");
        assert.deepEqual(
          shown.withdrawal,
          { maxAmount: "4.990000", delaySeconds: 0, withdrawableAt: null },
          "what a withdrawal takes: the paid call not yet settled stays",
        );
        const all = await call("POST", WITHDRAW, {
          body: await signedWithdrawal(svc, payer, { to, value: rest }),
        });
        assert.equal(all.status, 200, all.text);
        assert.deepEqual(all.json.gateway, {
          total: "0.010000",
          available: "0.010000",
          withdrawing: "0.000000",
          withdrawable: "0.010000",
        });
        const round = await settleRound(svc.deps);
        assert.equal(round[0]?.settled, 1);
        assert.equal(round[0]?.size, 1, "one charge, settled: none failed");
        assert.equal((await balanceOf(address)).available, 0n);
        assert.equal(await usdcOf(to), can);
        assert.deepEqual((await view()).withdrawal, {
          maxAmount: "0.000000",
          delaySeconds: 0,
          withdrawableAt: null,
        });
      },
    );

    await t.step("an ERC-1271 account withdraws with its owner's signature", async () => {
      const owner = privateKeyToAccount(generatePrivateKey());
      const funder = await externalBuyer(svc, generatePrivateKey(), 2n * USDC);
      const account = await funder.deploy1271(owner.address);
      await funder.depositFor(account, 2n * USDC);
      const dest = fresh();
      const forged = await call("POST", WITHDRAW, {
        body: await signedWithdrawal(svc, payer, { account, to: dest, value: 2n * USDC }),
      });
      assert.equal(forged.status, 400, forged.text);
      assert.equal(forged.json.error, M.x402RelayWithdrawSignature);
      const r = await call("POST", WITHDRAW, {
        body: await signedWithdrawal(svc, owner, { account, to: dest, value: 2n * USDC }),
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(await usdcOf(dest), 2n * USDC);
      assert.equal((await balanceOf(account)).available, 0n);
    });

    await t.step("ten different signed withdrawals at once: never more than is there", async () => {
      await chain.mintUsdc({ profile: X402_PROFILE, to: address, amount: 5n * USDC });
      const funded = await call("POST", "/api/x402/payer/deposit", {
        body: await signedDeposit(svc, payer, { value: 5n * USDC }),
      });
      assert.equal(funded.status, 200, funded.text);
      const dest = fresh();
      const bodies = await Promise.all(
        Array.from(
          { length: 10 },
          () => signedWithdrawal(svc, payer, { to: dest, value: 1_500_000n }),
        ),
      );
      const answers = await Promise.all(bodies.map((body) => call("POST", WITHDRAW, { body })));
      const ok = answers.filter((r) => r.status === 200);
      const refused = answers.filter((r) => r.status === 400);
      assert.equal(ok.length, 3, answers.map((r) => r.text).join("\n"));
      assert.equal(refused.length, 7);
      for (const r of refused) {
        assert.equal(r.json.error, M.x402WithdrawExceeds);
        assert.equal(r.json.withdrawable, "0.500000");
      }
      assert.equal(await usdcOf(dest), 4_500_000n);
      assert.equal((await balanceOf(address)).available, 500_000n);
    });

    await t.step(
      "the node away when the mirror is read again: the answer stands, the mirror is unread",
      async () => {
        const again = await call("POST", "/api/x402/payer/deposit", {
          body: await signedDeposit(svc, payer, { value: 2n * USDC }),
        });
        assert.equal(again.status, 200, again.text);
        const gateway = chain.gateway;
        const availableAt = gateway.availableAt;
        gateway.availableAt = () => Promise.reject(new Error("the node is away"));
        try {
          const dest = fresh();
          const refused = await call("POST", WITHDRAW, {
            body: await signedWithdrawal(svc, payer, { to: dest, value: 3n * USDC }),
          });
          assert.equal(refused.status, 400, refused.text);
          assert.equal(refused.json.error, M.x402WithdrawExceeds);
          assert.equal(refused.json.withdrawable, "2.500000", "2 deposited, 0.5 left before");
          const paid = await call("POST", WITHDRAW, {
            body: await signedWithdrawal(svc, payer, { to: dest, value: 1_500_000n }),
          });
          assert.equal(paid.status, 200, paid.text);
          assert.equal(await usdcOf(dest), 1_500_000n);
        } finally {
          gateway.availableAt = availableAt;
        }
        const [mirror] = await svc.db.sql`
          select synced_at, withdrawing_until from x402_gateway_accounts
          where chain_id = ${chain.chainId(X402_PROFILE)} and payer = ${address}`;
        assert.equal(mirror.syncedAt.getTime(), 0, "never read: the next reservation reads first");
        assert.equal(mirror.withdrawingUntil, null, "paid calls are taken again");
      },
    );

    await t.step("a vault with a delay: start, wait, withdraw; never more than free", async () => {
      await useDelayedVault(svc, DELAY, [address], 5n * USDC);
      const tooMuch = await call("POST", START, {
        body: await signedWithdrawal(svc, payer, { value: 6n * USDC }),
      });
      assert.equal(tooMuch.status, 400, tooMuch.text);
      assert.equal(tooMuch.json.error, M.x402WithdrawStartExceeds);
      assert.equal(tooMuch.json.balance, "5.000000");

      const start = await signedWithdrawal(svc, payer, { value: 4_500_000n });
      const r = await stampede(svc, { method: "POST", path: START, body: start });
      assert.deepEqual(r.byStatus, { 200: r.answers.length }, JSON.stringify(r.byStatus));
      assert.equal(new Set(succeeded(r).map((a) => a.json.txHash)).size, 1);
      const [first] = r.answers;
      assert.deepEqual(first.json.gateway, {
        total: "5.000000",
        available: "0.500000",
        withdrawing: "4.500000",
        withdrawable: "0.000000",
      });
      const block = await rt.client.getBlock();
      assert.equal(
        Date.parse(first.json.withdrawableAt as string) / 1000,
        Number(block.timestamp + DELAY),
      );
      const view = await call("GET", `/api/x402/payer/balance?address=${payer.address}`);
      assert.deepEqual(view.json.withdrawal, {
        maxAmount: "0.000000",
        delaySeconds: Number(DELAY),
        withdrawableAt: first.json.withdrawableAt,
      });

      // What is left (0.5) starts only whole: under the minimum, and not everything, is refused.
      const part = await call("POST", START, {
        body: await signedWithdrawal(svc, payer, { value: 400_000n }),
      });
      assert.equal(part.status, 400, part.text);
      assert.equal(part.json.error, M.x402RelayWithdrawMinimum);
      const whole = await call("POST", START, {
        body: await signedWithdrawal(svc, payer, { value: 500_000n }),
      });
      assert.equal(whole.status, 200, whole.text);

      const dest = fresh();
      const early = await call("POST", WITHDRAW, {
        body: await signedWithdrawal(svc, payer, { to: dest, value: 5n * USDC }),
      });
      assert.equal(early.status, 400, early.text);
      assert.equal(early.json.error, M.x402WithdrawExceeds);
      assert.equal(early.json.withdrawable, "0.000000");

      await rt.client.request({
        method: "evm_increaseTime" as never,
        params: [Number(DELAY)] as never,
      });
      await rt.client.request({ method: "evm_mine" as never, params: [] as never });
      // Signed after the chain's clock moved on: valid for an hour from the service's clock.
      const late = await call("POST", WITHDRAW, {
        body: await signedWithdrawal(svc, payer, {
          to: dest,
          value: 5n * USDC,
          validBefore: (await rt.client.getBlock()).timestamp + 3600n,
        }),
      });
      assert.equal(late.status, 200, late.text);
      assert.equal(await usdcOf(dest), 5n * USDC);
      assert.equal((await balanceOf(address)).withdrawing, 0n);
      assert.equal(await rt.client.getBalance({ address }), 0n, "never any gas");
    });

    await t.step("a vault from before signed withdrawals: 409, nothing sent", async () => {
      // A contract without the vault's withdrawal functions stands in for an older vault.
      const current = rt.contracts.GatewayVault;
      rt.contracts.GatewayVault = rt.contracts.TestUSDC;
      try {
        const before = await relayed();
        const r = await call("POST", WITHDRAW, {
          body: await signedWithdrawal(svc, payer, { to: fresh(), value: USDC }),
        });
        assert.equal(r.status, 409, r.text);
        assert.equal(r.json.error, M.x402RelayUnsupported);
        assert.equal(await relayed(), before);
      } finally {
        rt.contracts.GatewayVault = current;
      }
    });
  } finally {
    await upstream.shutdown();
    await svc.close();
  }
});
