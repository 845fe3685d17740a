/**
 * The whole bridge against Circle's real CCTP v2 contracts and Circle's USDC (compiled fixtures
 * in ../shared), deployed on two local nodes exactly as Circle's scripts wire them, with two
 * local attester keys and a signature threshold of 2 (later 1). The service is pointed at them
 * by configuration only (addresses, CCTP_ATTESTER_KEYS, CCTP_ATTESTATION_API_URL = our own
 * attester's endpoint); our other contracts are deployed on the testnet chain (and our
 * CheckoutBurner on Base_Sepolia) as `contracts:deploy` does. The nodes are shared by every step.
 */
import assert from "node:assert/strict";
import { createWalletClient, type Hex, http, pad, parseEventLogs } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { freePort, startTestService, type TestService } from "../helpers/service.ts";
import { api, cookieFrom, createMerchant } from "../helpers/accounts.ts";
import { waitFor } from "../helpers/poll.ts";
import { rpc } from "../helpers/chain.ts";
import { ANVIL_KEYS, startAnvil } from "../helpers/anvil.ts";
import {
  circleArtifact,
  circleEnv,
  deployCircle,
  linkCircle,
  manage,
  ROLES,
} from "../helpers/circle-cctp.ts";
import { modules } from "../../src/modules/index.ts";
import { bridgeModuleWith } from "../../src/modules/bridge/bridge.module.ts";
import { deployContracts } from "../../src/chain/deploy.ts";
import { silentLogger } from "../../src/log.ts";
import { restartSteps } from "./bridge-circle-restart.ts";
import { doctorSteps } from "./bridge-circle-doctor.ts";
import { shopperSteps } from "./bridge-circle-shopper.ts";

const SOURCE = "Base_Sepolia";
const USDC = circleArtifact("FiatTokenV2_1").abi;
const MT = circleArtifact("MessageTransmitterV2").abi;

Deno.test("bridge against Circle's CCTP v2 contracts (threshold 2, then 1)", async (t) => {
  const testnetNode = await startAnvil({ chainId: 5042002 });
  const baseNode = await startAnvil({ chainId: 84532 });
  let svc: TestService | undefined;
  try {
    const keys = ROLES.attesterKeys;
    const A = await deployCircle(testnetNode.rpcUrl, { domain: 26, attesters: keys, threshold: 2 });
    const B = await deployCircle(baseNode.rpcUrl, { domain: 6, attesters: keys, threshold: 2 });
    await linkCircle(A, B);
    const port = freePort();
    const baseUrl = `http://127.0.0.1:${port}`;
    const env = {
      RATE_LIMITS: "off",
      CHAINS: "testnet",
      PORT: String(port),
      BASE_URL: baseUrl,
      ...circleEnv("TESTNET", A),
      ...circleEnv("BASE_SEPOLIA", B),
      TESTNET_CONFIRMATIONS: "0",
      // A standard burn waits for one block before it is attested; a fast one does not.
      BASE_SEPOLIA_CONFIRMATIONS: "1",
      CCTP_ATTESTER_KEYS: keys.join(","),
      CCTP_ATTESTATION_API_URL: `${baseUrl}/api/cctp/attestation`,
      CCTP_FAST_FEE_BPS: "2",
      // The seller's gateway balance is withdrawn at once below: a vault without a delay (a
      // configured chain's gets a day by default).
      TESTNET_GATEWAY_WITHDRAWAL_DELAY_SECONDS: "0",
    };
    let beforeMint: (reference: string) => Promise<void> = () => Promise.resolve();
    svc = await startTestService({
      env,
      modules: modules.map((m) =>
        m.name === "bridge" ? bridgeModuleWith({ beforeMint: (r) => beforeMint(r) }) : m
      ),
    });
    const chain = svc.deps.chain;
    const call = api(svc);
    // Our own contracts beside Circle's, with Circle's USDC: `contracts:deploy --network testnet`.
    await deployContracts(chain.runtime("testnet"), chain.sender, svc.db.sql, silentLogger);

    const session = await call("POST", "/api/consumer/session", { body: {} });
    const cookie = cookieFrom(session.headers, "consumer_token")!;
    const wallet = (session.json.account as { walletAddress: `0x${string}` }).walletAddress;
    const status = async (reference: string) =>
      (await call("GET", `/api/cctp/transfer/status?reference=${reference}`)).json;
    const mineSource = () => rpc(B.rpcUrl, "evm_mine");
    const until = async (reference: string, want: string, what: string) =>
      await waitFor(async () => {
        const s = await status(reference);
        if (s.status === "failed") throw new Error(`failed: ${s.error}`);
        if (s.status === "burned") await mineSource();
        return s.status === want ? s : null;
      }, { timeoutMs: 30_000, what });
    const balance = async (d: typeof A, who: `0x${string}`) =>
      await d.client.readContract({
        address: d.usdc,
        abi: USDC,
        functionName: "balanceOf",
        args: [who],
      }) as bigint;
    const transfer = (body: Record<string, unknown>) =>
      call("POST", "/api/cctp/transfer", {
        body: { fromChain: SOURCE, toChain: "Settle_Testnet", ...body },
        cookie,
      });
    const checkout = async (amount: string) => {
      const m = await createMerchant(svc!, { businessName: `Circle shop ${amount}` });
      const key = ((await call("POST", "/api/keys", {
        cookie: m.cookie,
        body: { type: "secret", environment: "test" },
      })).json.key as { key: string }).key;
      const init = await call("POST", "/api/payments/initialize", {
        headers: { "x-api-key": key },
        body: { amount, webhookUrl: "http://127.0.0.1:9/hook" },
      });
      assert.equal(init.status, 201, init.text);
      const reference = init.json.reference as string;
      const [p] = await svc!.db.sql`select pay_to from payments where reference = ${reference}`;
      return { reference, payTo: p.payTo as `0x${string}` };
    };

    await t.step(
      "configured by addresses only; our attester answers at Circle's paths",
      async () => {
        assert.equal(chain.contract("testnet", "TokenMessengerV2"), A.messenger);
        assert.equal(chain.contract("testnet", "TestUSDC"), A.usdc);
        await chain.ensure(SOURCE);
        assert.equal(chain.contract(SOURCE, "MessageTransmitterV2"), B.transmitter);
        const fees = await fetch(`${baseUrl}/api/cctp/attestation/v2/burn/USDC/fees/6/26`);
        assert.equal(fees.status, 200);
        assert.match(fees.headers.get("content-type") ?? "", /application\/json/);
        assert.deepEqual(await fees.json(), [
          { finalityThreshold: 1000, minimumFee: 2 },
          { finalityThreshold: 2000, minimumFee: 0 },
        ]);
      },
    );

    await t.step("a plain transfer: two signatures, minted on Circle's transmitter", async () => {
      await chain.faucet(SOURCE, wallet, 100_000_000n);
      const before = await balance(A, "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4");
      const r = await transfer({
        amount: "10",
        recipient: "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4",
      });
      assert.equal(r.status, 202, r.text);
      assert.deepEqual([r.json.transferSpeed, r.json.burnAmount, r.json.maxFee], [
        "standard",
        "10.000000",
        "0.000000",
      ]);
      const ref = r.json.reference as string;
      const done = await until(ref, "minted", "the plain transfer's mint");
      assert.deepEqual(
        [done.mintedAmount, done.fee, done.finalityThresholdExecuted],
        ["10.000000", "0.000000", 2000],
      );
      const [row] = await svc!.db
        .sql`select attestation from bridge_transfers where reference = ${ref}`;
      assert.equal((row.attestation.length - 2) / 2, 130, "two 65-byte signatures");
      assert.equal(
        await balance(A, "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4") - before,
        10_000_000n,
      );
      assert.equal(await balance(B, wallet), 90_000_000n, "burned on Base_Sepolia");
    });

    await t.step("cross-chain checkout: the hook data settles the payment", async () => {
      const p = await checkout("3.5");
      const before = await balance(A, p.payTo);
      const r = await transfer({
        amount: "3.5",
        recipient: p.payTo,
        paymentReference: p.reference,
      });
      assert.equal(r.status, 202, r.text);
      const done = await until(r.json.reference as string, "minted", "the checkout mint");
      const [paid] = await svc!.db.sql`
        select status, chain_tx_hash from payments where reference = ${p.reference}`;
      assert.deepEqual([paid.status, paid.chainTxHash], ["SUCCESS", done.mintTxHash]);
      assert.equal(await balance(A, p.payTo) - before, 3_500_000n);
    });

    await t.step(
      "fee switch on: a burn without maxFee reverts; ours carry the messenger's minimum",
      async () => {
        await manage(B, { minFee: 1000n }); // 1 bps (units of 1/10,000,000)
        // What every burn used to send: maxFee 0.
        await assert.rejects(
          B.client.simulateContract({
            account: privateKeyToAccount(ANVIL_KEYS[0]),
            address: B.messenger,
            abi: circleArtifact("TokenMessengerV2").abi,
            functionName: "depositForBurn",
            args: [10_000_000n, 26, pad(wallet), B.usdc, pad("0x00"), 0n, 2000],
          }),
          /Insufficient max fee/,
        );
        const to = "0x00000000000000000000000000000000000c0ffe" as const;
        const r = await transfer({ amount: "10", recipient: to });
        assert.equal(r.status, 202, r.text);
        assert.deepEqual([r.json.burnAmount, r.json.maxFee], ["10.000000", "0.001000"]);
        const done = await until(r.json.reference as string, "minted", "the mint with a fee");
        assert.deepEqual([done.mintedAmount, done.fee, done.maxFee], [
          "9.999000",
          "0.001000",
          "0.001000",
        ]);
        assert.equal(await balance(A, to), 9_999_000n);
        assert.equal(await balance(A, ROLES.feeRecipient), 1_000n, "Circle's fee recipient");
      },
    );

    await t.step(
      "fee switch on: the shopper burns amount + fee, the merchant gets the amount",
      async () => {
        const p = await checkout("3.5");
        const short = await call("POST", "/api/consumer/session", { body: {} });
        const shortCookie = cookieFrom(short.headers, "consumer_token")!;
        const shortWallet = (short.json.account as { walletAddress: `0x${string}` }).walletAddress;
        await chain.faucet(SOURCE, shortWallet, 3_500_000n);
        const refused = await call("POST", "/api/cctp/transfer", {
          body: {
            fromChain: SOURCE,
            toChain: "Settle_Testnet",
            amount: "3.5",
            recipient: p.payTo,
            paymentReference: p.reference,
          },
          cookie: shortCookie,
        });
        assert.equal(refused.status, 400);
        assert.match(refused.headers.get("content-type") ?? "", /application\/json/);
        assert.equal(refused.json.balance, "3.500000");
        assert.match(String(refused.json.hint), /3\.500350 USDC: 3\.500000 .* 0\.000350 /);

        const before = await balance(A, p.payTo);
        const r = await transfer({
          amount: "3.5",
          recipient: p.payTo,
          paymentReference: p.reference,
        });
        assert.equal(r.status, 202, r.text);
        assert.deepEqual([r.json.burnAmount, r.json.maxFee], ["3.500350", "0.000350"]);
        const done = await until(r.json.reference as string, "minted", "the checkout with a fee");
        assert.deepEqual([done.amount, done.mintedAmount, done.fee], [
          "3.500000",
          "3.500000",
          "0.000350",
        ]);
        assert.equal(await balance(A, p.payTo) - before, 3_500_000n, "the merchant got it all");
        const [paid] = await svc!.db
          .sql`select status from payments where reference = ${p.reference}`;
        assert.equal(paid.status, "SUCCESS");
        const events = await svc!.db.sql`
        select event, payload from webhook_deliveries where reference = ${p.reference}
        order by event`;
        assert.deepEqual(events.map((e) => e.event), ["payment.auto_settled", "payment.settled"]);
        assert.equal(JSON.parse(events[0].payload).amount, 3.5, "what arrived");
      },
    );

    await t.step("fast transfer: attested at once at 1000, for the fast fee", async () => {
      const to = "0x000000000000000000000000000000000000fa57" as const;
      const r = await transfer({ amount: "5", recipient: to, transferSpeed: "fast" });
      assert.equal(r.status, 202, r.text);
      // 2 bps of 5 USDC, above the messenger's 1 bps minimum.
      assert.deepEqual([r.json.transferSpeed, r.json.maxFee], ["fast", "0.001000"]);
      const ref = r.json.reference as string;
      // No block is mined on the source: a standard burn would wait for its confirmation.
      const done = await waitFor(async () => {
        const s = await status(ref);
        return s.status === "minted" || s.status === "failed" ? s : null;
      }, { timeoutMs: 30_000, what: "the fast mint" });
      assert.deepEqual(
        [done.status, done.finalityThresholdExecuted, done.fee, done.mintedAmount],
        ["minted", 1000, "0.001000", "4.999000"],
      );
      const bad = await transfer({ amount: "1", recipient: to, transferSpeed: "instant" });
      assert.equal(bad.status, 400);
      assert.equal(bad.json.error, "transferSpeed must be standard or fast.");
    });

    await t.step(
      "another relayer delivers first, in an earlier block: minted with its tx",
      async () => {
        const relayer = relayerClient(A.rpcUrl);
        let relayed: Hex | undefined;
        let target = "";
        beforeMint = async (ref) => {
          if (ref !== target || relayed) return;
          const [row] = await svc!.db.sql`
          select message, attestation from bridge_transfers where reference = ${ref}`;
          relayed = await relayer.writeContract({
            address: A.transmitter,
            abi: MT,
            functionName: "receiveMessage",
            args: [row.message, row.attestation],
          });
          await A.client.waitForTransactionReceipt({ hash: relayed, pollingInterval: 50 });
        };
        try {
          const r = await transfer({
            amount: "1",
            recipient: "0x00000000000000000000000000000000000be1a7",
          });
          target = r.json.reference as string;
          const done = await until(target, "minted", "the relayed mint");
          assert.ok(relayed);
          assert.deepEqual([done.mintTxHash, done.mintedAmount], [relayed, "0.999900"]);
          const ours = await svc!.db.sql`
          select 1 from chain_transactions where intent_key = ${`bridge:${target}:mint`}`;
          assert.equal(ours.length, 0, "no mint of ours was sent");
        } finally {
          beforeMint = () => Promise.resolve();
        }
      },
    );

    await t.step(
      "another relayer delivers in the same block, ahead of ours: minted, never failed",
      async () => {
        const relayer = relayerClient(A.rpcUrl);
        let target = "";
        let held = false;
        beforeMint = async (ref) => {
          if (ref !== target || held) return;
          held = true;
          await rpc(A.rpcUrl, "evm_setAutomine", [false]);
        };
        try {
          const r = await transfer({
            amount: "2",
            recipient: "0x000000000000000000000000000000000005a3e0",
          });
          target = r.json.reference as string;
          await until(target, "attested", "the attestation");
          // Our receiveMessage waits in the pool; the other relayer's pays a higher tip.
          const pending = async () =>
            Object.values(
              ((await rpc(A.rpcUrl, "txpool_content")) as {
                pending: Record<string, Record<string, { to: string; hash: Hex }>>;
              }).pending,
            ).flatMap((byNonce) => Object.values(byNonce))
              .filter((tx) => tx.to?.toLowerCase() === A.transmitter.toLowerCase());
          await waitFor(async () => (await pending()).length === 1, {
            what: "our mint in the pool",
          });
          const [row] = await svc!.db.sql`
          select message, attestation from bridge_transfers where reference = ${target}`;
          const theirs = await relayer.writeContract({
            address: A.transmitter,
            abi: MT,
            functionName: "receiveMessage",
            args: [row.message, row.attestation],
            gas: 500_000n,
            maxFeePerGas: 200_000_000_000n,
            maxPriorityFeePerGas: 100_000_000_000n,
          });
          await waitFor(async () => (await pending()).length === 2, { what: "both in the pool" });
          await rpc(A.rpcUrl, "evm_mine");
          await rpc(A.rpcUrl, "evm_setAutomine", [true]);
          const block = await A.client.getBlock({ blockTag: "latest" });
          assert.equal(block.transactions[0], theirs, "theirs first in the block");
          assert.equal(block.transactions.length, 2, "ours in the same block");
          const done = await waitFor(async () => {
            const s = await status(target);
            return s.status === "minted" || s.status === "failed" ? s : null;
          }, { timeoutMs: 30_000, what: "the outcome" });
          assert.deepEqual([done.status, done.mintTxHash, done.error], ["minted", theirs, null]);
          const [ours] = await svc!.db.sql`
          select status from chain_transactions where intent_key = ${`bridge:${target}:mint`}`;
          assert.equal(ours.status, "reverted", "ours was mined after theirs and reverted");
        } finally {
          beforeMint = () => Promise.resolve();
          await rpc(A.rpcUrl, "evm_setAutomine", [true]);
        }
      },
    );

    await t.step("x402 seller withdrawal to Base_Sepolia through Circle's contracts", async () => {
      await manage(A, { minFee: 1000n });
      const seller = await createMerchant(svc!, { businessName: "Circle seller" });
      const sellerAddr = seller.walletAddress!.toLowerCase() as `0x${string}`;
      const bearer = { authorization: `Bearer ${seller.apiKey}` };
      await chain.mintUsdc({ profile: "testnet", to: sellerAddr, amount: 5_000_000n });
      const dep = await call("POST", "/api/x402/gateway/deposit", {
        headers: bearer,
        body: { fromSCA: sellerAddr, amount: "5" },
      });
      assert.equal(dep.status, 200, dep.text);
      const dest = "0x00000000000000000000000000000000000a11ce" as const;
      // Too little to cover the testnet messenger's fee: refused before anything is withdrawn.
      const tiny = await call("POST", "/api/x402/seller/balance/withdraw", {
        headers: bearer,
        body: { amount: "0.000001", destinationChain: SOURCE, destinationAddress: dest },
      });
      assert.equal(tiny.status, 400, tiny.text);
      assert.equal(tiny.json.error, "The amount does not cover the bridge fee.");
      assert.equal((await chain.gateway.balance("testnet", sellerAddr)).available, 5_000_000n);
      const w = await call("POST", "/api/x402/seller/balance/withdraw", {
        headers: bearer,
        body: { amount: "2", destinationChain: SOURCE, destinationAddress: dest },
      });
      assert.equal(w.status, 200, w.text);
      const b = w.json.bridge as { statusUrl: string };
      const s = await waitFor(async () => {
        const s = (await call("GET", b.statusUrl)).json;
        if (s.status === "failed") throw new Error(String(s.error));
        return s.status === "minted" ? s : null;
      }, { timeoutMs: 30_000, what: "the outbound mint" });
      assert.deepEqual([s.direction, s.fee, s.mintedAmount], ["outbound", "0.000200", "1.999800"]);
      assert.equal(await balance(B, dest), 1_999_800n, "minted on Base_Sepolia, less the fee");
      assert.equal(await balance(A, sellerAddr), 0n, "burned on the testnet chain");
    });

    await t.step("threshold 1: the local attester signs once", async () => {
      await manage(A, { threshold: 1 });
      const to = "0x0000000000000000000000000000000000000001" as const;
      const r = await transfer({ amount: "1", recipient: to });
      assert.equal(r.status, 202, r.text);
      const ref = r.json.reference as string;
      await until(ref, "minted", "the mint at threshold 1");
      const [row] = await svc!.db
        .sql`select attestation from bridge_transfers where reference = ${ref}`;
      assert.equal((row.attestation.length - 2) / 2, 65, "one signature");
      const logs = parseEventLogs({
        abi: MT,
        logs: (await A.client.getTransactionReceipt({
          hash: (await status(ref)).mintTxHash as Hex,
        })).logs,
      });
      assert.ok(logs.some((l) => l.eventName === "MessageReceived"));
    });

    await shopperSteps(t, { A, B, svc });
    await restartSteps(t, { A, B, env, svc });
    await doctorSteps(t, { A, B, env, svc, baseNode });
  } finally {
    await svc?.close();
    await testnetNode.stop();
    await baseNode.stop();
  }
});

/** A third party that relays attested messages (any funded account). */
function relayerClient(rpcUrl: string) {
  return createWalletClient({
    account: privateKeyToAccount(ANVIL_KEYS[3]),
    chain: {
      id: 5042002,
      name: "testnet",
      nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
      rpcUrls: { default: { http: [rpcUrl] } },
    },
    transport: http(rpcUrl),
  });
}
