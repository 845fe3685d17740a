/**
 * Bridging (CCTP v2) on two anvils, shared by every step of this file: the testnet settlement
 * chain and Base_Sepolia, started on first use. The source chain needs one confirmation before
 * the local attester signs, so a burn waits for attestation until the test mines a block: the
 * wait (attempts, next poll) is visible in the status.
 */
import assert from "node:assert/strict";
import { getAddress, type Hex, keccak256, parseEventLogs } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { startTestService } from "../helpers/service.ts";
import { api, cookieFrom, createMerchant } from "../helpers/accounts.ts";
import { startReceiver } from "../helpers/receiver.ts";
import { Webhook } from "standardwebhooks";
import { waitFor } from "../helpers/poll.ts";
import { rpc } from "../helpers/chain.ts";
import { MessageTransmitterV2, TestUSDC } from "../../src/chain/contracts/artifacts/index.ts";
import { ANVIL_KEYS } from "../helpers/anvil.ts";
import { M } from "../../src/http/messages.ts";
import { parsePrometheus, sample } from "../helpers/prometheus.ts";
import { createTestDatabase } from "../helpers/db.ts";
import { mintStep } from "../../src/modules/bridge/bridge.steps.ts";
import { modules } from "../../src/modules/index.ts";
import { bridgeModuleWith } from "../../src/modules/bridge/bridge.module.ts";
import { createWalletClient, http } from "viem";

const SOURCE = "Base_Sepolia";
const RECIPIENT = "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4";

Deno.test("bridge: burn on a source chain, attest, mint on Settle_Testnet", async (t) => {
  // What happens when a mint step begins (a step sets it to act as a third-party relayer).
  let beforeMint: (reference: string) => Promise<void> = () => Promise.resolve();
  const svc = await startTestService({
    env: { RATE_LIMITS: "off", BASE_SEPOLIA_CONFIRMATIONS: "1" },
    modules: modules.map((m) =>
      m.name === "bridge" ? bridgeModuleWith({ beforeMint: (r) => beforeMint(r) }) : m
    ),
  });
  const call = api(svc);
  const chain = svc.deps.chain;
  try {
    const session = await call("POST", "/api/consumer/session", { body: {} });
    const cookie = cookieFrom(session.headers, "consumer_token")!;
    const wallet = (session.json.account as { walletAddress: `0x${string}` }).walletAddress;
    const status = async (reference: string) =>
      (await call("GET", `/api/cctp/transfer/status?reference=${reference}`)).json;

    await t.step("descriptors: five source chains, Settle_Testnet the destination", async () => {
      const r = await call("GET", "/api/cctp/transfer");
      assert.equal(r.status, 200);
      const sources = r.json.sourceChains as { id: string; circleBlockchain: string }[];
      assert.deepEqual(sources.map((s) => s.id), [
        "Arbitrum_Sepolia",
        "Base_Sepolia",
        "Optimism_Sepolia",
        "Ethereum_Sepolia",
        "Polygon_Amoy_Testnet",
      ]);
      assert.equal(sources[1].circleBlockchain, "BASE-SEPOLIA");
      assert.deepEqual(r.json.destinationChains, [
        { id: "Settle_Testnet", label: "Settle Testnet", testnet: true },
      ]);
      assert.deepEqual(chain.startedSources(), [], "no source chain is started before use");
    });

    await t.step("the balance lists no source chain before one runs, and starts none", async () => {
      const r = await call("GET", "/api/consumer/balance", { cookie });
      assert.equal(r.status, 200);
      const balances = r.json.balances as { chain: string }[];
      assert.deepEqual(balances.map((b) => b.chain), chain.profiles());
      assert.deepEqual(chain.startedSources(), [], "asking for a balance started no chain");
    });

    await t.step("the spec's error texts", async () => {
      const body = {
        fromChain: SOURCE,
        toChain: "Settle_Testnet",
        amount: "1",
        recipient: RECIPIENT,
      };
      const noCookie = await call("POST", "/api/cctp/transfer", { body });
      assert.deepEqual([noCookie.status, noCookie.json.error], [
        401,
        "Sign in required to bridge funds.",
      ]);
      const badCookie = await call("POST", "/api/cctp/transfer", {
        body,
        cookie: "consumer_token=nonsense",
      });
      assert.equal(badCookie.json.error, "Sign in required to bridge funds.");
      for (const missing of ["fromChain", "toChain", "amount", "recipient"]) {
        const partial: Record<string, unknown> = { ...body };
        delete partial[missing];
        const r = await call("POST", "/api/cctp/transfer", { body: partial, cookie });
        assert.deepEqual(
          [r.status, r.json.error],
          [400, "Missing fields: fromChain, toChain, amount, recipient"],
          missing,
        );
      }
      const unknown = await call("POST", "/api/cctp/transfer", {
        body: { ...body, fromChain: "Solana_Devnet" },
        cookie,
      });
      assert.deepEqual([unknown.status, unknown.json.error], [
        400,
        "Unsupported source chain: Solana_Devnet",
      ]);
      const dest = await call("POST", "/api/cctp/transfer", {
        body: { ...body, toChain: "Base_Sepolia" },
        cookie,
      });
      assert.equal(dest.status, 400);
      assert.match(String(dest.json.error), /Settle_Testnet/);
      const external = await call("POST", "/api/consumer/session", {
        body: { walletAddress: "0x000000000000000000000000000000000000dEaD" },
      });
      const ext = await call("POST", "/api/cctp/transfer", {
        body,
        cookie: cookieFrom(external.headers, "consumer_token"),
      });
      assert.equal(ext.status, 400);
      assert.match(String(ext.json.error), /service-created wallet/);
      for (const amount of ["0", "-1", "1e3", "1.1234567", "abc"]) {
        const r = await call("POST", "/api/cctp/transfer", { body: { ...body, amount }, cookie });
        assert.equal(r.status, 400, amount);
      }
      const badRecipient = await call("POST", "/api/cctp/transfer", {
        body: { ...body, recipient: "0x1234" },
        cookie,
      });
      assert.equal(badRecipient.status, 400);
      // Minted to our own escrow vault or the token, the USDC would be stranded there.
      for (const name of ["EscrowVault", "TestUSDC"] as const) {
        const contract = chain.runtime("testnet").contracts[name]!;
        const stranded = await call("POST", "/api/cctp/transfer", {
          body: { ...body, recipient: contract },
          cookie,
        });
        assert.deepEqual([stranded.status, stranded.json.error], [
          400,
          M.bridgeRecipientContract,
        ], name);
      }
      const unknownRef = await call("GET", "/api/cctp/transfer/status?reference=bridge_nope");
      assert.deepEqual([unknownRef.status, unknownRef.json.error], [
        404,
        "Bridge transfer not found.",
      ]);
      const [{ n }] = await svc.db.sql`select count(*)::int as n from bridge_transfers`;
      assert.equal(n, 0, "no refused request wrote a transfer");
    });

    await t.step("too little USDC on the source chain: 400 with the balance", async () => {
      const r = await call("POST", "/api/cctp/transfer", {
        body: { fromChain: SOURCE, toChain: "Settle_Testnet", amount: "5", recipient: RECIPIENT },
        cookie,
      });
      assert.deepEqual([r.status, r.json.balance], [400, "0.000000"]);
      assert.deepEqual(chain.startedSources(), [SOURCE], "first use started the source chain");
    });

    await t.step("a full transfer: burned, waits for attestation, minted once", async () => {
      await chain.faucet(SOURCE, wallet, 25_000_000n);
      const supplyBefore = await totalSupply(svc, SOURCE);
      const destBefore = await chain.usdcBalance("testnet", RECIPIENT);
      const r = await call("POST", "/api/cctp/transfer", {
        body: { fromChain: SOURCE, toChain: "Settle_Testnet", amount: "10", recipient: RECIPIENT },
        cookie,
      });
      assert.equal(r.status, 202, r.text);
      assert.equal(r.json.status, "pending");
      const reference = r.json.reference as string;
      assert.match(reference, /^bridge_[0-9a-f]{24}$/);
      assert.match(String(r.json.message), /\/api\/cctp\/transfer\/status\?reference=/);

      // Burned, and the attester answers "pending_confirmations" until a block follows.
      const waiting = await waitFor(async () => {
        const s = await status(reference);
        const a = s.attestation as { attempts: number; nextPollAt: string | null };
        return s.status === "burned" && a.attempts >= 1 ? s : null;
      }, { timeoutMs: 20_000, what: "the burn and a first attestation poll" });
      assert.equal(
        (waiting.attestation as { state: string }).state,
        "pending_confirmations",
      );
      assert.ok((waiting.attestation as { nextPollAt: string | null }).nextPollAt);
      assert.match(String(waiting.burnTxHash), /^0x[0-9a-f]{64}$/);
      assert.equal(await chain.usdcBalance(SOURCE, wallet), 15_000_000n, "burned from the wallet");
      assert.equal(await totalSupply(svc, SOURCE), supplyBefore - 10_000_000n, "burned, not moved");

      await rpc(chain.runtime(SOURCE).rpcUrl, "evm_mine");
      const done = await waitFor(async () => {
        const s = await status(reference);
        return s.status === "minted" ? s : null;
      }, { timeoutMs: 20_000, what: "the mint" });
      assert.equal(done.amount, "10.000000");
      assert.equal(done.mintedAmount, "10.000000");
      assert.equal(done.fromChain, SOURCE);
      assert.equal(done.toChain, "Settle_Testnet");
      for (const link of [done.burnExplorerUrl, done.mintExplorerUrl]) {
        const page = await fetch(String(link));
        assert.equal(page.status, 200, String(link));
        assert.match(await page.text(), /Success/);
      }
      assert.equal(await chain.usdcBalance("testnet", RECIPIENT), destBefore + 10_000_000n);
      const mints = await svc.db.sql`
        select count(*)::int as n from chain_transactions where intent_key = ${`bridge:${reference}:mint`}`;
      assert.equal(mints[0].n, 1);
    });

    await t.step("the balance lists a started source chain for a managed wallet", async () => {
      const r = await call("GET", "/api/consumer/balance", { cookie });
      assert.equal(r.status, 200);
      const balances = r.json.balances as {
        chain: string;
        chainId: number;
        currency: string;
        balance: string;
      }[];
      assert.deepEqual(balances.map((b) => b.chain), [...chain.profiles(), SOURCE]);
      const source = balances.find((b) => b.chain === SOURCE)!;
      const units = await chain.usdcBalance(SOURCE, wallet);
      assert.equal(units, 15_000_000n, "25 from the faucet, 10 bridged");
      assert.deepEqual(source, {
        chain: SOURCE,
        chainId: chain.chainId(SOURCE),
        currency: "USDC",
        balance: "15.000000",
      });
      const settlement = balances.find((b) => b.chain === "testnet")!;
      assert.equal(settlement.chainId, chain.chainId("testnet"));
      // An external wallet cannot bridge from here: its balance stays the settlement chains'.
      const external = await call("POST", "/api/consumer/session", {
        body: { walletAddress: "0x000000000000000000000000000000000000dEaD" },
      });
      const ext = await call("GET", "/api/consumer/balance", {
        cookie: cookieFrom(external.headers, "consumer_token"),
      });
      assert.deepEqual(
        (ext.json.balances as { chain: string }[]).map((b) => b.chain),
        chain.profiles(),
      );
      assert.deepEqual(chain.startedSources(), [SOURCE], "no other source chain started");

      // Another process of the deployment with the source chain configured (RPC URL and USDC
      // address) but not started: it reads the balance through the RPC and starts nothing.
      const peer = await startTestService({
        sameDeploymentAs: svc,
        workers: false,
        env: { RATE_LIMITS: "off", BASE_SEPOLIA_USDC_ADDRESS: chain.contract(SOURCE, "TestUSDC") },
      });
      try {
        const fromPeer = await api(peer)("GET", "/api/consumer/balance", { cookie });
        assert.equal(fromPeer.status, 200, fromPeer.text);
        assert.deepEqual(fromPeer.json.balances, balances);
        assert.deepEqual(peer.deps.chain.startedSources(), [], "the peer started no chain");
      } finally {
        await peer.close();
      }
    });

    await t.step("forged and tampered attestations are refused on chain", async () => {
      await chain.faucet(SOURCE, wallet, 1_000_000n);
      const burn = await chain.cctp.burn(SOURCE, {
        from: { walletId: (await chain.findWalletByAddress(wallet))!.id },
        amount: 1_000_000n,
        destination: "testnet",
        mintRecipient: RECIPIENT,
        hookData: "0x",
        intentKey: `forge-test:${crypto.randomUUID()}`,
      });
      await rpc(chain.runtime(SOURCE).rpcUrl, "evm_mine");
      const [m] = (await chain.cctp.attest(SOURCE, burn.txHash as Hex))!;
      assert.equal(m.status, "complete");
      const rt = chain.runtime("testnet");
      const transmitter = chain.contract("testnet", "MessageTransmitterV2");
      const simulate = (message: Hex, attestation: Hex) =>
        rt.client.simulateContract({
          account: privateKeyToAccount(ANVIL_KEYS[1]),
          address: transmitter,
          abi: MessageTransmitterV2.abi,
          functionName: "receiveMessage",
          args: [message, attestation],
        });
      const forger = privateKeyToAccount(ANVIL_KEYS[2]);
      const forged = await forger.sign({ hash: keccak256(m.message) });
      await assert.rejects(simulate(m.message, forged), /InvalidAttester/);
      // More USDC for the same signature: the signer recovered is no attester.
      const amountAt = 2 + (148 + 68) * 2;
      const tampered = (m.message.slice(0, amountAt) +
        (10n ** 12n).toString(16).padStart(64, "0") +
        m.message.slice(amountAt + 64)) as Hex;
      await assert.rejects(simulate(tampered, m.attestation as Hex), /InvalidAttester/);
      // The genuine pair is accepted, once.
      await simulate(m.message, m.attestation as Hex);
      const tx = await chain.cctp.receive("testnet", {
        message: m.message,
        attestation: m.attestation as Hex,
        intentKey: `forge-test-mint:${crypto.randomUUID()}`,
      });
      const logs = parseEventLogs({
        abi: MessageTransmitterV2.abi,
        logs: (await rt.client.getTransactionReceipt({ hash: tx.txHash as Hex })).logs,
      });
      assert.ok(logs.some((l) => l.eventName === "MessageReceived"));
      await assert.rejects(simulate(m.message, m.attestation as Hex), /NonceAlreadyUsed/);
      // The delivery is found several (2-block) lookup windows back; an unused nonce reads no logs.
      await rpc(rt.rpcUrl, "anvil_mine", ["0x7"]);
      const found = await chain.cctp.receivedBy("testnet", m.eventNonce as Hex, new Date(), 2n);
      assert.equal(found?.txHash, tx.txHash);
      assert.equal(
        await chain.cctp.receivedBy("testnet", `0x${"ab".repeat(32)}`, new Date()),
        null,
      );

      // A transfer whose message another relayer delivered first: the mint step finds that
      // delivery instead of failing, and settles on it.
      const reference = `bridge_relayed${crypto.randomUUID().slice(0, 8)}`;
      await svc.db.sql`
        insert into bridge_transfers (reference, from_chain, to_chain, source_domain,
          destination_domain, amount, sender, recipient, status, burn_tx_hash, message,
          attestation, nonce, created_at, updated_at)
        values (${reference}, ${SOURCE}, 'Settle_Testnet', 6, 26, 1000000, ${wallet.toLowerCase()},
          ${RECIPIENT.toLowerCase()}, 'attested', ${burn.txHash}, ${m.message}, ${m.attestation},
          ${m.eventNonce}, now(), now())`;
      await mintStep(svc.deps, reference);
      const relayed = await status(reference);
      assert.deepEqual([relayed.status, relayed.mintTxHash, relayed.mintedAmount], [
        "minted",
        tx.txHash,
        "1.000000",
      ]);
      const ours = await svc.db.sql`
        select 1 from chain_transactions where intent_key = ${`bridge:${reference}:mint`}`;
      assert.equal(ours.length, 0, "nothing sent for it");
    });

    await t.step("cross-chain checkout: the mint settles the payment (auto_settled)", async () => {
      const receiver = startReceiver();
      try {
        const m = await createMerchant(svc, { businessName: "Bridge Shop" });
        const secret = (await call("GET", "/api/merchant/webhook-secret", { cookie: m.cookie }))
          .json.secret as string;
        const testKey = ((await call("POST", "/api/keys", {
          cookie: m.cookie,
          body: { type: "secret", environment: "test" },
        })).json.key as { key: string }).key;
        const init = await call("POST", "/api/payments/initialize", {
          headers: { "x-api-key": testKey },
          body: { amount: "3.5", webhookUrl: `${receiver.url}/hook` },
        });
        assert.equal(init.status, 201, init.text);
        const paymentRef = init.json.reference as string;
        const [p] = await svc.db.sql`select pay_to from payments where reference = ${paymentRef}`;
        const body = {
          fromChain: SOURCE,
          toChain: "Settle_Testnet",
          amount: "3.5",
          recipient: p.payTo,
          paymentReference: paymentRef,
        };
        const wrong = await call("POST", "/api/cctp/transfer", {
          body: { ...body, amount: "3.4" },
          cookie,
        });
        assert.equal(wrong.status, 400);
        assert.match(String(wrong.json.hint), /3\.500000/);
        await chain.faucet(SOURCE, wallet, 3_500_000n);
        const payeeBefore = await chain.usdcBalance("testnet", p.payTo);
        const r = await call("POST", "/api/cctp/transfer", { body, cookie });
        assert.equal(r.status, 202, r.text);
        const again = await call("POST", "/api/cctp/transfer", { body, cookie });
        assert.equal(again.status, 400, "one transfer under way per payment");
        const reference = r.json.reference as string;
        await waitFor(async () => (await status(reference)).status === "burned", {
          timeoutMs: 20_000,
          what: "the checkout burn",
        });
        // The burn's hook data carries the payment reference.
        const [row] = await svc.db.sql`
          select burn_tx_hash from bridge_transfers where reference = ${reference}`;
        await rpc(chain.runtime(SOURCE).rpcUrl, "evm_mine");
        const [m1] = (await chain.cctp.attest(SOURCE, row.burnTxHash))!;
        assert.equal(
          new TextDecoder().decode(
            Uint8Array.from(
              m1.decodedMessage!.decodedMessageBody!.hookData.slice(2).match(/../g)!.map((h) =>
                parseInt(h, 16)
              ),
            ),
          ),
          paymentRef,
        );
        const done = await waitFor(async () => {
          const s = await status(reference);
          return s.status === "minted" ? s : null;
        }, { timeoutMs: 20_000, what: "the checkout mint" });
        assert.equal(done.paymentReference, paymentRef);
        const [paid] = await svc.db.sql`
          select status, chain_tx_hash, payer from payments where reference = ${paymentRef}`;
        assert.deepEqual([paid.status, paid.chainTxHash, paid.payer], [
          "SUCCESS",
          done.mintTxHash,
          wallet.toLowerCase(),
        ]);
        assert.equal(await chain.usdcBalance("testnet", p.payTo) - payeeBefore, 3_500_000n);
        const hooks = await waitFor(
          () => receiver.received.length >= 2 ? receiver.received : null,
          { timeoutMs: 20_000, what: "two webhooks" },
        );
        const events = hooks.map((h) =>
          new Webhook(secret).verify(h.body, h.headers) as Record<string, unknown>
        );
        const explorerUrl = `${svc.baseUrl}/explorer/testnet/tx/${done.mintTxHash}`;
        assert.deepEqual(events.find((e) => e.event === "payment.auto_settled"), {
          event: "payment.auto_settled",
          reference: paymentRef,
          chainTxHash: done.mintTxHash,
          amount: 3.5,
          settlementType: "CCTP_V2_AUTO_ROUTED",
          explorerUrl,
        });
        assert.deepEqual(events.find((e) => e.event === "payment.settled"), {
          event: "payment.settled",
          reference: paymentRef,
          amount: 3.5,
          currency: "USDC",
          status: "SUCCESS",
          chainTxHash: done.mintTxHash,
          explorerUrl,
        });
        const paidAgain = await call("POST", "/api/cctp/transfer", { body, cookie });
        assert.deepEqual(
          [paidAgain.status, paidAgain.json.status],
          [409, "SUCCESS"],
          "a paid payment is not payable again",
        );
      } finally {
        await receiver.close();
      }
    });

    await t.step(
      "a third party relays a checkout's message first: minted with its tx, settled once",
      async () => {
        const receiver = startReceiver();
        try {
          const m = await createMerchant(svc, { businessName: "Relayed Shop" });
          await call("GET", "/api/merchant/webhook-secret", { cookie: m.cookie });
          const testKey = ((await call("POST", "/api/keys", {
            cookie: m.cookie,
            body: { type: "secret", environment: "test" },
          })).json.key as { key: string }).key;
          const init = await call("POST", "/api/payments/initialize", {
            headers: { "x-api-key": testKey },
            body: { amount: "2.25", webhookUrl: `${receiver.url}/hook` },
          });
          assert.equal(init.status, 201, init.text);
          const paymentRef = init.json.reference as string;
          const [p] = await svc.db.sql`select pay_to from payments where reference = ${paymentRef}`;
          await chain.faucet(SOURCE, wallet, 2_250_000n);
          const payeeBefore = await chain.usdcBalance("testnet", p.payTo);

          // The third party: any account, holding the attested message once our row has it.
          const rt = chain.runtime("testnet");
          const relayer = createWalletClient({
            account: privateKeyToAccount(ANVIL_KEYS[3]),
            chain: rt.viemChain,
            transport: http(rt.rpcUrl),
          });
          let target = "";
          let relayedTx: Hex | undefined;
          beforeMint = async (ref) => {
            if (ref !== target || relayedTx) return;
            const [row] = await svc.db.sql`
            select message, attestation from bridge_transfers where reference = ${ref}`;
            const hash = await relayer.writeContract({
              address: chain.contract("testnet", "MessageTransmitterV2"),
              abi: MessageTransmitterV2.abi,
              functionName: "receiveMessage",
              args: [row.message, row.attestation],
            });
            const receipt = await rt.client.waitForTransactionReceipt({ hash });
            assert.equal(receipt.status, "success");
            relayedTx = hash;
          };
          try {
            const r = await call("POST", "/api/cctp/transfer", {
              body: {
                fromChain: SOURCE,
                toChain: "Settle_Testnet",
                amount: "2.25",
                recipient: p.payTo,
                paymentReference: paymentRef,
              },
              cookie,
            });
            assert.equal(r.status, 202, r.text);
            target = r.json.reference as string;
            await waitFor(async () => (await status(target)).status === "burned", {
              timeoutMs: 20_000,
              what: "the burn",
            });
            await rpc(chain.runtime(SOURCE).rpcUrl, "evm_mine");
            const done = await waitFor(async () => {
              const s = await status(target);
              return s.status === "minted" || s.status === "failed" ? s : null;
            }, { timeoutMs: 20_000, what: "the mint" });
            assert.ok(relayedTx, "the third party relayed first");
            assert.deepEqual([done.status, done.mintTxHash, done.mintedAmount], [
              "minted",
              relayedTx,
              "2.250000",
            ]);
            const ours = await svc.db.sql`
            select 1 from chain_transactions where intent_key = ${`bridge:${target}:mint`}`;
            assert.equal(ours.length, 0, "no mint of ours was sent");
          } finally {
            beforeMint = () => Promise.resolve();
          }
          const [paid] = await svc.db.sql`
          select status, chain_tx_hash, payer from payments where reference = ${paymentRef}`;
          assert.deepEqual([paid.status, paid.chainTxHash, paid.payer], [
            "SUCCESS",
            relayedTx,
            wallet.toLowerCase(),
          ]);
          assert.equal(await chain.usdcBalance("testnet", p.payTo) - payeeBefore, 2_250_000n);
          await waitFor(
            () => receiver.received.length >= 2 ? receiver.received : null,
            { timeoutMs: 20_000, what: "the two webhooks" },
          );
          // The log watcher has read past the relayed mint: a direct-transfer settlement of the
          // same USDC would have been recorded by now.
          const mintBlock = (await rt.client.getTransactionReceipt({ hash: relayedTx! }))
            .blockNumber;
          await waitFor(async () => {
            const [c] = await svc.db.sql`
            select min(block_number) as b from chain_cursors where chain_id = ${rt.chainId}`;
            return c && c.b !== null && BigInt(c.b) >= mintBlock;
          }, { timeoutMs: 20_000, what: "the watcher past the mint" });
          const deliveries = await svc.db.sql`
          select event from webhook_deliveries where reference = ${paymentRef} order by event`;
          assert.deepEqual(deliveries.map((d) => d.event), [
            "payment.auto_settled",
            "payment.settled",
          ]);
        } finally {
          await receiver.close();
        }
      },
    );

    await t.step(
      "x402 seller withdrawal to Base_Sepolia goes out through the messenger",
      async () => {
        const seller = await createMerchant(svc, { businessName: "Seller" });
        const sellerAddr = seller.walletAddress!.toLowerCase() as `0x${string}`;
        const bearer = { authorization: `Bearer ${seller.apiKey}` };
        await chain.mintUsdc({ profile: "testnet", to: sellerAddr, amount: 5_000_000n });
        const dep = await call("POST", "/api/x402/gateway/deposit", {
          headers: bearer,
          body: { fromSCA: sellerAddr, amount: "5" },
        });
        assert.equal(dep.status, 200, dep.text);
        const dest = getAddress("0x00000000000000000000000000000000000a11ce");
        const supplyBefore = await totalSupply(svc, SOURCE);
        const w = await call("POST", "/api/x402/seller/balance/withdraw", {
          headers: bearer,
          body: { amount: "2", destinationChain: SOURCE, destinationAddress: dest },
        });
        assert.equal(w.status, 200, w.text);
        assert.deepEqual(
          [w.json.sourceChain, w.json.destinationChain, w.json.status, w.json.recipient],
          ["settleTestnet", SOURCE, "confirmed", dest],
        );
        const b = w.json.bridge as { reference: string; statusUrl: string };
        assert.match(b.reference, /^bridge_/);
        const s1 = await waitFor(async () => {
          const s = (await call("GET", b.statusUrl)).json;
          if (s.status === "burned") await rpc(chain.runtime(SOURCE).rpcUrl, "evm_mine");
          return s.status === "minted" ? s : null;
        }, { timeoutMs: 30_000, what: "the outbound mint" });
        assert.deepEqual([s1.direction, s1.fromChain, s1.toChain], [
          "outbound",
          "Settle_Testnet",
          SOURCE,
        ]);
        assert.equal(
          await chain.usdcBalance(SOURCE, dest.toLowerCase() as `0x${string}`),
          2_000_000n,
        );
        assert.equal(await totalSupply(svc, SOURCE), supplyBefore + 2_000_000n, "minted there");
        assert.equal(await chain.usdcBalance("testnet", sellerAddr), 0n, "burned here");
        const gw = await chain.gateway.balance("testnet", sellerAddr);
        assert.equal(gw.available, 3_000_000n);
      },
    );

    await t.step(
      "a retried cross-chain withdrawal (its Idempotency-Key released) burns once",
      async () => {
        const seller = await createMerchant(svc, { businessName: "Retrying seller" });
        const sellerAddr = seller.walletAddress!.toLowerCase() as `0x${string}`;
        const headers = {
          authorization: `Bearer ${seller.apiKey}`,
          "idempotency-key": "withdraw-retry-1",
        };
        await chain.mintUsdc({ profile: "testnet", to: sellerAddr, amount: 5_000_000n });
        const dep = await call("POST", "/api/x402/gateway/deposit", {
          headers: { authorization: headers.authorization },
          body: { fromSCA: sellerAddr, amount: "5" },
        });
        assert.equal(dep.status, 200, dep.text);
        const body = {
          amount: "1",
          destinationChain: SOURCE,
          destinationAddress: getAddress("0x00000000000000000000000000000000000b0b00"),
        };
        const first = await call("POST", "/api/x402/seller/balance/withdraw", { headers, body });
        assert.equal(first.status, 200, first.text);
        // As after a 408 or a crash: the stored answer is gone, the request comes again.
        await svc.db.sql`delete from idempotency_keys`;
        const again = await call("POST", "/api/x402/seller/balance/withdraw", { headers, body });
        assert.equal(again.status, 200, again.text);
        assert.equal(again.json.txHash, first.json.txHash, "the same gateway withdrawal");
        const ref = (first.json.bridge as { reference: string }).reference;
        assert.equal((again.json.bridge as { reference: string }).reference, ref);
        const rows = await svc.db.sql`
          select reference from bridge_transfers where sender = ${sellerAddr}`;
        assert.deepEqual(rows.map((r) => r.reference), [ref], "one bridge transfer");
        const gw = await chain.gateway.balance("testnet", sellerAddr);
        assert.equal(gw.available, 4_000_000n, "one withdrawal from the gateway");
      },
    );

    await t.step("the local attester answers in Circle's API shape", async () => {
      // An inbound transfer from Base_Sepolia (domain 6) whose burn is attested; the table also
      // holds outbound withdrawals (burned on the testnet chain) and may hold ones still pending.
      const [row] = await svc.db.sql`
        select burn_tx_hash from bridge_transfers
        where direction = 'inbound' and from_chain = ${SOURCE} and attested_at is not null
        order by created_at
        limit 1`;
      assert.ok(row?.burnTxHash, "an attested inbound transfer from the earlier steps");
      const r = await call(
        "GET",
        `/api/cctp/attestation/v2/messages/6?transactionHash=${row.burnTxHash}`,
      );
      assert.equal(r.status, 200, r.text);
      const [m] = r.json.messages as {
        status: string;
        cctpVersion: number;
        decodedMessage: { sourceDomain: number; destinationDomain: number };
      }[];
      assert.deepEqual([m.status, m.cctpVersion], ["complete", 2]);
      assert.deepEqual(
        [m.decodedMessage.sourceDomain, m.decodedMessage.destinationDomain],
        [6, 26],
      );
      const none = await call(
        "GET",
        `/api/cctp/attestation/v2/messages/6?transactionHash=0x${"00".repeat(32)}`,
      );
      assert.equal(none.status, 404);
    });
    await t.step("deno task faucet <addr> 10 --network Base_Sepolia starts the chain", async () => {
      // Its own database and data directory: the command starts its own Base_Sepolia node.
      const db = await createTestDatabase();
      try {
        const out = await new Deno.Command(Deno.execPath(), {
          args: ["run", "--allow-all", "src/cli/faucet.ts", RECIPIENT, "10", "--network", SOURCE],
          env: {
            DATABASE_URL: db.url,
            JWT_SECRET: svc.deps.config.JWT_SECRET!,
            WALLET_MASTER_KEY: svc.deps.config.WALLET_MASTER_KEY!,
            DATA_DIR: Deno.makeTempDirSync({ prefix: "bridge-faucet-" }),
            APP_ENV: "test",
            LOG_LEVEL: "error",
            CHAINS: "testnet",
            TESTNET_RPC_URL: chain.runtime("testnet").rpcUrl,
            TESTNET_OPERATOR_KEY: ANVIL_KEYS[0],
          },
          stdout: "piped",
          stderr: "piped",
        }).output();
        const text = new TextDecoder().decode(out.stdout);
        assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
        assert.match(
          text,
          /Minted 10 USDC to 0x5B38Da6a701c568545dCfcB03FcB875f56beddC4 on Base_Sepolia\./,
        );
        assert.match(text, /balance: 10 USDC/);
      } finally {
        await db.drop();
      }
    });

    await t.step(
      "a wallet adding a source chain through /rpc starts it; /metrics shows it",
      async () => {
        assert.ok(!chain.startedSources().includes("Optimism_Sepolia"));
        const res = await fetch(`${svc.baseUrl}/rpc/Optimism_Sepolia`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
        });
        assert.equal(res.status, 200);
        assert.equal(Number((await res.json()).result), 11155420);
        assert.ok(chain.startedSources().includes("Optimism_Sepolia"));
        const unknown = await fetch(`${svc.baseUrl}/rpc/Nowhere`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
        });
        assert.equal(unknown.status, 404);
        await unknown.body?.cancel();
        const metrics = parsePrometheus(await (await fetch(`${svc.baseUrl}/metrics`)).text());
        for (const name of [SOURCE, "Optimism_Sepolia"]) {
          assert.ok(
            (sample(metrics, "settlement_chain_head_block", { chain: name }) ?? -1) >= 0,
            `${name} head in /metrics`,
          );
        }
      },
    );
  } finally {
    await svc.close();
  }
});

async function totalSupply(
  svc: Awaited<ReturnType<typeof startTestService>>,
  profile: "Base_Sepolia",
): Promise<bigint> {
  const chain = svc.deps.chain;
  return await chain.runtime(profile).client.readContract({
    address: chain.contract(profile, "TestUSDC"),
    abi: TestUSDC.abi,
    functionName: "totalSupply",
  });
}
