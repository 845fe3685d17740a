/**
 * A stream's withdrawals and stops are recorded from their receipts' events, never from reads of
 * the vault at a past block: a local node restarted from its saved state, and a remote node that
 * is not an archive, answer such reads with an error (anvil: `BlockOutOfRangeError`), which made
 * a withdrawal or a stop mined before a restart a 500, and its stream stuck ACTIVE. Here the
 * node's history is taken away for every read at a past block (an outside audit, 2026-12-01).
 * And a stop a killed process saw mined and did not record is recorded at a worker's start
 * (`recoverStops`): STOPPED with the chain's amounts and one `stream.stopped`.
 */
import assert from "node:assert/strict";
import { startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { rpc } from "../helpers/chain.ts";
import { M } from "../../src/http/messages.ts";
import { recoverStops } from "../../src/modules/streams/streams.recovery.ts";

const USDC = 1_000_000n;
const P = "production";
const HOOK = "http://127.0.0.1:9/hooks";

Deno.test("streams: withdrawals and stops recorded from their events; a mined stop recovered", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const call = api(svc);
  const chain = svc.deps.chain;
  const sql = svc.db.sql;
  const units = (n: unknown) => BigInt(Math.round(Number(n) * 1e6));
  // The node keeps no history: every read of the vault at a past block fails as anvil's does
  // after a restart from its saved state.
  const get = chain.streams.get.bind(chain.streams);
  chain.streams.get = async (p, reference, blockNumber) => {
    const head = await chain.runtime(p).client.getBlockNumber({ cacheTime: 0 });
    if (blockNumber !== undefined && blockNumber < head) {
      throw new Error(
        `BlockOutOfRangeError: block height is ${head} but requested was ${blockNumber}`,
      );
    }
    return await get(p, reference, blockNumber);
  };
  try {
    const m = await createMerchant(svc);
    const headers = { "x-api-key": m.apiKey };
    const sender = m.walletAddress!.toLowerCase() as `0x${string}`;
    const [wallet] = await sql<{ id: string }[]>`select id from wallets where address = ${sender}`;
    const w = await call("POST", "/api/wallets", { headers, body: { label: "Receiver" } });
    assert.equal(w.status, 201, w.text);
    const receiver = (w.json.wallet as { address: string }).address;
    await chain.mintUsdc({ profile: P, to: sender, amount: 100n * USDC });
    const create = async () => {
      const r = await call("POST", "/api/payments/stream", {
        headers,
        body: {
          senderSCA: sender,
          receiverSCA: receiver,
          ratePerSecond: "0.001",
          totalDeposited: "10",
          webhookUrl: HOOK,
        },
      });
      assert.equal(r.status, 200, r.text);
      return r.json.reference as string;
    };
    const row = async (reference: string) =>
      (await sql<{ status: string; withdrawn: bigint }[]>`
        select status, withdrawn from streams where reference = ${reference}`)[0];
    const events = async (reference: string) =>
      (await sql<{ event: string }[]>`
        select event from webhook_deliveries where reference = ${reference} order by event`)
        .map((r) => r.event);

    await t.step("a withdrawal and a stop answer from their events", async () => {
      const reference = await create();
      await rpc(chain.runtime(P).rpcUrl, "evm_increaseTime", [60]);
      const out = await call("POST", "/api/payments/stream/withdraw", {
        headers,
        body: { reference, receiverSCA: receiver },
      });
      assert.equal(out.status, 200, out.text);
      const vault = await chain.streams.get(P, reference);
      assert.equal(units(out.json.amountWithdrawn), vault.withdrawn);
      assert.equal((await row(reference)).withdrawn, vault.withdrawn);
      await rpc(chain.runtime(P).rpcUrl, "evm_increaseTime", [30]);
      const stop = await call("POST", "/api/payments/stream/stop", {
        headers,
        body: { reference, callerSCA: sender },
      });
      assert.equal(stop.status, 200, stop.text);
      const stopped = await chain.streams.get(P, reference);
      assert.equal(stopped.status, "Stopped");
      assert.equal(units(stop.json.totalStreamed), stopped.withdrawn);
      assert.equal(units(stop.json.refundedToSender), 10n * USDC - stopped.withdrawn);
      assert.equal((await row(reference)).status, "STOPPED");
    });

    await t.step("a stop mined and not recorded is recorded at a worker's start", async () => {
      const reference = await create();
      await rpc(chain.runtime(P).rpcUrl, "evm_increaseTime", [45]);
      // As a process killed between the stop's receipt and its record leaves it.
      await chain.streams.stop(
        P,
        reference,
        { walletId: wallet.id },
        `stream-stop:${reference}:${wallet.id}`,
      );
      const vault = await chain.streams.get(P, reference);
      assert.equal(vault.status, "Stopped");
      assert.equal((await row(reference)).status, "ACTIVE");

      assert.equal(await recoverStops(svc.deps), 1);
      const after = await row(reference);
      assert.deepEqual([after.status, after.withdrawn], ["STOPPED", vault.withdrawn]);
      assert.deepEqual(await events(reference), ["stream.created", "stream.stopped"]);
      const listed = await call("GET", `/api/payments/stream?reference=${reference}`, { headers });
      const s = (listed.json.streams as Record<string, unknown>[])[0];
      assert.equal(s.status, "STOPPED");
      assert.equal(units(s.totalStreamed), vault.withdrawn);
      // Once: a second start records nothing, and the stop request answers it is stopped.
      assert.equal(await recoverStops(svc.deps), 0);
      assert.deepEqual(await events(reference), ["stream.created", "stream.stopped"]);
      const again = await call("POST", "/api/payments/stream/stop", {
        headers,
        body: { reference, callerSCA: sender },
      });
      assert.equal(again.status, 400, again.text);
      assert.equal(again.json.error, M.streamNotActive);
    });
  } finally {
    chain.streams.get = get;
    await svc.close();
  }
});
