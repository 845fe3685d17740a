/**
 * Concurrent bridge transfers from one managed wallet (the audit's defect): each CCTP burn is an
 * exact `approve` then `depositForBurn`, so two burns of one wallet must not interleave (one's
 * approval replaced the other's: reverted burns, gas spent), and no more may be accepted than the
 * wallet's balance covers, less what its accepted transfers will still burn. Real PostgreSQL, the
 * testnet anvil and Base_Sepolia's; the attester needs no confirmation here, so transfers run to
 * the mint on their own.
 */
import assert from "node:assert/strict";
import { encodeFunctionData, getAddress } from "viem";
import { startTestService } from "../helpers/service.ts";
import { api, cookieFrom, createMerchant } from "../helpers/accounts.ts";
import { waitFor } from "../helpers/poll.ts";
import { TestUSDC } from "../../src/chain/contracts/artifacts/index.ts";
import { burnStep } from "../../src/modules/bridge/bridge.steps.ts";
import * as bridgeRepo from "../../src/modules/bridge/bridge.repo.ts";
import { M } from "../../src/http/messages.ts";

const SOURCE = "Base_Sepolia";
const RECIPIENT = getAddress("0x1111111111111111111111111111111111111111");
const USDC = 1_000_000n;

type Svc = Awaited<ReturnType<typeof startTestService>>;

Deno.test("bridge: concurrent transfers from one wallet never exceed it or revert", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const call = api(svc);
  const chain = svc.deps.chain;
  const status = async (reference: string) =>
    (await call("GET", `/api/cctp/transfer/status?reference=${reference}`)).json;
  /** Every transfer minted or failed (bounded), then its final status. */
  const settled = async (references: string[], timeoutMs = 60_000) =>
    await waitFor(async () => {
      const all = await Promise.all(references.map(status));
      return all.every((s) => s.status === "minted" || s.status === "failed") ? all : null;
    }, { timeoutMs, what: `${references.length} transfers to settle` });
  try {
    await chain.ensure(SOURCE);

    await t.step(
      "12 concurrent transfers of 1 USDC from a wallet holding 5: 5 accepted, all minted",
      async () => {
        const { cookie, wallet } = await consumer(svc);
        await chain.faucet(SOURCE, wallet, 5n * USDC);
        const supplyBefore = await totalSupply(svc, SOURCE);
        const recipientBefore = await chain.usdcBalance("testnet", RECIPIENT);
        const body = {
          fromChain: SOURCE,
          toChain: "Settle_Testnet",
          amount: "1",
          recipient: RECIPIENT,
        };
        const answers = await Promise.all(
          Array.from({ length: 12 }, () => call("POST", "/api/cctp/transfer", { body, cookie })),
        );
        const accepted = answers.filter((r) => r.status === 202);
        const refused = answers.filter((r) => r.status !== 202);
        assert.equal(accepted.length, 5, answers.map((r) => `${r.status} ${r.text}`).join("\n"));
        assert.equal(refused.length, 7);
        for (const r of refused) {
          assert.equal(r.status, 400, r.text);
          assert.match(String(r.headers.get("content-type")), /application\/json/);
          assert.deepEqual([r.json.success, r.json.error, r.json.balance], [
            false,
            M.bridgeBalance,
            "0.000000",
          ]);
        }
        const references = accepted.map((r) => r.json.reference as string);
        const done = await settled(references);
        assert.deepEqual(
          done.map((s) => [s.status, s.error]),
          references.map(() => ["minted", null]),
          "every accepted transfer minted",
        );
        await assertNothingReverted(svc, wallet, { approves: 5, burns: 5 });
        // The chains agree with the database.
        const rows = await svc.db.sql<{ burnAmount: bigint; mintedAmount: bigint }[]>`
          select burn_amount, minted_amount from bridge_transfers where sender = ${wallet}`;
        const burned = rows.reduce((a, r) => a + BigInt(r.burnAmount), 0n);
        const minted = rows.reduce((a, r) => a + BigInt(r.mintedAmount), 0n);
        assert.equal(burned, 5n * USDC);
        assert.equal(await chain.usdcBalance(SOURCE, wallet), 5n * USDC - burned);
        assert.equal(await totalSupply(svc, SOURCE), supplyBefore - burned, "burned there");
        assert.equal(
          await chain.usdcBalance("testnet", RECIPIENT),
          recipientBefore + minted,
          "minted here what the database says",
        );
      },
    );

    await t.step("5 concurrent x402 withdrawals to Base_Sepolia: every bridge minted", async () => {
      const seller = await createMerchant(svc, { businessName: "Concurrent seller" });
      const sellerAddr = seller.walletAddress!.toLowerCase() as `0x${string}`;
      const bearer = { authorization: `Bearer ${seller.apiKey}` };
      await chain.mintUsdc({ profile: "testnet", to: sellerAddr, amount: 560_000n });
      const dep = await call("POST", "/api/x402/gateway/deposit", {
        headers: bearer,
        body: { fromSCA: sellerAddr, amount: "0.56" },
      });
      assert.equal(dep.status, 200, dep.text);
      const dest = getAddress("0x00000000000000000000000000000000000c0c0c");
      const answers = await Promise.all(
        Array.from({ length: 5 }, () =>
          call("POST", "/api/x402/seller/balance/withdraw", {
            headers: bearer,
            body: { amount: "0.1", destinationChain: SOURCE, destinationAddress: dest },
          })),
      );
      for (const r of answers) {
        assert.equal(r.status, 200, r.text);
        assert.equal(r.json.status, "confirmed");
      }
      const references = answers.map((r) => (r.json.bridge as { reference: string }).reference);
      assert.equal(new Set(references).size, 5);
      const done = await settled(references);
      assert.deepEqual(
        done.map((s) => [s.status, s.error]),
        references.map(() => ["minted", null]),
        "every withdrawal's bridge minted",
      );
      await assertNothingReverted(svc, sellerAddr, { approves: 5, burns: 5, profile: "testnet" });
      assert.equal(await chain.usdcBalance("testnet", sellerAddr), 0n, "nothing left behind");
      const [{ minted }] = await svc.db.sql<{ minted: string }[]>`
        select sum(minted_amount)::text as minted from bridge_transfers
        where reference in ${svc.db.sql(references)}`;
      assert.equal(await chain.usdcBalance(SOURCE, dest), BigInt(minted));
      const gw = await chain.gateway.balance("testnet", sellerAddr);
      assert.equal(gw.available, 60_000n);
    });

    await t.step(
      "a retry with its Idempotency-Key whose answer was lost burns once; keys are per consumer",
      async () => {
        const a = await consumer(svc);
        const b = await consumer(svc);
        await chain.faucet(SOURCE, a.wallet, 3n * USDC);
        await chain.faucet(SOURCE, b.wallet, 3n * USDC);
        const body = {
          fromChain: SOURCE,
          toChain: "Settle_Testnet",
          amount: "1",
          recipient: RECIPIENT,
        };
        const post = (cookie: string, key: string, amount = "1") =>
          call("POST", "/api/cctp/transfer", {
            body: { ...body, amount },
            cookie,
            headers: { "idempotency-key": key },
          });
        const first = await post(a.cookie, "order-1");
        assert.equal(first.status, 202, first.text);
        const ref = first.json.reference as string;
        // Another consumer (same address: the test's) with the same key: its own transfer.
        const other = await post(b.cookie, "order-1");
        assert.equal(other.status, 202, other.text);
        assert.equal(other.headers.get("idempotent-replayed"), null);
        assert.notEqual(other.json.reference, ref);
        // As after a crash before the answer was stored: the key's record is gone, the request
        // runs again, before and after the first transfer burned and minted.
        await svc.db.sql`delete from idempotency_keys`;
        const again = await post(a.cookie, "order-1");
        assert.equal(again.status, 202, again.text);
        assert.equal(again.json.reference, ref, "the first transfer");
        await settled([ref, other.json.reference as string]);
        await svc.db.sql`delete from idempotency_keys`;
        const late = await post(a.cookie, "order-1");
        assert.equal(late.status, 202, late.text);
        assert.equal(late.json.reference, ref, "the first transfer, minted by now");
        // The same key for another request (its record expired): a transfer of its own.
        await svc.db.sql`delete from idempotency_keys`;
        const two = await post(a.cookie, "order-1", "2");
        assert.equal(two.status, 202, two.text);
        assert.notEqual(two.json.reference, ref);
        await settled([two.json.reference as string]);
        const rows = await svc.db.sql<{ sender: string; amount: bigint }[]>`
          select sender, amount from bridge_transfers where sender in (${a.wallet}, ${b.wallet})`;
        const line = (sender: string, amount: bigint) => `${sender} ${amount}`;
        assert.deepEqual(
          rows.map((r) => line(r.sender, BigInt(r.amount))).sort(),
          [line(a.wallet, USDC), line(a.wallet, 2n * USDC), line(b.wallet, USDC)].sort(),
          "three transfers: A's 1 and 2, B's 1",
        );
        assert.equal(await chain.usdcBalance(SOURCE, a.wallet), 0n, "3 burned: 1, then 2");
        assert.equal(await chain.usdcBalance(SOURCE, b.wallet), 2n * USDC, "B burned its own 1");
      },
    );

    await t.step(
      "a burn its wallet's balance no longer covers fails with nothing sent",
      async () => {
        const { wallet, walletId } = await consumer(svc);
        await chain.faucet(SOURCE, wallet, 1n * USDC);
        // Accepted earlier (as when the wallet was spent since): no burn job, the step is run here.
        const t1 = await pendingTransfer(svc, { wallet, walletId, amount: 2n * USDC });
        await burnStep(svc.deps, t1.reference);
        const row = await bridgeRepo.find(svc.db.sql, t1.reference);
        assert.equal(row?.status, "failed");
        assert.equal(
          row?.error,
          "the wallet's balance 1.000000 USDC cannot cover 2.000000: nothing was burned",
        );
        await assertNothingReverted(svc, wallet, { approves: 0, burns: 0 });
        assert.equal(await chain.usdcBalance(SOURCE, wallet), 1n * USDC);
      },
    );

    await t.step(
      "killed between approve and burn while another burn spent the approval: approved again",
      async () => {
        const { wallet, walletId } = await consumer(svc);
        await chain.faucet(SOURCE, wallet, 2n * USDC);
        const a = await pendingTransfer(svc, { wallet, walletId, amount: USDC });
        const b = await pendingTransfer(svc, { wallet, walletId, amount: USDC });
        // A's step approved, then its process died (its claim lapsed) before the burn.
        await chain.send({
          profile: SOURCE,
          from: { walletId },
          to: chain.contract(SOURCE, "TestUSDC"),
          data: approveData(svc, USDC),
          intentKey: `bridge:${a.reference}:approve`,
        });
        // B ran meanwhile: its approval replaced A's, and its burn spent it.
        await burnStep(svc.deps, b.reference);
        assert.equal((await bridgeRepo.find(svc.db.sql, b.reference))?.status, "burned");
        // A's retry finds its approval mined but spent: it approves again, under a new intent.
        await burnStep(svc.deps, a.reference);
        assert.equal((await bridgeRepo.find(svc.db.sql, a.reference))?.status, "burned");
        const keys = await svc.db.sql<{ intentKey: string }[]>`
          select intent_key from chain_transactions where intent_key like ${`bridge:${a.reference}:%`}
          order by intent_key`;
        assert.deepEqual(keys.map((k) => k.intentKey), [
          `bridge:${a.reference}:approve`,
          `bridge:${a.reference}:approve:2`,
          `bridge:${a.reference}:burn`,
        ]);
        // A second retry (another delivery of the job) sends nothing more.
        await burnStep(svc.deps, a.reference);
        await assertNothingReverted(svc, wallet, { approves: 3, burns: 2 });
        assert.equal(await chain.usdcBalance(SOURCE, wallet), 0n);
        const done = await settled([a.reference, b.reference]);
        assert.deepEqual(done.map((s) => s.status), ["minted", "minted"]);
      },
    );
  } finally {
    await svc.close();
  }
});

/** A new consumer with a service-created wallet: its cookie, address and wallet id. */
async function consumer(svc: Svc) {
  const session = await api(svc)("POST", "/api/consumer/session", { body: {} });
  assert.equal(session.status, 200, session.text);
  const account = session.json.account as { id: string; walletAddress: string };
  const [row] = await svc.db.sql<{ managedWalletId: string }[]>`
    select managed_wallet_id from consumers where id = ${account.id}`;
  return {
    cookie: cookieFrom(session.headers, "consumer_token")!,
    wallet: account.walletAddress.toLowerCase() as `0x${string}`,
    walletId: row.managedWalletId,
  };
}

/** A pending transfer recorded without its burn job (the test runs the step itself). */
async function pendingTransfer(
  svc: Svc,
  t: { wallet: `0x${string}`; walletId: string; amount: bigint },
) {
  const chain = svc.deps.chain;
  return await bridgeRepo.insert(svc.db.sql, {
    reference: `bridge_${crypto.randomUUID().replaceAll("-", "").slice(0, 24)}`,
    direction: "inbound",
    consumerId: null,
    walletId: t.walletId,
    fromChain: SOURCE,
    toChain: "Settle_Testnet",
    sourceDomain: chain.profileConfig(SOURCE).cctpDomain!,
    destinationDomain: chain.profileConfig("testnet").cctpDomain!,
    amount: t.amount,
    sender: t.wallet,
    recipient: RECIPIENT.toLowerCase(),
    paymentReference: null,
    transferSpeed: "standard",
    burnAmount: t.amount,
    maxFee: await chain.cctp.minFee(SOURCE, t.amount),
    now: svc.deps.clock.now(),
  });
}

/**
 * Every transaction the wallet sent on `profile` (default the source chain) is recorded
 * confirmed and mined successfully, exactly `approves` approvals and `burns` burns, and the
 * chain's nonce for the wallet counts no other.
 */
async function assertNothingReverted(
  svc: Svc,
  wallet: `0x${string}`,
  want: { approves: number; burns: number; profile?: "testnet" | typeof SOURCE },
) {
  const chain = svc.deps.chain;
  const profile = want.profile ?? SOURCE;
  const rows = await svc.db.sql<{ intentKey: string; status: string; txHash: string }[]>`
    select intent_key, status, tx_hash from chain_transactions
    where chain_id = ${chain.chainId(profile)} and from_address = ${wallet}
      and intent_key like 'bridge:%'`;
  assert.deepEqual(
    rows.filter((r) => r.status !== "confirmed").map((r) => [r.intentKey, r.status]),
    [],
    "no bridge transaction failed",
  );
  const approves = rows.filter((r) => /:approve(:\d+)?$/.test(r.intentKey));
  const burns = rows.filter((r) => r.intentKey.endsWith(":burn"));
  assert.deepEqual([approves.length, burns.length], [want.approves, want.burns]);
  const client = chain.runtime(profile).client;
  for (const r of rows) {
    const receipt = await client.getTransactionReceipt({ hash: r.txHash as `0x${string}` });
    assert.equal(receipt.status, "success", r.intentKey);
  }
  const [{ n }] = await svc.db.sql<{ n: number }[]>`
    select count(*)::int as n from chain_transactions
    where chain_id = ${chain.chainId(profile)} and from_address = ${wallet}`;
  assert.equal(await client.getTransactionCount({ address: wallet }), n, "no other transaction");
}

/** `approve(messenger, amount)` on the source chain's USDC. */
function approveData(svc: Svc, amount: bigint): `0x${string}` {
  return encodeFunctionData({
    abi: TestUSDC.abi,
    functionName: "approve",
    args: [svc.deps.chain.contract(SOURCE, "TokenMessengerV2"), amount],
  });
}

async function totalSupply(svc: Svc, profile: typeof SOURCE): Promise<bigint> {
  const chain = svc.deps.chain;
  return await chain.runtime(profile).client.readContract({
    address: chain.contract(profile, "TestUSDC"),
    abi: TestUSDC.abi,
    functionName: "totalSupply",
  });
}
