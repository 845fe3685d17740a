import assert from "node:assert/strict";
import {
  createPublicClient,
  decodeFunctionData,
  erc20Abi,
  type Hex,
  http,
  TransactionReceiptNotFoundError,
} from "viem";
import { createTestDatabase } from "../helpers/db.ts";
import { rpc, startTestChain } from "../helpers/chain.ts";
import { ChainRevertError, ChainTimeoutError } from "../../src/chain/errors.ts";
import { answerFor } from "../../src/http/error-map.ts";
import { waitFor } from "../helpers/poll.ts";
import { forwardRpc } from "../helpers/anvil.ts";
import { createLogger } from "../../src/log.ts";
import { recoverTransactions } from "../../src/chain/recovery.ts";

const USDC = 1_000_000n;

Deno.test("sender: transfers settle once per intent; reverts are 502, timeouts 408", async (t) => {
  const db = await createTestDatabase();
  const chain = await startTestChain(db.sql);
  try {
    const payer = await chain.createWallet("test");
    const payee = await chain.createWallet("test");
    await chain.mintUsdc({ profile: "testnet", to: payer.address, amount: 100n * USDC });

    await t.step(
      "a transfer is recorded before broadcast and confirmed with its receipt",
      async () => {
        const row = await chain.transferUsdc({
          profile: "testnet",
          from: { walletId: payer.id },
          to: payee.address,
          amount: 5n * USDC,
          intentKey: "test:transfer:1",
        });
        assert.equal(row.status, "confirmed");
        assert.match(row.txHash, /^0x[0-9a-f]{64}$/);
        assert.ok(row.blockNumber! > 0n);
        assert.equal(row.fromAddress, payer.address);
        assert.equal(await chain.usdcBalance("testnet", payee.address), 5n * USDC);
      },
    );

    await t.step(
      "its call data is written once, in its signed bytes, and read back from them",
      async () => {
        const [stored] = await db.sql<{ data: string | null; rawTx: string }[]>`
        select data, raw_tx from chain_transactions where intent_key = 'test:transfer:1'`;
        assert.equal(stored.data, null, "not stored beside the signed bytes");
        const row = await chain.intent("testnet", "test:transfer:1");
        const call = decodeFunctionData({ abi: erc20Abi, data: row!.data as `0x${string}` });
        assert.equal(call.functionName, "transfer");
        assert.deepEqual(call.args.map((a) => typeof a === "string" ? a.toLowerCase() : a), [
          payee.address.toLowerCase(),
          5n * USDC,
        ]);
        assert.ok(stored.rawTx.includes(row!.data.slice(2)), "the same bytes as the signed ones");
        // A row written before migration 0034 keeps its own.
        await db.sql`update chain_transactions set data = '0xfeed'
        where intent_key = 'test:transfer:1'`;
        assert.equal((await chain.intent("testnet", "test:transfer:1"))!.data, "0xfeed");
        await db
          .sql`update chain_transactions set data = null where intent_key = 'test:transfer:1'`;
      },
    );

    await t.step(
      "the same intent again returns the first transaction and moves nothing",
      async () => {
        const again = await chain.transferUsdc({
          profile: "testnet",
          from: { walletId: payer.id },
          to: payee.address,
          amount: 5n * USDC,
          intentKey: "test:transfer:1",
        });
        assert.equal(again.status, "confirmed");
        assert.equal(await chain.usdcBalance("testnet", payee.address), 5n * USDC);
        const [{ n }] = await db.sql`
        select count(*)::int as n from chain_transactions where intent_key = 'test:transfer:1'`;
        assert.equal(n, 1);
      },
    );

    await t.step("a transfer the contract refuses → 502 before anything is signed", async () => {
      const err = await chain.transferUsdc({
        profile: "testnet",
        from: { walletId: payer.id },
        to: payee.address,
        amount: 1_000n * USDC,
        intentKey: "test:transfer:too-much",
      }).then(() => null, (e) => e);
      assert.ok(err instanceof ChainRevertError, String(err));
      assert.equal(err.code, "chain_reverted");
      const answer = answerFor(err);
      assert.equal(answer.status, 502);
      assert.equal(answer.body.error, "The on-chain transaction was reverted by the contract.");
      assert.match(String(answer.body.hint), /ERC20InsufficientBalance/);
      const rows = await db
        .sql`select 1 from chain_transactions where intent_key = 'test:transfer:too-much'`;
      assert.equal(rows.length, 0);
    });

    await t.step("a transaction that reverts when mined → 502 with its hash", async () => {
      const err = await chain.send({
        profile: "testnet",
        from: { walletId: payer.id },
        to: chain.contract("testnet", "TestUSDC"),
        data: chain.encode({
          abi: (await import("../../src/chain/contracts/artifacts/index.ts")).TestUSDC.abi,
          functionName: "transfer",
          args: [payee.address, 1_000n * USDC],
        }),
        gas: 100_000n, // skip estimation so it is mined and reverts
        intentKey: "test:revert-mined",
      }).then(() => null, (e) => e);
      assert.ok(err instanceof ChainRevertError, String(err));
      const answer = answerFor(err);
      assert.equal(answer.status, 502);
      assert.match(String(answer.body.txHash), /^0x[0-9a-f]{64}$/);
      const [row] = await db
        .sql`select status from chain_transactions where intent_key = 'test:revert-mined'`;
      assert.equal(row.status, "reverted");
    });

    await t.step("no receipt within the bound → 408; recovery later records it", async () => {
      const rt = chain.runtime("testnet");
      await rpc(rt.rpcUrl, "evm_setAutomine", [false]);
      try {
        const err = await chain.transferUsdc({
          profile: "testnet",
          from: { walletId: payer.id },
          to: payee.address,
          amount: 1n * USDC,
          intentKey: "test:slow",
        }, { timeoutMs: 300 }).then(() => null, (e) => e);
        assert.ok(err instanceof ChainTimeoutError, String(err));
        assert.equal(answerFor(err).status, 408);
        const [row] = await db
          .sql`select status, tx_hash from chain_transactions where intent_key = 'test:slow'`;
        assert.equal(row.status, "broadcast");
        assert.equal(answerFor(err).body.txHash, row.txHash);
      } finally {
        await rpc(rt.rpcUrl, "evm_mine");
        await rpc(rt.rpcUrl, "evm_setAutomine", [true]);
      }
      const report = await chain.recover("testnet", { minAgeMs: 0 });
      assert.equal(report.confirmed, 1);
      const [row] = await db
        .sql`select status from chain_transactions where intent_key = 'test:slow'`;
      assert.equal(row.status, "confirmed");
      assert.equal(await chain.usdcBalance("testnet", payee.address), 6n * USDC);
    });

    await t.step("the wallet's key is stored sealed, never in the clear", async () => {
      const account = await chain.walletAccount(payer.id);
      const [w] = await db.sql`select * from wallets where id = ${payer.id}`;
      const stored = JSON.stringify(w, (_k, v) => typeof v === "bigint" ? v.toString() : v);
      assert.equal(account.address.toLowerCase(), payer.address);
      assert.ok(w.keyCiphertext.length > 0);
      assert.ok(!/[0-9a-f]{64}/.test(stored.replace(/"address":"[^"]*"/, "")));
    });
  } finally {
    await chain.stop();
    await db.drop();
  }
});

Deno.test("sender: a node that fails every other broadcast leaves no nonce gap", async () => {
  const db = await createTestDatabase();
  const chain = await startTestChain(db.sql);
  // A JSON-RPC proxy in front of anvil failing every other eth_sendRawTransaction (or its Sync
  // form, which a local node is sent): a single call with a 502, a call inside a batch request
  // with its own error answer.
  const rt = chain.runtime("testnet");
  let sends = 0;
  let refused = 0;
  const forward = async (body: unknown) =>
    await (await fetch(rt.rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    })).json();
  const proxy = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const body = await req.text();
    const parsed = JSON.parse(body);
    if (Array.isArray(parsed)) {
      const answers = [];
      for (const call of parsed) {
        if (call.method.startsWith("eth_sendRawTransaction") && sends++ % 2 === 0) {
          refused++;
          answers.push({ jsonrpc: "2.0", id: call.id, error: { code: -32603, message: "down" } });
        } else answers.push(await forward(call));
      }
      return Response.json(answers);
    }
    if (body.includes("eth_sendRawTransaction") && sends++ % 2 === 0) {
      refused++;
      return new Response("upstream down", { status: 502 });
    }
    return await forwardRpc(rt.rpcUrl, body);
  });
  const proxyUrl = `http://127.0.0.1:${proxy.addr.port}`;
  const direct = rt.client;
  rt.client = createPublicClient({
    chain: rt.viemChain,
    transport: http(proxyUrl, { retryCount: 0 }),
  });
  try {
    const payer = await chain.createWallet("test");
    const payee = await chain.createWallet("test");
    await chain.mintUsdc({ profile: "testnet", to: payer.address, amount: 100n * USDC });
    const rows = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        chain.transferUsdc({
          profile: "testnet",
          from: { walletId: payer.id },
          to: payee.address,
          amount: USDC,
          intentKey: `flaky:${i}`,
        })),
    );
    assert.ok(refused >= 5, `the proxy refused ${refused} broadcasts`);
    assert.ok(rows.every((r) => r.status === "confirmed"));
    const nonces = rows.map((r) => Number(r.nonce)).sort((a, b) => a - b);
    assert.deepEqual(nonces, Array.from({ length: 10 }, (_, i) => i));
    assert.equal(await direct.getTransactionCount({ address: payer.address }), 10);
    assert.equal(await chain.usdcBalance("testnet", payee.address), 10n * USDC);
  } finally {
    rt.client = direct;
    await proxy.shutdown();
    await chain.stop();
    await db.drop();
  }
});

Deno.test("sender: a local node that stopped mining on arrival still gets each intent once", async () => {
  // A local node is sent eth_sendRawTransactionSync, which answers once the transaction is mined;
  // with automining off it does not answer, and the sender goes on with a plain send (the same
  // bytes: "already known"), whose receipt comes when mining resumes.
  const db = await createTestDatabase();
  const chain = await startTestChain(db.sql);
  const rt = chain.runtime("testnet");
  try {
    const payer = await chain.createWallet("test");
    const payee = await chain.createWallet("test");
    await chain.mintUsdc({ profile: "testnet", to: payer.address, amount: 10n * USDC });
    // A first transfer while the node mines: the payer's gas top-up is behind us.
    await chain.transferUsdc({
      profile: "testnet",
      from: { walletId: payer.id },
      to: payee.address,
      amount: USDC,
      intentKey: "unmined:0",
    });
    await rpc(rt.rpcUrl, "evm_setAutomine", [false]);
    let sent: Promise<unknown>;
    try {
      sent = Promise.all([1, 2].map((i) =>
        chain.transferUsdc({
          profile: "testnet",
          from: { walletId: payer.id },
          to: payee.address,
          amount: USDC,
          intentKey: `unmined:${i}`,
        })
      ));
      sent.catch(() => {});
      await waitFor(async () => {
        const rows = await db.sql`select status from chain_transactions
          where intent_key in ('unmined:1', 'unmined:2') and status = 'broadcast'`;
        return rows.length === 2 || null;
      }, { what: "both transactions sent while the node does not mine", timeoutMs: 20_000 });
    } finally {
      await rpc(rt.rpcUrl, "evm_setAutomine", [true]);
    }
    await rpc(rt.rpcUrl, "evm_mine", []);
    const rows = await sent as { status: string; nonce: bigint }[];
    assert.deepEqual(rows.map((r) => r.status), ["confirmed", "confirmed"]);
    assert.deepEqual(rows.map((r) => Number(r.nonce)).sort(), [1, 2]);
    assert.equal(await rt.client.getTransactionCount({ address: payer.address }), 3);
    assert.equal(await chain.usdcBalance("testnet", payee.address), 3n * USDC);
    const [n] = await db.sql`select count(*)::int as n from chain_transactions
      where intent_key like 'unmined:%'`;
    assert.equal(n.n, 3, "one transaction per intent");
  } finally {
    await chain.stop();
    await db.drop();
  }
});

Deno.test("sender: a permanently refused transaction frees its nonce", async () => {
  const db = await createTestDatabase();
  const chain = await startTestChain(db.sql);
  try {
    const poor = await chain.createWallet("test");
    const payee = await chain.createWallet("test");
    await chain.mintUsdc({ profile: "testnet", to: poor.address, amount: 10n * USDC });
    // Spend all its gas money but a little, so a big explicit gas limit cannot be paid for.
    const err = await chain.send({
      profile: "testnet",
      from: { walletId: poor.id },
      to: payee.address,
      value: 10n ** 17n, // more than the one 0.1 ETH top-up it gets before signing leaves after gas
      gas: 21_000n,
      intentKey: "poor:too-much-eth",
    }).then(() => null, (e) => e);
    assert.ok(err, "the node refuses it");
    assert.equal(err.code, "chain_refused");
    assert.equal(answerFor(err).status, 502);
    const [row] = await db
      .sql`select status, nonce from chain_transactions where intent_key = 'poor:too-much-eth'`;
    assert.equal(row.status, "failed");
    // The next transaction takes the same nonce; nothing waits behind a hole.
    const ok = await chain.transferUsdc({
      profile: "testnet",
      from: { walletId: poor.id },
      to: payee.address,
      amount: USDC,
      intentKey: "poor:ok",
    });
    assert.equal(ok.nonce, row.nonce);
    assert.equal(ok.status, "confirmed");
  } finally {
    await chain.stop();
    await db.drop();
  }
});

Deno.test("sender: concurrent sends from one wallet in one process get distinct nonces", async () => {
  const db = await createTestDatabase();
  const chain = await startTestChain(db.sql);
  try {
    const payer = await chain.createWallet("test");
    const payee = await chain.createWallet("test");
    await chain.mintUsdc({ profile: "testnet", to: payer.address, amount: 100n * USDC });
    const rows = await Promise.all(Array.from({ length: 25 }, (_, i) =>
      chain.transferUsdc({
        profile: "testnet",
        from: { walletId: payer.id },
        to: payee.address,
        amount: 2n * USDC,
        intentKey: `burst:${i}`,
      })));
    assert.equal(new Set(rows.map((r) => r.nonce)).size, 25);
    assert.equal(await chain.usdcBalance("testnet", payee.address), 50n * USDC);
    await waitFor(async () =>
      (await chain.runtime("testnet").client.getTransactionCount({ address: payer.address })) === 25
    );
  } finally {
    await chain.stop();
    await db.drop();
  }
});

Deno.test("sender: a transaction anvil's pool stranded behind a mined nonce is sent again and mines", async () => {
  // anvil files a transaction as waiting for `nonce - 1` when it read the account's nonce before
  // the block mining `nonce - 1` was committed and pruned: the transaction then waits for good.
  // The same state, made on purpose: the account's nonce is wound back one while our transaction
  // arrives, and forward again once it sits in the pool.
  const db = await createTestDatabase();
  let url = "";
  let queuedWhenSent: boolean | null = null;
  const warnings: string[] = [];
  const log = createLogger({
    level: "warn",
    sink: (line) => void warnings.push(line),
  });
  const setNonce = (address: string, n: bigint) =>
    rpc(url, "anvil_setNonce", [address, `0x${n.toString(16)}`]);
  const chain = await startTestChain(db.sql, {
    log,
    hooks: {
      afterRecord: async (row) => {
        if (row.intentKey === "strand:2") await setNonce(row.fromAddress, row.nonce - 1n);
      },
      afterBroadcast: async (row) => {
        if (row.intentKey !== "strand:2") return;
        await setNonce(row.fromAddress, row.nonce);
        const pool = await rpc(url, "txpool_content") as {
          queued: Record<string, Record<string, unknown>>;
        };
        queuedWhenSent = Object.entries(pool.queued).some(([a, byNonce]) =>
          a.toLowerCase() === row.fromAddress && String(row.nonce) in byNonce
        );
      },
    },
  });
  try {
    url = chain.runtime("testnet").rpcUrl;
    const payer = await chain.createWallet("test");
    const payee = await chain.createWallet("test");
    await chain.mintUsdc({ profile: "testnet", to: payer.address, amount: 10n * USDC });
    const transfer = (key: string) =>
      chain.transferUsdc({
        profile: "testnet",
        from: { walletId: payer.id },
        to: payee.address,
        amount: USDC,
        intentKey: key,
      });
    await transfer("strand:1");
    const row = await transfer("strand:2");
    assert.equal(queuedWhenSent, true, "the transaction sat queued with the account at its nonce");
    assert.equal(row.status, "confirmed");
    assert.ok(warnings.some((w) => /stranded/.test(w)), warnings.join("; "));
    assert.equal(await chain.usdcBalance("testnet", payee.address), 2n * USDC);
    const [{ n }] = await db.sql`
      select count(*)::int as n from chain_transactions where intent_key like 'strand:%'`;
    assert.equal(n, 2, "no second transaction was signed");
  } finally {
    await chain.stop();
    await db.drop();
  }
});

Deno.test("recovery: a transaction mined between its receipt read and its nonce read is confirmed, not failed", async () => {
  // A transaction waiting in the pool behind a missing nonce is mined the moment that nonce
  // arrives: recovery read no receipt, then found the account's nonce past it, and marked it
  // failed though it was the one mined (an audit's payroll chunk was then sent again and
  // reported unpaid). The interleaving is made on purpose: the first receipt read answers "not
  // yet" for a transaction the node has already mined.
  const db = await createTestDatabase();
  const chain = await startTestChain(db.sql);
  try {
    const payer = await chain.createWallet("test");
    const payee = await chain.createWallet("test");
    await chain.mintUsdc({ profile: "testnet", to: payer.address, amount: 10n * USDC });
    const tx = await chain.transferUsdc({
      profile: "testnet",
      from: { walletId: payer.id },
      to: payee.address,
      amount: USDC,
      intentKey: "race:1",
    });
    assert.equal(tx.status, "confirmed");
    // As a process killed before it recorded the receipt left it.
    await db.sql`
      update chain_transactions set status = 'broadcast', block_number = null, gas_used = null,
        confirmed_at = null
      where id = ${tx.id}`;
    const rt = chain.runtime("testnet");
    let first = true;
    const client = new Proxy(rt.client, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver);
        if (prop !== "getTransactionReceipt" || typeof value !== "function") return value;
        return (args: unknown) => {
          if (first) {
            first = false;
            return Promise.reject(new TransactionReceiptNotFoundError({ hash: tx.txHash as Hex }));
          }
          return value.call(target, args);
        };
      },
    });
    const report = await recoverTransactions(
      { ...rt, client } as typeof rt,
      chain.sender,
      db.sql,
      createLogger({ level: "error" }),
      { minAgeMs: 0 },
    );
    assert.equal(first, false, "the interleaving was made");
    assert.deepEqual([report.confirmed, report.failed], [1, 0]);
    const row = await chain.intent("testnet", "race:1");
    assert.equal(row?.status, "confirmed");
    assert.equal(row?.txHash, tx.txHash);
  } finally {
    await chain.stop();
    await db.drop();
  }
});
