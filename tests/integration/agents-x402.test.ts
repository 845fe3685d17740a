/**
 * An agent pays x402 calls from its smart account on a real anvil, PostgreSQL and upstream: the
 * account deposits into the gateway through calls its owner sends, the owner signs the gateway
 * proof for the account (valid by ERC-1271) and the X-Agent-Signature; each settled or failed
 * call lands in the agent's record and reputation and as feedback in the on-chain registry; a
 * call naming the agent but paid by someone else, or with a wrong agent signature, is refused
 * before anything is charged.
 */
import assert from "node:assert/strict";
import { encodeFunctionData, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { waitFor } from "../helpers/poll.ts";
import { externalBuyer, gatewayProof, randomNonce, X402_PROFILE } from "../helpers/x402.ts";
import { GatewayVault, TestUSDC } from "../../src/chain/contracts/artifacts/index.ts";
import { TRANSFER_WITH_AUTHORIZATION_TYPES } from "../../src/chain/gateway.ts";
import { AGENT_PAYMENT_TYPES } from "../../src/chain/agents.ts";
import { encodeGatewayProof } from "../../src/modules/x402/x402.rules.ts";
import { M } from "../../src/http/messages.ts";

const USDC = 1_000_000n;

Deno.test("agents × x402: the smart account pays (ERC-1271), reputation follows", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  let upstreamDown = false;
  const upstream = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () =>
      upstreamDown ? new Response("down", { status: 503 }) : Response.json({ forecast: "sunny" }),
  );
  const call = api(svc);
  const chain = svc.deps.chain;
  const p = X402_PROFILE;
  try {
    const [seller, owner] = await Promise.all([createMerchant(svc), createMerchant(svc)]);
    const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
    const listing = await call("POST", "/api/x402/listings", {
      headers: bearer(seller.apiKey),
      body: {
        slug: "forecast",
        upstreamUrl: `http://127.0.0.1:${upstream.addr.port}/forecast`,
        price: "0.25",
        methods: ["GET"],
      },
    });
    assert.equal(listing.status, 201, listing.text);
    const payTo = seller.walletAddress!.toLowerCase() as `0x${string}`;

    const deployed = await call("POST", "/api/agent/deploy", {
      headers: bearer(owner.apiKey),
      body: { name: "Shopper", metadataURI: "ipfs://bafyshopper" },
    });
    assert.equal(deployed.status, 201, deployed.text);
    const agent = deployed.json.agent as Record<string, string>;
    const agentId = deployed.json.agentId as string;
    const sca = agent.scaAddress as `0x${string}`;
    const ownerAccount = await chain.walletAccount(agent.managedWalletId);
    const gateway = chain.contract(p, "GatewayVault");

    await t.step("the account deposits into the gateway through its owner's calls", async () => {
      await chain.mintUsdc({ profile: p, to: sca, amount: 5n * USDC });
      const exec = (target: `0x${string}`, data: Hex, n: string) =>
        chain.agents.execute(p, {
          ownerWalletId: agent.managedWalletId,
          sca,
          target,
          data,
          intentKey: `test:${n}:${crypto.randomUUID()}`,
        });
      await exec(
        chain.contract(p, "TestUSDC"),
        encodeFunctionData({
          abi: TestUSDC.abi,
          functionName: "approve",
          args: [gateway, 2n * USDC],
        }),
        "approve",
      );
      await exec(
        gateway,
        encodeFunctionData({ abi: GatewayVault.abi, functionName: "deposit", args: [2n * USDC] }),
        "deposit",
      );
      assert.equal(await chain.usdcBalance(p, sca), 3n * USDC);
      // The balance is in the owner's (full) record; the public lookup shows the basic one.
      const status = await call("GET", `/api/agent/status?scaAddress=${sca}`, {
        headers: bearer(owner.apiKey),
      });
      assert.equal((status.json.agent as Record<string, unknown>).usdcBalance, "3.000000");
    });

    /** A gateway proof from the account, signed by its owner, and the agent's signature. */
    const agentProof = async (signer = ownerAccount) => {
      const now = BigInt(Math.floor(svc.clock.now().getTime() / 1000));
      const authorization = {
        from: sca,
        to: payTo,
        value: 250_000n,
        validAfter: now - 5n,
        validBefore: now + 300n,
        nonce: randomNonce(),
      };
      const domain = chain.gateway.domain(p, "gateway");
      const signature = await signer.signTypedData({
        domain,
        types: TRANSFER_WITH_AUTHORIZATION_TYPES,
        primaryType: "TransferWithAuthorization",
        message: authorization,
      });
      const agentSignature = await signer.signTypedData({
        domain: chain.agents.domain(p),
        types: AGENT_PAYMENT_TYPES,
        primaryType: "AgentPayment",
        message: {
          agentId: BigInt(agent.tokenId),
          timestamp: authorization.validAfter,
          nonce: authorization.nonce,
        },
      });
      return {
        proof: encodeGatewayProof({ chainId: domain.chainId, signature, authorization }),
        agentSignature,
      };
    };
    const pay = (proof: string, headers: Record<string, string>) =>
      call("POST", "/api/x402/pay", {
        headers,
        body: { slug: "forecast", method: "GET", paymentProof: proof },
      });
    const gatewayOf = async (a: `0x${string}`) => (await chain.gateway.balance(p, a)).available;

    await t.step("the account pays a proof its owner signed (ERC-1271), as the agent", async () => {
      const before = await gatewayOf(sca);
      const { proof, agentSignature } = await agentProof();
      const r = await pay(proof, { "x-agent-id": agentId, "x-agent-signature": agentSignature });
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.json.data, { forecast: "sunny" });
      assert.equal((r.json.settlement as Record<string, unknown>).amount, "0.250000");
      assert.equal(await gatewayOf(sca), before - 250_000n);
    });

    await t.step("a failed call (upstream down) is recorded and charges nothing", async () => {
      upstreamDown = true;
      const before = await gatewayOf(sca);
      const { proof } = await agentProof();
      const r = await pay(proof, { "x-agent-id": agentId });
      assert.equal(r.status, 500, r.text);
      assert.equal(await gatewayOf(sca), before);
      upstreamDown = false;
    });

    await t.step(
      "refused before anything is charged: another payer, a wrong signature",
      async () => {
        const buyer = await externalBuyer(svc, generatePrivateKey(), 5n * USDC);
        await buyer.deposit(1n * USDC);
        const other = await gatewayProof(svc, buyer.account, { to: payTo, value: 250_000n });
        const r1 = await pay(other.proof, { "x-agent-id": agentId });
        assert.equal(r1.status, 403, r1.text);
        assert.equal(r1.json.error, M.x402AgentRefused);
        const { proof } = await agentProof();
        const forged = await agentProof(privateKeyToAccount(generatePrivateKey()));
        const before = await gatewayOf(sca);
        const r2 = await pay(proof, {
          "x-agent-id": agentId,
          "x-agent-signature": forged.agentSignature,
        });
        assert.equal(r2.status, 403, r2.text);
        assert.equal(r2.json.error, M.x402AgentRefused);
        const r3 = await pay(proof, { "x-agent-id": "8004:5042002:999999" });
        assert.equal(r3.status, 403, r3.text);
        assert.equal(await gatewayOf(sca), before);
        assert.equal(await gatewayOf(buyer.address), 1n * USDC);
      },
    );

    await t.step("the agent's record and reputation from its payments", async () => {
      const status = await call("GET", `/api/agent/status?tokenId=${agent.tokenId}`, {
        headers: bearer(owner.apiKey),
      });
      assert.equal(status.status, 200, status.text);
      const a = status.json.agent as Record<string, unknown>;
      assert.equal(a.paymentCount, 2);
      assert.equal(a.totalPaid, 0.25);
      assert.equal(a.reputation, 50);
      const recent = a.recentPayments as { amount: number; status: string; timestamp: string }[];
      assert.deepEqual(recent.map((x) => [x.amount, x.status]), [[0.25, "FAILED"], [
        0.25,
        "SUCCESS",
      ]]);
      assert.ok(Date.parse(recent[0].timestamp) >= Date.parse(recent[1].timestamp));

      const rep = await call("GET", `/api/agent/reputation?agentId=${agent.tokenId}`, {
        headers: bearer(owner.apiKey),
      });
      assert.equal(rep.status, 200, rep.text);
      const s = rep.json.reputationSummary as Record<string, number>;
      assert.equal(s.estimatedScore, 50);
      assert.equal(s.totalPayments, 2);
      assert.equal(s.successfulPayments, 1);
      assert.equal(s.totalVolumeUSDC, 0.25);
      assert.equal((rep.json.recentPayments as unknown[]).length, 2);
    });

    await t.step("each settled or failed call is feedback in the on-chain registry", async () => {
      const summary = await waitFor(async () => {
        const s = await chain.agents.summary(p, BigInt(agent.tokenId));
        return s.count === 2n ? s : null;
      }, { what: "two feedbacks on chain" });
      assert.equal(summary.value, 50n);
    });

    await t.step(
      "standard /x402/{slug}: X-Agent-Signature is checked there too (wrong: 403, right: 200)",
      async () => {
        const now = BigInt(Math.floor(svc.clock.now().getTime() / 1000));
        const authorization = {
          from: sca,
          to: payTo,
          value: 250_000n,
          validAfter: now - 5n,
          validBefore: now + 300n,
          nonce: randomNonce(),
        };
        const signature = await ownerAccount.signTypedData({
          domain: chain.gateway.domain(p, "usdc"),
          types: TRANSFER_WITH_AUTHORIZATION_TYPES,
          primaryType: "TransferWithAuthorization",
          message: authorization,
        });
        const header = btoa(JSON.stringify({
          x402Version: 1,
          scheme: "exact",
          network: `eip155:${chain.chainId(p)}`,
          payload: {
            signature,
            authorization: {
              ...authorization,
              value: authorization.value.toString(),
              validAfter: authorization.validAfter.toString(),
              validBefore: authorization.validBefore.toString(),
            },
          },
        }));
        const agentSig = (signer: typeof ownerAccount) =>
          signer.signTypedData({
            domain: chain.agents.domain(p),
            types: AGENT_PAYMENT_TYPES,
            primaryType: "AgentPayment",
            message: {
              agentId: BigInt(agent.tokenId),
              timestamp: authorization.validAfter,
              nonce: authorization.nonce,
            },
          });
        const before = await chain.usdcBalance(p, sca);
        const paid = (agentSignature: string) =>
          fetch(`${svc.baseUrl}/x402/forecast`, {
            headers: {
              "X-PAYMENT": header,
              "x-agent-id": agentId,
              "x-agent-signature": agentSignature,
            },
          });
        const wrong = await paid(await agentSig(privateKeyToAccount(generatePrivateKey())));
        const wrongBody = await wrong.json();
        assert.equal(wrong.status, 403, JSON.stringify(wrongBody));
        assert.equal(wrongBody.error, M.x402AgentRefused);
        assert.equal(await chain.usdcBalance(p, sca), before);
        const right = await paid(await agentSig(ownerAccount));
        assert.equal(right.status, 200, await right.clone().text());
        assert.deepEqual(await right.json(), { forecast: "sunny" });
        assert.equal(await chain.usdcBalance(p, sca), before - 250_000n);
      },
    );
  } finally {
    await upstream.shutdown();
    await svc.close();
  }
});
