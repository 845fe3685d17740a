/**
 * Standard x402 against our service on a real anvil: an unmodified client from the npm registry
 * (`@x402/fetch` with `@x402/evm`'s exact scheme) pays a listing end to end and gets the
 * upstream's body; a v1 `X-PAYMENT` payment; replays and upstream failures charge nothing; the
 * self-hosted facilitator driven by the standard `HTTPFacilitatorClient`; and the agent port
 * replaced through the module's wiring.
 */
import assert from "node:assert/strict";
import { getAddress, type Hex, toHex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { decodePaymentResponseHeader, wrapFetchWithPayment, x402Client } from "@x402/fetch";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { externalBuyer, facilitatorClient, gatewayProof, X402_PROFILE } from "../helpers/x402.ts";
import { TRANSFER_WITH_AUTHORIZATION_TYPES } from "../../src/chain/gateway.ts";
import { createApp } from "../../src/app.ts";
import { x402Module } from "../../src/modules/x402/x402.module.ts";
import type { X402AgentPort, X402PaymentRecord } from "../../src/modules/x402/x402.types.ts";
import { DomainError } from "../../src/errors.ts";
import { reconcilePending } from "../../src/modules/x402/x402.reconcile.ts";
import { defaultAgentPort } from "../../src/modules/x402/x402.types.ts";
import { TestUSDC } from "../../src/chain/contracts/artifacts/index.ts";

const USDC = 1_000_000n;

Deno.test("x402 standard protocol: @x402/fetch client, v1, facilitator, agent port", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const calls: { method: string; url: URL; body: string }[] = [];
  let answer = (): Response => Response.json({ forecast: "sunny", high: 24 });
  const upstream = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (req) => {
      calls.push({ method: req.method, url: new URL(req.url), body: await req.text() });
      return answer();
    },
  );
  const upstreamUrl = `http://127.0.0.1:${upstream.addr.port}`;
  const call = api(svc);
  const chain = svc.deps.chain;
  const usdcOf = (a: string) => chain.usdcBalance(X402_PROFILE, a.toLowerCase() as `0x${string}`);
  // Settlements and relays only: a relayer's first use adds its gas top-up (`gas:…`).
  const txCount = async () =>
    Number(
      (await svc.db.sql`select count(*)::int as n from chain_transactions
        where intent_key not like ${"gas:%"}`)[0].n,
    );
  try {
    const seller = await createMerchant(svc);
    const created = await call("POST", "/api/x402/listings", {
      headers: { authorization: `Bearer ${seller.apiKey}` },
      body: {
        slug: "forecast",
        upstreamUrl: `${upstreamUrl}/forecast`,
        price: "0.25",
        methods: ["GET", "POST"],
        description: "Tomorrow's forecast",
      },
    });
    assert.equal(created.status, 201, created.text);
    const buyer = privateKeyToAccount(generatePrivateKey());
    await chain.mintUsdc({
      profile: X402_PROFILE,
      to: buyer.address.toLowerCase() as `0x${string}`,
      amount: 10n * USDC,
    });
    const resource = `${svc.baseUrl}/x402/forecast`;
    // The client's standard configuration: the exact scheme for our chains, and our (test) USDC
    // opted into its spend controls with a per-payment cap (it refuses unknown tokens by default).
    const payingClient = () => {
      const client = new x402Client();
      registerExactEvmScheme(client, { signer: buyer });
      client.setSpendControls({
        allowedAssets: [{
          network: "eip155:5042002",
          asset: getAddress(chain.contract(X402_PROFILE, "TestUSDC")),
          maxAmountPerPayment: "1000000",
        }],
      });
      return client;
    };

    await t.step("an unpaid call: 402, v2 PAYMENT-REQUIRED and the v1 body", async () => {
      const r = await fetch(resource);
      assert.equal(r.status, 402);
      const v2 = JSON.parse(atob(r.headers.get("payment-required")!));
      const usdc = getAddress(chain.contract(X402_PROFILE, "TestUSDC"));
      assert.deepEqual(v2.accepts[0], {
        scheme: "exact",
        network: "eip155:5042002",
        amount: "250000",
        asset: usdc,
        payTo: seller.walletAddress,
        maxTimeoutSeconds: 120,
        extra: { name: "USD Coin", version: "2" },
      });
      // Issue 27: the batch-settlement scheme is offered beside it (x402-channels.test.ts).
      assert.ok(v2.accepts.some((a: { scheme: string }) => a.scheme === "batch-settlement"));
      assert.equal(v2.x402Version, 2);
      assert.equal(v2.resource.url, resource);
      const v1 = await r.json();
      assert.equal(v1.x402Version, 1);
      assert.equal(v1.accepts[0].network, "eip155:5042002");
      assert.equal(v1.accepts[0].maxAmountRequired, "250000");
      assert.equal(v1.accepts[0].asset, usdc);
      assert.equal(v1.accepts[0].payTo, seller.walletAddress);
    });

    await t.step("@x402/fetch + @x402/evm pay the listing end to end", async () => {
      const client = payingClient();
      const payingFetch = wrapFetchWithPayment(fetch, client);
      const before = {
        buyer: await usdcOf(buyer.address),
        seller: await usdcOf(seller.walletAddress!),
      };
      const r = await payingFetch(`${resource}?city=Porto`);
      assert.equal(r.status, 200, await r.clone().text());
      assert.deepEqual(await r.json(), { forecast: "sunny", high: 24 });
      assert.equal(calls.at(-1)!.url.pathname, "/forecast");
      assert.equal(calls.at(-1)!.url.searchParams.get("city"), "Porto");
      const settled = decodePaymentResponseHeader(r.headers.get("payment-response")!);
      assert.equal(settled.success, true);
      assert.equal(settled.network, "eip155:5042002");
      assert.equal(settled.payer, buyer.address);
      assert.match(settled.transaction, /^0x[0-9a-f]{64}$/);
      assert.equal(await usdcOf(buyer.address), before.buyer - 250_000n);
      assert.equal(await usdcOf(seller.walletAddress!), before.seller + 250_000n);
      const [row] = await svc.db.sql`
        select status, scheme, tx_hash from x402_payments where tx_hash = ${settled.transaction}`;
      assert.deepEqual({ ...row }, {
        status: "SUCCESS",
        scheme: "exact",
        txHash: settled.transaction,
      });
    });

    const now = () => BigInt(Math.floor(svc.clock.now().getTime() / 1000));
    const signExact = async (
      over: {
        value?: bigint;
        to?: string;
        nonce?: Hex;
        validBefore?: bigint;
        account?: typeof buyer;
      } = {},
    ) => {
      const payer = over.account ?? buyer;
      const authorization = {
        from: payer.address,
        to: getAddress(over.to ?? seller.walletAddress!),
        value: over.value ?? 250_000n,
        validAfter: now() - 600n,
        validBefore: over.validBefore ?? now() + 120n,
        nonce: over.nonce ?? toHex(crypto.getRandomValues(new Uint8Array(32))),
      };
      const signature = await payer.signTypedData({
        domain: chain.gateway.domain(X402_PROFILE, "usdc"),
        types: TRANSFER_WITH_AUTHORIZATION_TYPES,
        primaryType: "TransferWithAuthorization",
        message: authorization,
      });
      return {
        signature,
        authorization: {
          ...authorization,
          value: authorization.value.toString(),
          validAfter: authorization.validAfter.toString(),
          validBefore: authorization.validBefore.toString(),
        },
      };
    };
    const v1Header = (payload: unknown) =>
      btoa(JSON.stringify({ x402Version: 1, scheme: "exact", network: "eip155:5042002", payload }));

    await t.step("v1 X-PAYMENT: paid POST, X-PAYMENT-RESPONSE; its replay refused", async () => {
      const header = v1Header(await signExact());
      const r = await fetch(resource, {
        method: "POST",
        headers: { "X-PAYMENT": header, "content-type": "application/json" },
        body: JSON.stringify({ days: 3 }),
      });
      assert.equal(r.status, 200, await r.clone().text());
      assert.deepEqual(await r.json(), { forecast: "sunny", high: 24 });
      assert.equal(calls.at(-1)!.method, "POST");
      assert.deepEqual(JSON.parse(calls.at(-1)!.body), { days: 3 });
      const settled = JSON.parse(atob(r.headers.get("x-payment-response")!));
      assert.equal(settled.success, true);
      const sent = await txCount();
      const seen = calls.length;
      const replay = await fetch(resource, { headers: { "X-PAYMENT": header } });
      assert.equal(replay.status, 402);
      assert.equal((await replay.json()).error, "invalid_exact_evm_nonce_already_used");
      assert.equal(await txCount(), sent);
      assert.equal(calls.length, seen);
    });

    await t.step(
      "wrong amount, wrong payee, garbage, a validBefore of 2^255: 402 with the reason, nothing sent",
      async () => {
        const sent = await txCount();
        const cases: [string, string][] = [
          [
            v1Header(await signExact({ value: 1n })),
            "invalid_exact_evm_payload_authorization_value_mismatch",
          ],
          [
            v1Header(await signExact({ to: buyer.address })),
            "invalid_exact_evm_recipient_mismatch",
          ],
          ["%%%", "invalid_payload"],
          // Beyond any stored time (it answered 500 before the bound).
          [
            v1Header(await signExact({ validBefore: 2n ** 255n })),
            "invalid_exact_evm_payload_authorization_valid_before",
          ],
        ];
        for (const [header, reason] of cases) {
          const r = await fetch(resource, { headers: { "X-PAYMENT": header } });
          assert.equal(r.status, 402);
          assert.equal((await r.json()).error, reason);
          assert.equal(JSON.parse(atob(r.headers.get("payment-required")!)).error, reason);
        }
        assert.equal(await txCount(), sent);
      },
    );

    await t.step(
      "one wallet, 10 authorizations at once, 2 calls' worth: 2 served and settled, 8 refused",
      async () => {
        const poor = privateKeyToAccount(generatePrivateKey());
        await chain.mintUsdc({
          profile: X402_PROFILE,
          to: poor.address.toLowerCase() as `0x${string}`,
          amount: 500_000n,
        });
        const sent = await txCount();
        const seen = calls.length;
        const headers = await Promise.all(
          Array.from({ length: 10 }, async () => v1Header(await signExact({ account: poor }))),
        );
        const answers = await Promise.all(headers.map(async (h) => {
          const r = await fetch(resource, { headers: { "X-PAYMENT": h } });
          return { status: r.status, body: await r.json() };
        }));
        const paid = answers.filter((a) => a.status === 200);
        const refused = answers.filter((a) => a.status === 402);
        assert.equal(paid.length, 2, JSON.stringify(answers));
        assert.equal(refused.length, 8, JSON.stringify(answers));
        for (const r of refused) {
          assert.equal(r.body.error, "invalid_exact_evm_insufficient_balance");
        }
        assert.equal(calls.length, seen + 2, "the upstream served the paid calls only");
        assert.equal(await txCount(), sent + 2, "no settlement sent that could revert");
        assert.equal(await usdcOf(poor.address), 0n);
      },
    );

    await t.step("upstream 503: 500, nothing charged", async () => {
      answer = () => new Response("down", { status: 503 });
      const before = await usdcOf(buyer.address);
      const sent = await txCount();
      const r = await fetch(resource, { headers: { "X-PAYMENT": v1Header(await signExact()) } });
      assert.equal(r.status, 500);
      assert.equal((await r.json()).error, "Upstream API returned 503");
      assert.equal(await usdcOf(buyer.address), before);
      assert.equal(await txCount(), sent);
      answer = () => Response.json({ forecast: "sunny", high: 24 });
    });

    await t.step("the facilitator through the standard HTTPFacilitatorClient", async () => {
      const facilitator = facilitatorClient(svc, seller.apiKey);
      const supported = await facilitator.getSupported();
      assert.ok(
        supported.kinds.some((k) =>
          k.x402Version === 2 && k.scheme === "exact" && k.network === "eip155:5042002"
        ),
      );
      const requirements = {
        scheme: "exact",
        network: "eip155:5042002" as const,
        amount: "70000",
        asset: getAddress(chain.contract(X402_PROFILE, "TestUSDC")),
        payTo: seller.walletAddress!,
        maxTimeoutSeconds: 60,
        extra: { name: "USD Coin", version: "2" },
      };
      const client = payingClient();
      const payload = await client.createPaymentPayload({
        x402Version: 2,
        resource: {
          url: "https://seller.example/data",
          description: "data",
          mimeType: "application/json",
        },
        accepts: [requirements],
      });
      const verified = await facilitator.verify(payload, requirements);
      assert.equal(verified.isValid, true, JSON.stringify(verified));
      assert.equal(verified.payer, buyer.address);
      const wrong = await facilitator.verify(payload, { ...requirements, amount: "1" });
      assert.equal(wrong.isValid, false);
      const before = await usdcOf(seller.walletAddress!);
      const settled = await facilitator.settle(payload, requirements);
      assert.equal(settled.success, true, JSON.stringify(settled));
      assert.equal(await usdcOf(seller.walletAddress!), before + 70_000n);
      const again = await facilitator.settle(payload, requirements);
      assert.equal(again.success, false);
      assert.equal(again.errorReason, "invalid_exact_evm_nonce_already_used");
      const anonymous = await call("POST", "/api/x402/facilitator/settle", {
        body: { paymentPayload: {}, paymentRequirements: requirements },
      });
      assert.equal(anonymous.status, 401);

      // A payment to an address that is not the merchant's: not settled on our gas.
      const stranger = privateKeyToAccount(generatePrivateKey()).address;
      const toStranger = { ...requirements, payTo: stranger };
      const strangerPayload = await client.createPaymentPayload({
        x402Version: 2,
        resource: { url: "https://seller.example/data", description: "d", mimeType: "text/plain" },
        accepts: [toStranger],
      });
      const sent = await txCount();
      const notYours = await facilitator.settle(strangerPayload, toStranger);
      assert.equal(notYours.success, false, JSON.stringify(notYours));
      assert.equal(notYours.errorReason, "invalid_exact_evm_recipient_not_yours");
      assert.equal(await usdcOf(stranger), 0n);
      assert.equal(await txCount(), sent, "nothing sent");
    });

    await t.step(
      "the facilitator lives on the testnet: production is neither offered nor settled",
      async () => {
        assert.ok(chain.has("production"), "the service runs production too");
        const production = `eip155:${chain.chainId("production")}` as `${string}:${string}`;
        const facilitator = facilitatorClient(svc, seller.apiKey);
        const supported = await facilitator.getSupported();
        assert.deepEqual([...new Set(supported.kinds.map((k) => k.network))], ["eip155:5042002"]);
        assert.deepEqual(Object.keys(supported.signers), ["eip155:5042002"]);
        const usdc = getAddress(chain.contract("production", "TestUSDC"));
        await chain.mintUsdc({
          profile: "production",
          to: buyer.address.toLowerCase() as `0x${string}`,
          amount: 1n * USDC,
        });
        const requirements = {
          scheme: "exact",
          network: production,
          amount: "10000",
          asset: usdc,
          payTo: seller.walletAddress!,
          maxTimeoutSeconds: 60,
          extra: { name: "USD Coin", version: "2" },
        };
        const client = new x402Client();
        registerExactEvmScheme(client, { signer: buyer });
        client.setSpendControls({
          allowedAssets: [{ network: production, asset: usdc, maxAmountPerPayment: "1000000" }],
        });
        const payload = await client.createPaymentPayload({
          x402Version: 2,
          resource: {
            url: "https://seller.example/data",
            description: "d",
            mimeType: "text/plain",
          },
          accepts: [requirements],
        });
        const before = await chain.usdcBalance(
          "production",
          buyer.address.toLowerCase() as `0x${string}`,
        );
        const verified = await facilitator.verify(payload, requirements);
        assert.equal(verified.isValid, false);
        assert.equal(verified.invalidReason, "invalid_network");
        const settled = await facilitator.settle(payload, requirements);
        assert.equal(settled.success, false);
        assert.equal(settled.errorReason, "invalid_network");
        assert.equal(
          await chain.usdcBalance("production", buyer.address.toLowerCase() as `0x${string}`),
          before,
          "no production USDC moved",
        );
      },
    );

    await t.step("the agent port replaced through x402Module's wiring", async () => {
      const recorded: X402PaymentRecord[] = [];
      const seen: unknown[] = [];
      const port: X402AgentPort = {
        verifyAgent(input) {
          seen.push(input);
          if (input.agentId === "8004:5042002:666") {
            return Promise.reject(new DomainError("x402_agent_refused"));
          }
          return Promise.resolve();
        },
        paymentRecorded(p) {
          recorded.push(p);
          return Promise.reject(new Error("the port failing must not fail the call"));
        },
      };
      const app = createApp(svc.deps, {
        modules: [x402Module({ agentPort: () => port })],
        readinessChecks: [],
      });
      // A gateway proof needs a gateway balance: this buyer deposits on the contract itself.
      const funded = await externalBuyer(svc, generatePrivateKey(), 5n * USDC);
      await funded.deposit(1n * USDC);
      const payAs = async (agentId: string) => {
        const { proof } = await gatewayProof(svc, funded.account, {
          to: seller.walletAddress!,
          value: 250_000n,
        });
        return await app.request("/api/x402/pay", {
          method: "POST",
          headers: {
            "content-type": "application/json",
            "x-agent-id": agentId,
            "x-agent-signature": "0xabc",
          },
          body: JSON.stringify({ slug: "forecast", method: "GET", paymentProof: proof }),
        });
      };
      const refused = await payAs("8004:5042002:666");
      assert.equal(refused.status, 403);
      assert.equal(recorded.length, 0, "refused before anything was recorded");
      const ok = await payAs("8004:5042002:1");
      assert.equal(ok.status, 200, await ok.clone().text());
      assert.equal(recorded.length, 1);
      assert.equal(recorded[0].status, "SUCCESS");
      assert.equal(recorded[0].agentId, "8004:5042002:1");
      assert.equal(recorded[0].payer, funded.address.toLowerCase());
      assert.deepEqual(
        { ...(seen.at(-1) as Record<string, unknown>), proof: undefined },
        {
          agentId: "8004:5042002:1",
          signature: "0xabc",
          payer: funded.address.toLowerCase(),
          proof: undefined,
        },
      );
    });

    await t.step(
      "a PENDING exact attempt a third party relayed on the token: the sweep records SUCCESS",
      async () => {
        const signed = await signExact();
        const a = signed.authorization;
        const old = new Date(svc.clock.now().getTime() - 10 * 60_000);
        await svc.db.sql`insert into x402_payments (scheme, chain_id, payer, payee, amount, nonce,
          valid_after, valid_before, status, created_at, listing_slug)
        values ('exact', 5042002, ${a.from.toLowerCase()}, ${a.to.toLowerCase()}, ${a.value},
          ${a.nonce}, ${a.validAfter}, ${a.validBefore}, 'PENDING', ${old}, 'forecast')`;
        const relayer = await externalBuyer(svc, generatePrivateKey(), 1n);
        const hash = await relayer.wallet.writeContract({
          address: chain.contract(X402_PROFILE, "TestUSDC"),
          abi: TestUSDC.abi,
          functionName: "transferWithAuthorization",
          args: [
            a.from,
            a.to,
            BigInt(a.value),
            BigInt(a.validAfter),
            BigInt(a.validBefore),
            a.nonce,
            signed.signature,
          ],
        });
        await relayer.mined(hash);
        const r = await reconcilePending({ ...svc.deps, agents: defaultAgentPort });
        assert.deepEqual(r, { settled: 1, failed: 0, waiting: 0 });
        const [row] = await svc.db.sql`select status, tx_hash from x402_payments
          where nonce = ${a.nonce.toLowerCase()}`;
        assert.deepEqual({ ...row }, { status: "SUCCESS", txHash: hash });
      },
    );
  } finally {
    await upstream.shutdown();
    await svc.close();
  }
});
