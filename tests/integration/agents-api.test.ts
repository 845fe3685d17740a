/**
 * ERC-8004 agents through the API on a real anvil and PostgreSQL: deploy (owner wallet, CREATE2
 * account, registration with the account as the verified agent wallet, all read back from the
 * chain), the status lookup's public and bearer rules with the spec's texts, another merchant
 * seeing nothing, and the reputation endpoint.
 */
import assert from "node:assert/strict";
import { startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { M } from "../../src/http/messages.ts";
import {
  beginAgent,
  merchantAgent,
  onChain,
  resumeProvisioning,
} from "../../src/modules/agents/agents.service.ts";
import { RESUME_AFTER_MS } from "../../src/modules/agents/agents.jobs.ts";
import { AgentAccountFactory } from "../../src/chain/contracts/artifacts/index.ts";
import { paymentFeedbackQueue } from "../../src/modules/agents/agents.queues.ts";
import { AGENT_PAYMENT_TYPES } from "../../src/chain/agents.ts";
import { waitFor } from "../helpers/poll.ts";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";

type Agent = Record<string, unknown> & {
  name: string;
  tokenId: string;
  agentId: string;
  scaAddress: string;
  ownerNode: string;
  managedWalletId: string;
  metadataURI: string;
};

Deno.test("agents API: deploy, status (public and bearer), reputation", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const call = api(svc);
  try {
    const [a, b] = await Promise.all([createMerchant(svc), createMerchant(svc)]);
    const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
    const testnetId = svc.deps.chain.chainId("testnet");
    let scout: Agent;

    await t.step("deploy: 201 with the full agent record, registered on chain", async () => {
      const r = await call("POST", "/api/agent/deploy", {
        headers: bearer(a.apiKey),
        body: { name: "Research Scout", metadataURI: "ipfs://bafyscout/agent.json" },
      });
      assert.equal(r.status, 201, r.text);
      scout = r.json.agent as Agent;
      assert.equal(scout.tokenId, "0", "ERC-8004 numbers agents from 0: the chain's first is 0");
      assert.equal(r.json.agentId, `8004:${testnetId}:${scout.tokenId}`);
      assert.equal(scout.agentId, r.json.agentId);
      assert.equal(scout.status, "ACTIVE_AGENT_PROVISIONED");
      assert.equal(scout.name, "Research Scout");
      assert.equal(scout.metadataURI, "ipfs://bafyscout/agent.json");
      assert.equal(scout.usdcBalance, "0.000000");
      assert.equal(scout.reputation, 0);
      assert.deepEqual(scout.recentPayments, []);
      assert.equal(scout.totalPaid, 0);
      assert.equal(scout.paymentCount, 0);
      assert.equal(
        r.json.explorerUrl,
        svc.deps.chain.explorerTxUrl("testnet", r.json.txHash as string),
      );
      assert.notEqual(scout.scaAddress.toLowerCase(), scout.ownerNode.toLowerCase());

      const row = await merchantAgent(svc.deps, { id: a.id } as never, scout.tokenId);
      const chain = await onChain(svc.deps, row);
      assert.equal(chain.identity.owner, scout.ownerNode.toLowerCase());
      assert.equal(chain.identity.agentWallet, scout.scaAddress.toLowerCase());
      assert.equal(chain.identity.agentURI, scout.metadataURI);
      assert.equal(chain.identity.name, "Research Scout");
      assert.equal(chain.accountOwner, scout.ownerNode.toLowerCase());

      // The owner wallet is one of the merchant's wallets.
      const w = await call("GET", `/api/wallets/${scout.managedWalletId}`, {
        headers: bearer(a.apiKey),
      });
      assert.equal(w.status, 200, w.text);
      assert.equal((w.json.wallet as { address: string }).address, scout.ownerNode);
    });

    await t.step("deploy from a manifest: a base64 JSON data URI; refusals", async () => {
      const manifest = {
        type: "https://eips.ethereum.org/EIPS/eip-8004#registration-v1",
        name: "Ü",
      };
      const r = await call("POST", "/api/agent/deploy", {
        headers: bearer(a.apiKey),
        body: { name: "Manifest Bot", manifest },
      });
      assert.equal(r.status, 201, r.text);
      const uri = (r.json.agent as Agent).metadataURI;
      assert.match(uri, /^data:application\/json;base64,/);
      const decoded = new TextDecoder().decode(
        Uint8Array.from(atob(uri.split(",")[1]), (ch) => ch.charCodeAt(0)),
      );
      assert.deepEqual(JSON.parse(decoded), manifest);
      for (
        const [body, text] of [
          [{ name: "x" }, M.agentMetadata],
          [{ name: "x", metadataURI: "ipfs://a", manifest: {} }, M.agentMetadata],
          [{ name: "x", metadataURI: "http://insecure" }, M.agentMetadataUri],
          [
            { name: "x", metadataURI: `https://x.example/${"a".repeat(60_000)}` },
            M.agentMetadataUri,
          ],
          [{ name: "x", metadataURI: 42 }, M.agentMetadataUri],
        ] as const
      ) {
        const bad = await call("POST", "/api/agent/deploy", { headers: bearer(a.apiKey), body });
        assert.equal(bad.status, 400, bad.text);
        assert.equal(bad.json.error, text);
      }
      const none = await call("POST", "/api/agent/deploy", {
        body: { name: "x", metadataURI: "ipfs://a" },
      });
      assert.equal(none.status, 401);
    });

    await t.step(
      "status by scaAddress: public, any merchant's agent, the basic record",
      async () => {
        const r = await call("GET", `/api/agent/status?scaAddress=${scout.scaAddress}`);
        assert.equal(r.status, 200, r.text);
        assert.match(r.headers.get("content-type")!, /application\/json/);
        assert.equal(r.json.success, true);
        assert.equal(r.json.count, 1);
        assert.deepEqual(r.json.agent, r.json.agents && (r.json.agents as Agent[])[0]);
        // The spec's basic record: who the agent is, nothing about its money.
        assert.deepEqual(r.json.agent, {
          name: "Research Scout",
          tokenId: scout.tokenId,
          agentId: scout.agentId,
          scaAddress: scout.scaAddress,
          ownerNode: scout.ownerNode,
          metadataURI: scout.metadataURI,
          status: "ACTIVE_AGENT_PROVISIONED",
          chain: "testnet",
        });
        // A key's bare lookup is authenticated: its merchant's own agent in full, another's basic.
        const own = await call("GET", `/api/agent/status?scaAddress=${scout.scaAddress}`, {
          headers: bearer(a.apiKey),
        });
        assert.equal(own.status, 200, own.text);
        assert.equal((own.json.agent as Agent).managedWalletId, scout.managedWalletId);
        assert.equal((own.json.agent as Agent).usdcBalance, "0.000000");
        assert.deepEqual((own.json.agent as Agent).recentPayments, []);
        const theirs = await call("GET", `/api/agent/status?scaAddress=${scout.scaAddress}`, {
          headers: bearer(b.apiKey),
        });
        assert.equal(theirs.status, 200, theirs.text);
        assert.deepEqual(theirs.json.agent, r.json.agent);
        const badKey = await call("GET", `/api/agent/status?scaAddress=${scout.scaAddress}`, {
          headers: bearer("svc_live_" + "0".repeat(48)),
        });
        assert.equal(badKey.status, 401, badKey.text);
        // A publishable key (a browser's) makes the public lookup: the basic record, even of its
        // own merchant's agent; anything else is a secret key's read (403).
        const pk = await call("POST", "/api/keys", {
          cookie: a.cookie,
          body: { type: "publishable", environment: "live" },
        });
        assert.equal(pk.status, 201, pk.text);
        const pub = bearer((pk.json.key as { key: string }).key);
        const viaPub = await call("GET", `/api/agent/status?scaAddress=${scout.scaAddress}`, {
          headers: pub,
        });
        assert.equal(viaPub.status, 200, viaPub.text);
        assert.deepEqual(viaPub.json.agent, r.json.agent);
        for (const q of [`?name=scout`, `?scaAddress=${scout.scaAddress}&name=x`, ""]) {
          const refused = await call("GET", `/api/agent/status${q}`, { headers: pub });
          assert.deepEqual(
            [refused.status, refused.json.error],
            [403, M.insufficientPermissions],
            q,
          );
        }
        const lower = await call(
          "GET",
          `/api/agent/status?scaAddress=${scout.scaAddress.toLowerCase()}`,
        );
        assert.equal(lower.status, 200, lower.text);
        const missing = await call("GET", `/api/agent/status?scaAddress=0x${"1".repeat(40)}`);
        assert.equal(missing.status, 404);
        assert.deepEqual(missing.json, { success: false, error: M.agentNotFound });
      },
    );

    await t.step("anything else needs the bearer key: 401 with the spec's text", async () => {
      for (
        const q of [
          "",
          "?name=scout",
          `?tokenId=${scout.tokenId}`,
          `?scaAddress=${scout.scaAddress}&name=x`,
        ]
      ) {
        const r = await call("GET", `/api/agent/status${q}`);
        assert.equal(r.status, 401, `${q}: ${r.text}`);
        assert.equal(r.json.error, M.agentSearchAuth);
      }
      const wrong = await call("GET", "/api/agent/status?name=scout", {
        headers: bearer("svc_live_" + "0".repeat(48)),
      });
      assert.equal(wrong.status, 401);
      assert.equal(wrong.json.error, M.invalidApiKey);
    });

    await t.step("by name (case-insensitive, partial) and tokenId with the key", async () => {
      const r = await call("GET", "/api/agent/status?name=SCOUT", { headers: bearer(a.apiKey) });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.count, 1);
      assert.equal((r.json.agent as Agent).name, "Research Scout");
      const all = await call("GET", "/api/agent/status", { headers: bearer(a.apiKey) });
      assert.equal(all.status, 200, all.text);
      assert.equal(all.json.count, 2);
      assert.deepEqual((all.json.agents as Agent[]).map((x) => x.name), [
        "Manifest Bot",
        "Research Scout",
      ]);
      const byToken = await call("GET", `/api/agent/status?tokenId=${scout.tokenId}`, {
        headers: bearer(a.apiKey),
      });
      assert.equal(byToken.status, 200, byToken.text);
      assert.equal((byToken.json.agent as Agent).scaAddress, scout.scaAddress);
      const pct = await call("GET", "/api/agent/status?name=%25", { headers: bearer(a.apiKey) });
      assert.equal(pct.status, 404, "a % in the name is a character, not a wildcard");
    });

    await t.step("another merchant's key sees nothing", async () => {
      for (const q of ["?name=scout", `?tokenId=${scout.tokenId}`, ""]) {
        const r = await call("GET", `/api/agent/status${q}`, { headers: bearer(b.apiKey) });
        assert.equal(r.status, 404, `${q}: ${r.text}`);
        assert.equal(r.json.error, M.agentNotFound);
      }
      const rep = await call("GET", `/api/agent/reputation?agentId=${scout.tokenId}`, {
        headers: bearer(b.apiKey),
      });
      assert.equal(rep.status, 404, rep.text);
    });

    await t.step("reputation: the estimate and the registry's address", async () => {
      const r = await call("GET", `/api/agent/reputation?agentId=${scout.tokenId}`, {
        headers: bearer(a.apiKey),
      });
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.json.agent, {
        tokenId: scout.tokenId,
        name: "Research Scout",
        scaAddress: scout.scaAddress,
        status: "ACTIVE_AGENT_PROVISIONED",
      });
      const s = r.json.reputationSummary as Record<string, unknown>;
      assert.equal(s.estimatedScore, 0);
      assert.equal(s.totalPayments, 0);
      assert.equal(s.successfulPayments, 0);
      assert.equal(s.totalVolumeUSDC, 0);
      assert.equal(
        (s.reputationRegistryAddress as string).toLowerCase(),
        svc.deps.chain.agents.reputationAddress("testnet").toLowerCase(),
      );
      assert.deepEqual(r.json.recentPayments, []);
      const full = await call("GET", `/api/agent/reputation?agentId=${scout.agentId}`, {
        headers: bearer(a.apiKey),
      });
      assert.equal(full.status, 200, full.text);
      const none = await call("GET", `/api/agent/reputation?agentId=${scout.tokenId}`);
      assert.equal(none.status, 401);
      const bad = await call("GET", "/api/agent/reputation?agentId=x", {
        headers: bearer(a.apiKey),
      });
      assert.equal(bad.status, 400);
      // The field is named once ("agentId is required: …", not "agentId: agentId is …").
      assert.equal(bad.json.error, M.agentIdQuery);
      const missing = await call("GET", "/api/agent/reputation", { headers: bearer(a.apiKey) });
      assert.equal(missing.status, 400, missing.text);
      assert.equal(missing.json.error, M.agentIdQuery);
      assert.equal((missing.json.error as string).match(/agentId/g)?.length, 1);
    });

    await t.step("the account answers ERC-1271 for its owner's agent signature", async () => {
      const chain = svc.deps.chain;
      const owner = await chain.walletAccount(scout.managedWalletId);
      const message = {
        agentId: BigInt(scout.tokenId),
        timestamp: 1_700_000_000n,
        nonce: `0x${"ab".repeat(32)}` as const,
      };
      const sign = (account: typeof owner) =>
        account.signTypedData({
          domain: chain.agents.domain("testnet"),
          types: AGENT_PAYMENT_TYPES,
          primaryType: "AgentPayment",
          message,
        });
      const check = async (signature: `0x${string}`, over: Partial<typeof message> = {}) =>
        await chain.agents.verifyPayment("testnet", {
          wallet: scout.scaAddress as `0x${string}`,
          tokenId: over.agentId ?? message.agentId,
          timestamp: over.timestamp ?? message.timestamp,
          nonce: over.nonce ?? message.nonce,
          signature,
        });
      const good = await sign(owner);
      assert.equal(await check(good), true);
      assert.equal(await check(good, { timestamp: message.timestamp + 1n }), false);
      assert.equal(await check(await sign(privateKeyToAccount(generatePrivateKey()))), false);
      assert.equal(await check("0x1234"), false);
    });

    await t.step("payment feedback goes on chain once per payment (the job)", async () => {
      const send = (paymentId: string, success: boolean) =>
        svc.deps.queue.send(paymentFeedbackQueue, {
          paymentId,
          agentId: scout.agentId,
          success,
          endpoint: "/x402/weather",
        });
      await send("pay-1", true);
      await send("pay-2", false);
      await send("pay-1", true); // a redelivery: the same intent, no second feedback
      await send("pay-x", true);
      const summary = async () => {
        const r = await call("GET", `/api/agent/reputation?agentId=${scout.tokenId}`, {
          headers: bearer(a.apiKey),
        });
        return r.json.reputationSummary as Record<string, number>;
      };
      await waitFor(async () => (await summary()).onChainFeedbackCount === 3, {
        what: "three feedbacks on chain",
      });
      const s = await summary();
      assert.equal(s.onChainAverage, 66);
      const unknown = await svc.deps.queue.send(paymentFeedbackQueue, {
        paymentId: "pay-9",
        agentId: `8004:${testnetId}:999`,
        success: true,
        endpoint: "/x402/weather",
      });
      assert.ok(unknown);
    });

    await t.step("a deploy stopped half way is finished by the sweep, each step once", async () => {
      const chain = svc.deps.chain;
      const merchant = { id: a.id } as never;
      const row = await beginAgent(svc.deps, merchant, {
        name: "Crashed",
        metadataURI: "ipfs://c",
      });
      assert.equal(row.status, "PROVISIONING");
      // The first step went out before the "crash".
      await chain.send({
        profile: "testnet",
        from: "operator",
        to: chain.contract("testnet", "AgentAccountFactory"),
        data: chain.encode({
          abi: AgentAccountFactory.abi,
          functionName: "createAccount",
          args: [row.ownerAddress as `0x${string}`, row.salt as `0x${string}`],
        }),
        intentKey: `agent:${row.id}:account`,
      });
      assert.equal(
        await resumeProvisioning(svc.deps, { olderThanMs: RESUME_AFTER_MS }),
        0,
        "not yet",
      );
      svc.clock.advance(RESUME_AFTER_MS + 1000);
      assert.equal(await resumeProvisioning(svc.deps, { olderThanMs: RESUME_AFTER_MS }), 1);
      assert.equal(await resumeProvisioning(svc.deps, { olderThanMs: RESUME_AFTER_MS }), 0);
      const intents = await svc.db.sql`
        select intent_key from chain_transactions where intent_key like ${`agent:${row.id}:%`}
        order by intent_key`;
      assert.deepEqual(intents.map((r) => r.intentKey), [
        `agent:${row.id}:account`,
        `agent:${row.id}:register`,
        `agent:${row.id}:wallet`,
      ]);
      const r = await call("GET", "/api/agent/status?name=crashed", { headers: bearer(a.apiKey) });
      assert.equal(r.status, 200, r.text);
      const agent = r.json.agent as Agent;
      assert.equal(agent.status, "ACTIVE_AGENT_PROVISIONED");
      const done = await merchantAgent(svc.deps, merchant, agent.tokenId);
      const onchain = await onChain(svc.deps, done);
      assert.equal(onchain.identity.agentWallet, row.scaAddress);
      assert.equal(onchain.identity.owner, row.ownerAddress);
    });

    await t.step("a retried deploy with its Idempotency-Key is one agent", async () => {
      const deploy = () =>
        call("POST", "/api/agent/deploy", {
          headers: { ...bearer(b.apiKey), "idempotency-key": "deploy-retry-1" },
          body: { name: "Retry Bot", metadataURI: "ipfs://retry" },
        });
      const first = await deploy();
      assert.equal(first.status, 201, first.text);
      const replay = await deploy();
      assert.equal(replay.status, 201, replay.text);
      assert.equal(replay.json.agentId, first.json.agentId);
      // A retry the idempotency layer did not store (a 5xx or a timeout releases the key).
      await svc.db.sql`delete from idempotency_keys`;
      const retried = await deploy();
      assert.equal(retried.status, 201, retried.text);
      assert.equal(retried.json.agentId, first.json.agentId);
      assert.equal(
        (retried.json.agent as Agent).scaAddress,
        (first.json.agent as Agent).scaAddress,
      );
      const rows = await svc.db.sql`select id from agents where merchant_id = ${b.id}
        and name = 'Retry Bot'`;
      assert.equal(rows.length, 1);

      // A crash after the row was written: the retry with the same key finishes that agent.
      const body = { name: "Half Bot", metadataURI: "ipfs://half" };
      const row = await beginAgent(svc.deps, { id: b.id } as never, body, "deploy-half");
      const resumed = await call("POST", "/api/agent/deploy", {
        headers: { ...bearer(b.apiKey), "idempotency-key": "deploy-half" },
        body,
      });
      assert.equal(resumed.status, 201, resumed.text);
      assert.equal((resumed.json.agent as Agent).scaAddress.toLowerCase(), row.scaAddress);
      const halves = await svc.db.sql`select status from agents where merchant_id = ${b.id}
        and name = 'Half Bot'`;
      assert.deepEqual(halves.map((x) => x.status), ["ACTIVE_AGENT_PROVISIONED"]);

      // Its manifest's keys in another order: the same request, to the layer and to the deploy.
      const manifest = (m: Record<string, unknown>) =>
        call("POST", "/api/agent/deploy", {
          headers: { ...bearer(b.apiKey), "idempotency-key": "deploy-manifest" },
          body: { name: "Manifest Bot", manifest: m },
        });
      const ab = await manifest({ a: 1, b: 2 });
      assert.equal(ab.status, 201, ab.text);
      await svc.db.sql`delete from idempotency_keys`;
      const ba = await manifest({ b: 2, a: 1 });
      assert.equal(ba.status, 201, ba.text);
      assert.equal(ba.json.agentId, ab.json.agentId, "one agent");
      const bots = await svc.db.sql`select id from agents where merchant_id = ${b.id}
        and name = 'Manifest Bot'`;
      assert.equal(bots.length, 1);

      // No owner wallet without its agent: a failure between the two leaves neither.
      const wallets = async () =>
        (await svc.db.sql`select count(*)::int as n from merchant_wallets
          where merchant_id = ${b.id}`)[0].n as number;
      const before = await wallets();
      await assert.rejects(
        beginAgent(
          svc.deps,
          { id: b.id } as never,
          { name: "Orphan Bot", metadataURI: "ipfs://o" },
          "deploy-orphan",
          {
            beforeInsert: () => Promise.reject(new Error("killed")),
          },
        ),
      );
      assert.equal(await wallets(), before, "the owner wallet went with the row");
    });
  } finally {
    await svc.close();
  }
});
