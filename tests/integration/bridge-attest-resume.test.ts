/**
 * A restart resumes each open bridge transfer's step (`resumeOpen`); for a transfer waiting for
 * its attestation that used to add a second chain of polls beside the one still queued, and
 * every restart another (an outside audit, 2026-12-01: 22 polls a minute after 11 restarts,
 * against Circle's rate-limited API). Each poll's job now carries the poll it was scheduled for
 * (`due`); a resume's poll reschedules the transfer, and the older chain's next job, finding its
 * poll rescheduled, ends without asking. No workers here: each step is run by hand.
 */
import assert from "node:assert/strict";
import { startTestService } from "../helpers/service.ts";
import { api } from "../helpers/accounts.ts";
import { rpc } from "../helpers/chain.ts";
import * as bridgeRepo from "../../src/modules/bridge/bridge.repo.ts";
import { attestStep, burnStep } from "../../src/modules/bridge/bridge.steps.ts";
import { QUEUE_SCHEMA } from "../../src/queue/queue.ts";

const SOURCE = "Base_Sepolia";
const USDC = 1_000_000n;

Deno.test("bridge: a resumed attestation poll takes over; the older chain of polls ends", async () => {
  const svc = await startTestService({
    env: { RATE_LIMITS: "off", BASE_SEPOLIA_CONFIRMATIONS: "1" },
    workers: false,
  });
  const chain = svc.deps.chain;
  const sql = svc.db.sql;
  try {
    await chain.ensure(SOURCE);
    const session = await api(svc)("POST", "/api/consumer/session", { body: {} });
    assert.equal(session.status, 200, session.text);
    const account = session.json.account as { id: string; walletAddress: string };
    const [c] = await sql<{ managedWalletId: string }[]>`
      select managed_wallet_id from consumers where id = ${account.id}`;
    const wallet = account.walletAddress.toLowerCase() as `0x${string}`;
    await chain.faucet(SOURCE, wallet, 2n * USDC);
    const t = await bridgeRepo.insert(sql, {
      reference: `bridge_${crypto.randomUUID().replaceAll("-", "").slice(0, 24)}`,
      direction: "inbound",
      consumerId: account.id,
      walletId: c.managedWalletId,
      fromChain: SOURCE,
      toChain: "Settle_Testnet",
      sourceDomain: chain.profileConfig(SOURCE).cctpDomain!,
      destinationDomain: chain.profileConfig("testnet").cctpDomain!,
      amount: USDC,
      sender: wallet,
      recipient: "0x1111111111111111111111111111111111111111",
      paymentReference: null,
      transferSpeed: "standard",
      burnAmount: USDC,
      maxFee: await chain.cctp.minFee(SOURCE, USDC),
      now: svc.deps.clock.now(),
    });
    await burnStep(svc.deps, t.reference);
    const row = async () => (await bridgeRepo.find(sql, t.reference))!;
    assert.equal((await row()).status, "burned");
    /** The `due` of the latest attest job queued for the transfer. */
    const queuedDue = async () =>
      (await sql.unsafe(
        `select data->>'due' as due from ${QUEUE_SCHEMA}.job
         where name = 'bridge.attest' and data->>'reference' = $1
         order by created_on desc limit 1`,
        [t.reference],
      ))[0]?.due as string | undefined;

    // The chain of polls: one without an attestation yet (a block must follow the burn).
    await attestStep(svc.deps, t.reference);
    const first = await row();
    assert.equal(first.attestationAttempts, 1);
    assert.equal(first.attestationState, "pending_confirmations");
    const due1 = first.nextAttestationAt!.toISOString();
    assert.equal(await queuedDue(), due1, "the next poll's job carries its time");

    // A restart's resume polls again (a job without `due`): it reschedules the transfer.
    await attestStep(svc.deps, t.reference);
    const due2 = (await row()).nextAttestationAt!.toISOString();
    assert.equal((await row()).attestationAttempts, 2);
    assert.notEqual(due2, due1);

    // The older chain's job comes due: superseded, it asks nothing and queues nothing.
    await attestStep(svc.deps, t.reference, due1);
    assert.equal((await row()).attestationAttempts, 2, "no poll");
    assert.equal(await queuedDue(), due2, "nothing queued after the resumed chain's job");

    // The resumed chain goes on, and ends in the attestation once a block follows the burn.
    await attestStep(svc.deps, t.reference, due2);
    const due3 = (await row()).nextAttestationAt!.toISOString();
    assert.equal((await row()).attestationAttempts, 3);
    await rpc(chain.runtime(SOURCE).rpcUrl, "evm_mine");
    await attestStep(svc.deps, t.reference, due3);
    assert.equal((await row()).status, "attested");
  } finally {
    await svc.close();
  }
});
