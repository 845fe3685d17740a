/**
 * The agent flow against the official ERC-8004 registries (the 2.0.0 fixtures, deployed on the
 * testnet node behind their proxies as their repository does), selected by configuration
 * (TESTNET_IDENTITY_REGISTRY_ADDRESS / TESTNET_REPUTATION_REGISTRY_ADDRESS): a deploy gets id 0
 * (beside an agent 0 of our former registry, which is no longer served) and proves its smart
 * account within the registry's 5-minute window; status and reputation find
 * agent 0; agent-paid x402 calls become NewFeedback entries whose getSummary agrees with
 * GET /api/agent/reputation; an agent a plain wallet registered directly is not ours to show but
 * may pay as itself; a proof that reverted is replaced; chain time ahead of the wall clock still
 * gives a valid proof.
 */
import assert from "node:assert/strict";
import { encodeFunctionData, getAddress } from "viem";
import { generatePrivateKey } from "viem/accounts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { waitFor } from "../helpers/poll.ts";
import { OFFICIAL } from "../helpers/erc8004.ts";
import { startOnOfficialRegistries } from "../helpers/erc8004-service.ts";
import {
  agentProof,
  type DeployedAgent,
  externalBuyer,
  fundAgentGateway,
  gatewayProof,
  registerAgent,
} from "../helpers/x402.ts";
import { M } from "../../src/http/messages.ts";
import {
  beginAgent,
  deployAgent,
  merchantAgent,
  resumeProvisioning,
} from "../../src/modules/agents/agents.service.ts";
import { RESUME_AFTER_MS } from "../../src/modules/agents/agents.jobs.ts";
import { ChainRevertError } from "../../src/chain/errors.ts";

const USDC = 1_000_000n;
const idAbi = OFFICIAL.IdentityRegistry.abi;
const repAbi = OFFICIAL.ReputationRegistry.abi;

Deno.test("agents on the official ERC-8004 registries, configured by address", async (t) => {
  const on = await startOnOfficialRegistries();
  const { host, svc, identity, reputation, pub } = on;
  let upstreamDown = false;
  const upstream = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () => upstreamDown ? new Response("down", { status: 503 }) : Response.json({ quote: 42 }),
  );
  try {
    const chain = svc.deps.chain;
    const call = api(svc);
    const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
    const chainId = chain.chainId("testnet");
    const [seller, owner] = await Promise.all([createMerchant(svc), createMerchant(svc)]);
    const deploy = async (name: string) => {
      const r = await call("POST", "/api/agent/deploy", {
        headers: bearer(owner.apiKey),
        body: { name, metadataURI: `ipfs://bafy-${name.toLowerCase()}` },
      });
      assert.equal(r.status, 201, r.text);
      return r.json.agent as unknown as DeployedAgent & {
        agentId: string;
        status: string;
        ownerNode: string;
      };
    };
    const readId = (functionName: string, args: unknown[]) =>
      pub.readContract({ address: identity, abi: idAbi, functionName, args });

    // An agent the same merchant deployed earlier in our own registry (the host process still
    // uses it): token 0 there too. It belongs to that registry, not to the official one.
    const former = await deployAgent(host.deps, { id: owner.id } as never, {
      name: "Former",
      metadataURI: "ipfs://bafy-former",
    });
    assert.equal(former.agent.tokenId, "0");

    let agent: Awaited<ReturnType<typeof deploy>>;
    await t.step(
      "deploy: agent 0, its smart account proven within the 5-minute window",
      async () => {
        assert.equal(chain.agents.identityAddress("testnet"), identity);
        agent = await deploy("Scout");
        assert.equal(agent.tokenId, "0");
        assert.equal(agent.agentId, `8004:${chainId}:0`);
        assert.equal(agent.status, "ACTIVE_AGENT_PROVISIONED");
        assert.equal(await readId("ownerOf", [0n]), getAddress(agent.ownerNode));
        assert.equal(await readId("getAgentWallet", [0n]), getAddress(agent.scaAddress));
      },
    );

    await t.step("status and reputation find agent 0 (public and with the key)", async () => {
      const pub0 = await call("GET", `/api/agent/status?scaAddress=${agent.scaAddress}`);
      assert.equal(pub0.status, 200, pub0.text);
      assert.equal((pub0.json.agent as Record<string, unknown>).tokenId, "0");
      const mine = await call("GET", "/api/agent/status", { headers: bearer(owner.apiKey) });
      assert.equal(mine.status, 200, mine.text);
      assert.deepEqual((mine.json.agents as { name: string }[]).map((a) => a.name), ["Scout"]);
      // The former registry's agent 0 is not served by a service using the official registry.
      const gone = await call("GET", `/api/agent/status?scaAddress=${former.agent.scaAddress}`);
      assert.equal(gone.status, 404, gone.text);
      for (const q of ["tokenId=0", "name=scout"]) {
        const r = await call("GET", `/api/agent/status?${q}`, { headers: bearer(owner.apiKey) });
        assert.equal(r.status, 200, r.text);
        assert.equal(r.json.count, 1);
      }
      for (const id of ["0", `8004:${chainId}:0`]) {
        const r = await call("GET", `/api/agent/reputation?agentId=${id}`, {
          headers: bearer(owner.apiKey),
        });
        assert.equal(r.status, 200, r.text);
        const s = r.json.reputationSummary as Record<string, unknown>;
        assert.equal(s.reputationRegistryAddress, reputation);
        assert.equal(s.onChainFeedbackCount, 0);
        assert.equal(s.onChainAverage, 0);
      }
    });

    const listing = await call("POST", "/api/x402/listings", {
      headers: bearer(seller.apiKey),
      body: {
        slug: "quote",
        upstreamUrl: `http://127.0.0.1:${upstream.addr.port}/quote`,
        price: "0.25",
        methods: ["GET"],
      },
    });
    assert.equal(listing.status, 201, listing.text);
    const payTo = seller.walletAddress!;
    const pay = (proof: string, headers: Record<string, string>) =>
      call("POST", "/api/x402/pay", {
        headers,
        body: { slug: "quote", method: "GET", paymentProof: proof },
      });
    const feedbackOn = async (agentId: bigint) =>
      (await pub.getContractEvents({
        address: reputation,
        abi: repAbi,
        eventName: "NewFeedback",
        args: { agentId },
        fromBlock: 0n,
      })).map((l: unknown) => (l as { args: Record<string, unknown> }).args);

    await t.step(
      "three agent-paid x402 calls: three NewFeedback; getSummary = the API",
      async () => {
        await fundAgentGateway(svc, agent, 2n * USDC);
        for (const down of [false, true, false]) {
          upstreamDown = down;
          const { proof, agentSignature } = await agentProof(svc, agent, {
            to: payTo,
            value: 250_000n,
          });
          const r = await pay(proof, {
            "x-agent-id": agent.agentId,
            "x-agent-signature": agentSignature,
          });
          assert.equal(r.status, down ? 500 : 200, r.text);
        }
        upstreamDown = false;
        const logs = await waitFor(async () => {
          const l = await feedbackOn(0n);
          return l.length === 3 ? l : null;
        }, { timeoutMs: 30_000, what: "three NewFeedback entries for agent 0" });
        const operator = chain.runtime("testnet").operator!.address;
        // One per paid call, from the operator; the feedback jobs may land in any order.
        const entries = logs.map((l) => `${l.clientAddress} ${l.value} ${l.tag2}`);
        assert.deepEqual(entries.sort(), [
          `${operator} 0 failed`,
          `${operator} 100 success`,
          `${operator} 100 success`,
        ]);
        const [count, value, decimals] = await pub.readContract({
          address: reputation,
          abi: repAbi,
          functionName: "getSummary",
          args: [0n, [operator], "x402", ""],
        }) as [bigint, bigint, number];
        assert.deepEqual([count, value, decimals], [3n, 66n, 0]);
        const r = await call("GET", "/api/agent/reputation?agentId=0", {
          headers: bearer(owner.apiKey),
        });
        assert.equal(r.status, 200, r.text);
        const s = r.json.reputationSummary as Record<string, number>;
        assert.equal(s.onChainFeedbackCount, Number(count));
        assert.equal(s.onChainAverage, Number(value));
        assert.equal(s.totalPayments, 3);
        assert.equal(s.successfulPayments, 2);
      },
    );

    await t.step(
      "an agent a plain wallet registered itself: not ours to show, pays as itself",
      async () => {
        const buyer = await externalBuyer(svc, generatePrivateKey(), 2n * USDC);
        const direct = await registerAgent(svc, buyer.account);
        assert.equal(direct, `8004:${chainId}:1`, "the registry's next id, ours or not");
        const next = await deploy("Second");
        assert.equal(next.tokenId, "2");
        const bySca = await call("GET", `/api/agent/status?scaAddress=${buyer.address}`);
        assert.equal(bySca.status, 404, bySca.text);
        assert.equal(bySca.json.error, M.agentNotFound);
        const byToken = await call("GET", "/api/agent/status?tokenId=1", {
          headers: bearer(owner.apiKey),
        });
        assert.equal(byToken.status, 404, byToken.text);
        for (const id of ["1", direct]) {
          const r = await call("GET", `/api/agent/reputation?agentId=${id}`, {
            headers: bearer(owner.apiKey),
          });
          assert.equal(r.status, 404, r.text);
          assert.equal(r.json.error, M.agentNotFound);
        }
        await buyer.deposit(1n * USDC);
        const { proof } = await gatewayProof(svc, buyer.account, { to: payTo, value: 250_000n });
        const paid = await pay(proof, { "x-agent-id": direct });
        assert.equal(paid.status, 200, paid.text);
        const logs = await waitFor(async () => {
          const l = await feedbackOn(1n);
          return l.length === 1 ? l : null;
        }, { timeoutMs: 30_000, what: "feedback for the directly registered agent" });
        assert.equal(logs[0].value, 100n);
        // Another payer naming it is refused before anything is charged.
        const other = await gatewayProof(
          svc,
          await svc.deps.chain.walletAccount(agent.managedWalletId),
          {
            from: agent.scaAddress,
            to: payTo,
            value: 250_000n,
          },
        );
        const refused = await pay(other.proof, { "x-agent-id": direct });
        assert.equal(refused.status, 403, refused.text);
        assert.equal(refused.json.error, M.x402AgentRefused);
      },
    );

    await t.step("a wallet proof that reverted when mined is replaced by a fresh one", async () => {
      const row = await beginAgent(svc.deps, { id: owner.id } as never, {
        name: "Retried",
        metadataURI: "ipfs://bafy-retried",
      });
      // The deploy's wallet intent already has a transaction that reverted on chain (as a
      // proof mined after its deadline does); gas given, so nothing refuses it before.
      await assert.rejects(
        chain.send({
          profile: "testnet",
          from: "operator",
          to: identity,
          data: encodeFunctionData({
            abi: idAbi,
            functionName: "setAgentWallet",
            args: [999n, row.scaAddress, 0n, "0x"],
          }),
          gas: 200_000n,
          intentKey: `agent:${row.id}:wallet`,
        }),
        ChainRevertError,
      );
      svc.clock.advance(RESUME_AFTER_MS + 1000);
      assert.equal(await resumeProvisioning(svc.deps, { olderThanMs: RESUME_AFTER_MS }), 1);
      const done = await merchantAgent(svc.deps, { id: owner.id } as never, "3");
      assert.equal(done.id, row.id);
      assert.equal(done.status, "ACTIVE_AGENT_PROVISIONED");
      assert.equal(await readId("getAgentWallet", [3n]), getAddress(row.scaAddress));
      const [first] = await svc.db.sql<{ status: string }[]>`
        select status from chain_transactions where intent_key = ${`agent:${row.id}:wallet`}`;
      assert.equal(first.status, "reverted");
    });

    await t.step(
      "chain time a day ahead of the wall clock: the proof still fits the window",
      async () => {
        await fetch(on.rpcUrl, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            jsonrpc: "2.0",
            id: 1,
            method: "evm_increaseTime",
            params: [86_400],
          }),
        });
        const later = await deploy("Later");
        assert.equal(later.tokenId, "4");
        assert.equal(await readId("getAgentWallet", [4n]), getAddress(later.scaAddress));
      },
    );
  } finally {
    await upstream.shutdown();
    await on.close();
  }
});
