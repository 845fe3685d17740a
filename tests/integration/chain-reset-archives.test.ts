/**
 * A chain reset and accepted gets our contracts again at the same addresses, whose counters start
 * at 0 again: the old chain's agents and jobs move to archives when the reset is recorded
 * (migration 0040), so the new chain's token and job ids are free (an outside audit, 2026-12-01:
 * after a reset a new agent was a duplicate key, 500, and a new job 1 read as the old one).
 */
import assert from "node:assert/strict";
import { createTestDatabase } from "../helpers/db.ts";

const CHAIN = 5042002;
const OTHER = 5042;
const REGISTRY = `0x${"11".repeat(20)}`;
const JOBS = `0x${"22".repeat(20)}`;

Deno.test("chain reset: the chain's agents and jobs move to archives; the other chain's stay", async () => {
  const db = await createTestDatabase();
  const sql = db.sql;
  try {
    const [m] = await sql`insert into merchants (email, business_name, password_hash)
      values ('reset@example.com', 'Reset', 'x') returning id`;
    const agent = (chainId: number, token: number) =>
      sql`insert into agents (merchant_id, chain_id, name, metadata_uri, owner_wallet_id,
          owner_address, sca_address, salt, token_id, status, identity_registry, created_at,
          updated_at)
        values (${m.id}, ${chainId}, ${`agent ${token}`}, 'ipfs://a', gen_random_uuid(),
          ${`0x${"aa".repeat(20)}`}, ${`0x${String(token).padStart(40, "0")}`}, 's', ${token},
          'ACTIVE_AGENT_PROVISIONED', ${REGISTRY}, now(), now())`;
    const job = (chainId: number, id: number, status = "COMPLETED") =>
      sql`insert into commerce_jobs (chain_id, contract_address, job_id, merchant_id, client,
          client_wallet_id, provider, evaluator, budget, description, expires_at, status,
          create_tx_hash, budget_tx_hash, created_at, updated_at)
        values (${chainId}, ${JOBS}, ${id}, ${m.id}, '0xc', gen_random_uuid(), '0xp', '0xe', 5,
          ${`job ${id}`}, now() + interval '1 hour', ${status}, '0x1', '0x2', now(), now())`;
    await agent(CHAIN, 0);
    await agent(CHAIN, 1);
    await agent(OTHER, 0);
    await job(CHAIN, 1);
    await job(OTHER, 1);

    const [reset] = await sql`insert into chain_resets (chain_id, missing_contracts,
        archived_transactions, forgotten_logs)
      values (${CHAIN}, '[]', 0, 0) returning id`;

    const live = async (table: string) =>
      (await sql`select chain_id from ${sql(table)} order by chain_id`).map((r) => r.chainId);
    assert.deepEqual(await live("agents"), [OTHER], "the other chain's agent stays");
    assert.deepEqual(await live("commerce_jobs"), [OTHER]);
    const archived = await sql`
      select name, token_id::text as token, reset_id from agents_archive order by token_id`;
    assert.deepEqual(archived.map((a) => [a.name, a.token, a.resetId]), [
      ["agent 0", "0", reset.id],
      ["agent 1", "1", reset.id],
    ]);
    const [oldJob] = await sql`select description, status, reset_id from commerce_jobs_archive`;
    assert.deepEqual([oldJob.description, oldJob.status, oldJob.resetId], [
      "job 1",
      "COMPLETED",
      reset.id,
    ]);
    // The new chain's first agent and first job take the same ids again.
    await agent(CHAIN, 0);
    await job(CHAIN, 1, "OPEN");
    const [fresh] = await sql`select status from commerce_jobs where chain_id = ${CHAIN}`;
    assert.equal(fresh.status, "OPEN");
  } finally {
    await db.drop();
  }
});
