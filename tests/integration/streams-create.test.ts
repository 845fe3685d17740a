/**
 * Stream creates from one wallet, on a real anvil chain: 10 creates at once from a wallet that
 * holds enough for 4 lock exactly 4 deposits, the other 6 answer 400 with `balance` before
 * anything is signed, and no transaction from the wallet reverts (its nonce counts the approval
 * and the 4 creates); a create whose receipt timed out (blocks held back) still counts against
 * the balance a later create checks; and the request checks that refuse a create before anything
 * is sent (the zero address as receiver, sender = receiver, a deposit shorter than one second).
 */
import assert from "node:assert/strict";
import { startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { rpc } from "../helpers/chain.ts";
import { M } from "../../src/http/messages.ts";
import { checksum } from "../../src/chain/address.ts";

const USDC = 1_000_000n;
const P = "production";

async function open(env: Record<string, string> = {}) {
  const svc = await startTestService({ env: { RATE_LIMITS: "off", ...env } });
  const call = api(svc);
  const chain = svc.deps.chain;
  const sql = svc.db.sql;
  const rpcUrl = chain.runtime(P).rpcUrl;
  const m = await createMerchant(svc);
  const h = { "x-api-key": m.apiKey };
  const wallet = async (label: string) => {
    const r = await call("POST", "/api/wallets", { headers: h, body: { label } });
    assert.equal(r.status, 201, r.text);
    return (r.json.wallet as { address: string }).address.toLowerCase() as `0x${string}`;
  };
  const receiver = await wallet("Receiver");
  const vault = chain.contract(P, "StreamVault");
  const create = (
    sender: string,
    deposit: string,
    extra: { rate?: string; receiver?: string; key?: string } = {},
  ) =>
    call("POST", "/api/payments/stream", {
      headers: extra.key ? { ...h, "idempotency-key": extra.key } : h,
      body: {
        senderSCA: sender,
        receiverSCA: extra.receiver ?? receiver,
        ratePerSecond: extra.rate ?? "0.000001",
        totalDeposited: deposit,
      },
    });
  /** Every transaction the chain module recorded from `from`, by status. */
  const sent = async (from: string) =>
    await sql<{ intentKey: string; status: string }[]>`
      select intent_key, status from chain_transactions
      where chain_id = ${chain.chainId(P)} and from_address = ${from}
      order by nonce`;

  return { svc, call, chain, sql, rpcUrl, m, h, wallet, receiver, vault, create, sent };
}

Deno.test("streams: creates from one wallet take turns on its balance", async (t) => {
  const { svc, call, chain, sql, h, wallet, receiver, vault, create, sent } = await open();
  try {
    await t.step(
      "10 creates at once, funds for 4: 4 locked, 6 refused, none reverted",
      async () => {
        const sender = await wallet("Stampede");
        await chain.mintUsdc({ profile: P, to: sender, amount: 100n * USDC });
        const vaultBefore = await chain.usdcBalance(P, vault);
        const answers = await Promise.all(
          Array.from({ length: 10 }, () => create(sender, "25")),
        );
        const statuses = answers.map((a) => a.status).sort();
        assert.deepEqual(
          statuses,
          [200, 200, 200, 200, 400, 400, 400, 400, 400, 400],
          answers.map((a) => a.text).join("\n"),
        );
        for (const a of answers.filter((a) => a.status === 400)) {
          assert.equal(a.json.error, M.streamInsufficientBalance);
          // Refused only once the 4 had taken everything.
          assert.equal(a.json.balance, "0.000000");
        }
        const refs = answers.filter((a) => a.status === 200).map((a) => a.json.reference as string);
        assert.equal(new Set(refs).size, 4);
        for (const reference of refs) {
          const onChain = await chain.streams.get(P, reference);
          assert.equal(onChain.status, "Active", reference);
          assert.equal(onChain.deposit, 25n * USDC, reference);
        }
        assert.equal(await chain.usdcBalance(P, sender), 0n);
        assert.equal(await chain.usdcBalance(P, vault) - vaultBefore, 100n * USDC);
        // Nothing refused was signed: the approval and the 4 creates, all mined without a revert.
        const txs = await sent(sender);
        assert.deepEqual(
          txs.map((x) => x.status),
          ["confirmed", "confirmed", "confirmed", "confirmed", "confirmed"],
          JSON.stringify(txs),
        );
        assert.equal(txs.filter((x) => x.intentKey.startsWith("stream-create:")).length, 4);
        assert.equal(await chain.runtime(P).client.getTransactionCount({ address: sender }), 5);
        const creates = await sql<{ status: string; n: number }[]>`
        select status, count(*)::int as n from stream_creates where sender_sca = ${sender}
        group by status`;
        assert.deepEqual(creates.map((c) => [c.status, c.n]), [["DONE", 4]]);
        const [rows] = await sql<{ n: number }[]>`
        select count(*)::int as n from streams where sender_sca = ${sender} and status = 'ACTIVE'`;
        assert.equal(rows.n, 4);
      },
    );

    await t.step(
      "an escrow and streams at once from one wallet funded for one: one locked, none reverted",
      async () => {
        const sender = await wallet("Shared");
        await chain.mintUsdc({ profile: P, to: sender, amount: 10n * USDC });
        const escrow = () =>
          call("POST", "/api/escrow/create", {
            headers: h,
            body: {
              depositorSCA: sender,
              beneficiarySCA: receiver,
              amount: "10",
              expiresInSeconds: 3600,
            },
          });
        const answers = await Promise.all([
          escrow(),
          create(sender, "10"),
          create(sender, "10"),
          escrow(),
        ]);
        const won = answers.filter((a) => a.status === 200 || a.status === 201);
        assert.equal(won.length, 1, answers.map((a) => a.text).join("\n"));
        for (const a of answers.filter((a) => !won.includes(a))) {
          assert.equal(a.status, 400, a.text);
          assert.equal(a.json.balance, "0.000000");
        }
        assert.equal(await chain.usdcBalance(P, sender), 0n);
        for (const x of await sent(sender)) assert.equal(x.status, "confirmed", x.intentKey);
      },
    );

    await t.step(
      "refused before anything is sent: zero receiver, self, under a second",
      async () => {
        const sender = await wallet("Checks");
        await chain.mintUsdc({ profile: P, to: sender, amount: 10n * USDC });
        const zero = `0x${"0".repeat(40)}`;
        const refused = [
          // The vault would revert it (ZeroAddress) after an approval: a 502 before.
          [() => create(sender, "1", { receiver: zero }), M.streamReceiverZero],
          // The same wallet in another case is the same wallet.
          [() => create(sender, "1", { receiver: checksum(sender) }), M.streamSameParties],
          // 3 USDC at 5 per second would end in the block that starts it.
          [() => create(sender, "3", { rate: "5" }), M.streamTooShort],
          [() => create(sender, "4.999999", { rate: "5" }), M.streamTooShort],
          // The stream vault itself as receiver: nothing could ever withdraw what accrues.
          [
            () => create(sender, "1", { receiver: chain.runtime(P).contracts.StreamVault! }),
            M.streamReceiverContract,
          ],
        ] as const;
        for (const [send, text] of refused) {
          const r = await send();
          assert.equal(r.status, 400, r.text);
          assert.equal(r.json.error, text);
        }
        assert.equal((await sent(sender)).length, 0, "nothing signed for a refused create");
        const [intents] = await sql<{ n: number }[]>`
        select count(*)::int as n from stream_creates where sender_sca = ${sender}`;
        assert.equal(intents.n, 0);
        assert.equal(await chain.usdcBalance(P, sender), 10n * USDC);
        // One second's rate is the shortest stream.
        const shortest = await create(sender, "5", { rate: "5" });
        assert.equal(shortest.status, 200, shortest.text);
        assert.equal(shortest.json.estimatedDurationSeconds, 1);
      },
    );
  } finally {
    await svc.close();
  }
});

Deno.test("streams: a create whose receipt timed out counts against the next", async (t) => {
  // A short receipt bound: blocks are held back and the create waits this long for its 408. A
  // service of its own: nothing else of it mines a block meanwhile.
  const { svc, chain, rpcUrl, wallet, create, sent } = await open({
    CHAIN_RECEIPT_TIMEOUT_MS: "5000",
  });
  try {
    await t.step("a create still on its way counts against the next one's balance", async () => {
      const sender = await wallet("In flight");
      await chain.mintUsdc({ profile: P, to: sender, amount: 30n * USDC });
      // The first create approves the vault and gets the wallet its gas, blocks mined at once.
      const first = await create(sender, "10");
      assert.equal(first.status, 200, first.text);
      let next: Awaited<ReturnType<typeof create>>;
      await rpc(rpcUrl, "evm_setAutomine", [false]);
      try {
        // Broadcast, never mined within the receipt bound: 408, its intent left PENDING.
        const slow = await create(sender, "15", { key: "slow-create" });
        assert.equal(slow.status, 408, slow.text);
        assert.match(String(slow.json.txHash), /^0x[0-9a-f]{64}$/);
        // 20 on chain, 15 of it on its way: 5 left for this one.
        next = await create(sender, "10");
      } finally {
        await rpc(rpcUrl, "evm_setAutomine", [true]);
        await rpc(rpcUrl, "evm_mine", []);
      }
      assert.equal(next.status, 400, next.text);
      assert.equal(next.json.error, M.streamInsufficientBalance);
      assert.equal(next.json.balance, "5.000000");
      // The slow one mined: its retry answers with its stream, and the rest can still be locked.
      const retry = await create(sender, "15", { key: "slow-create" });
      assert.equal(retry.status, 200, retry.text);
      const rest = await create(sender, "5");
      assert.equal(rest.status, 200, rest.text);
      assert.equal(await chain.usdcBalance(P, sender), 0n);
      const txs = await sent(sender);
      assert.deepEqual(
        txs.map((x) => x.status),
        ["confirmed", "confirmed", "confirmed", "confirmed"],
        JSON.stringify(txs),
      );
      assert.equal(await chain.runtime(P).client.getTransactionCount({ address: sender }), 4);
    });
  } finally {
    await svc.close();
  }
});

Deno.test("streams: one Idempotency-Key names one stream per environment", async () => {
  const { svc, call, chain, m, wallet, receiver } = await open();
  try {
    const sender = await wallet("Both chains");
    await chain.mintUsdc({ profile: P, to: sender, amount: 5n * USDC });
    await chain.mintUsdc({ profile: "testnet", to: sender, amount: 5n * USDC });
    const k = await call("POST", "/api/keys", {
      cookie: m.cookie,
      body: { type: "secret", environment: "test" },
    });
    assert.equal(k.status, 201, k.text);
    const testKey = (k.json.key as { key: string }).key;
    const body = {
      senderSCA: sender,
      receiverSCA: receiver,
      ratePerSecond: "0.000001",
      totalDeposited: "2",
    };
    const key = { "idempotency-key": "same-key-both-environments" };
    // A test run first, then the same request live: each environment gets its own stream (the
    // live one answered 400 "already used with a different request").
    const test = await call("POST", "/api/payments/stream", {
      headers: { "x-api-key": testKey, ...key },
      body,
    });
    assert.equal(test.status, 200, test.text);
    const live = await call("POST", "/api/payments/stream", {
      headers: { "x-api-key": m.apiKey, ...key },
      body,
    });
    assert.equal(live.status, 200, live.text);
    assert.notEqual(live.json.reference, test.json.reference);
    assert.equal(await chain.usdcBalance(P, sender), 3n * USDC);
    assert.equal(await chain.usdcBalance("testnet", sender), 3n * USDC);
  } finally {
    await svc.close();
  }
});
