/**
 * An outside payer with USDC and no gas (issue 27's batched option, from what a user has): it reads
 * the vault and USDC's EIP-712 domain off a listing's 402 (as the README says), signs an EIP-3009
 * ReceiveWithAuthorization to the vault, POST /api/x402/payer/deposit relays it, and
 * Circle's unmodified GatewayClient then pays a listing from that balance. Refusals send nothing;
 * 50 copies of one signed deposit at once send one transaction and all answer it.
 */
import assert from "node:assert/strict";
import type { LocalAccount } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { GatewayClient } from "@circle-fin/x402-batching/client";
import { startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import {
  type DepositTerms,
  externalBuyer,
  listApi,
  offerOf,
  okUpstream,
  signedDeposit,
  X402_PROFILE,
} from "../helpers/x402.ts";
import { highS } from "../helpers/signatures.ts";
import { checksum } from "../../src/chain/address.ts";
import { M, MF } from "../../src/http/messages.ts";
import { usdcDomain } from "../../src/chain/eip3009.ts";
import { settleRound } from "../../src/modules/x402/x402.batched.settle.ts";

const USDC = 1_000_000n;
const PATH = "/api/x402/payer/deposit";

Deno.test("x402 payer deposit: a wallet with USDC and no gas deposits, then pays", async (t) => {
  const svc = await startTestService({
    env: { RATE_LIMITS: "off", X402_BATCH_SECONDS: "3600" },
    crons: false,
  });
  const upstream = okUpstream();
  const chain = svc.deps.chain;
  const client = chain.runtime(X402_PROFILE).client;
  const call = api(svc);
  const key = generatePrivateKey();
  const payer = privateKeyToAccount(key);
  const address = payer.address.toLowerCase() as `0x${string}`;
  const usdcOf = () => chain.usdcBalance(X402_PROFILE, address);
  const vaultOf = async () => (await chain.gateway.balance(X402_PROFILE, address)).available;
  const relayed = async () => {
    const [r] = await svc.db.sql`
      select count(*)::int as n from chain_transactions
      where intent_key like ${`x402-payer-deposit:${address}:%`}`;
    return r.n as number;
  };
  try {
    await chain.mintUsdc({ profile: X402_PROFILE, to: address, amount: 5n * USDC });
    assert.equal(await client.getBalance({ address }), 0n, "the payer has no gas");
    const seller = await createMerchant(svc);
    const resource = await listApi(svc, seller, {
      slug: "no-gas",
      upstreamUrl: `http://127.0.0.1:${upstream.addr.port}/`,
    });
    const offer = await offerOf(resource);
    const sign = (account: LocalAccount, terms: DepositTerms) =>
      signedDeposit(svc, account, terms, offer);
    assert.deepEqual(
      {
        vault: offer.vault.toLowerCase(),
        domain: {
          ...offer.domain,
          verifyingContract: offer.domain.verifyingContract.toLowerCase(),
        },
      },
      {
        vault: chain.contract(X402_PROFILE, "GatewayVault").toLowerCase(),
        domain: usdcDomain(chain.runtime(X402_PROFILE)),
      },
      "the 402 names the vault and USDC's EIP-712 domain",
    );

    await t.step("refused before anything is sent", async () => {
      const now = BigInt(Math.floor(svc.clock.now().getTime() / 1000));
      const cases: [string, unknown, number, string][] = [
        [
          "not to the vault",
          await sign(payer, { value: USDC, to: address }),
          400,
          M.x402RelayVault,
        ],
        [
          "under the minimum",
          await sign(payer, { value: USDC - 1n }),
          400,
          M.x402RelayMinimum,
        ],
        [
          "expiring before it can be mined",
          await sign(payer, { value: USDC, validBefore: now + 30n }),
          400,
          M.x402RelayWindow,
        ],
        [
          "not valid yet",
          await sign(payer, { value: USDC, validAfter: now + 600n }),
          400,
          M.x402RelayWindow,
        ],
        [
          "more than the payer holds (with its balance)",
          await sign(payer, { value: 6n * USDC }),
          400,
          M.x402DepositInsufficient,
        ],
      ];
      const forged = await sign(payer, { value: USDC });
      const other = await sign(privateKeyToAccount(generatePrivateKey()), {
        value: USDC,
      });
      cases.push(
        [
          "signed by another key",
          { ...forged, signature: other.signature },
          400,
          M.x402RelaySignature,
        ],
        [
          "the high-s twin of a good signature",
          { ...forged, signature: highS(forged.signature) },
          400,
          M.x402RelaySignature,
        ],
        [
          "another value than signed",
          { ...forged, authorization: { ...forged.authorization, value: "2000000" } },
          400,
          M.x402RelaySignature,
        ],
        [
          "a NUL byte in the nonce",
          { ...forged, authorization: { ...forged.authorization, nonce: "0x\u0000" } },
          400,
          MF.textNotAllowed("authorization.nonce"),
        ],
        ["no signature", { authorization: forged.authorization }, 400, M.x402RelayBody],
        [
          "a value past uint256",
          {
            ...forged,
            authorization: { ...forged.authorization, value: "9".repeat(78) },
          },
          400,
          M.x402RelayBody,
        ],
      );
      for (const [what, body, status, error] of cases) {
        const r = await call("POST", PATH, { body });
        assert.equal(r.status, status, `${what}: ${r.text}`);
        assert.equal(r.json.error, error, what);
        if (error === M.x402DepositInsufficient) assert.equal(r.json.balance, "5.000000");
      }
      assert.equal(await relayed(), 0, "nothing was sent");
      assert.equal(await usdcOf(), 5n * USDC);
    });

    const deposit = await sign(payer, { value: 2n * USDC });
    await t.step("50 copies at once: one transaction, every copy answers it", async () => {
      const answers = await Promise.all(
        Array.from({ length: 50 }, () => call("POST", PATH, { body: deposit })),
      );
      for (const r of answers) assert.equal(r.status, 200, r.text);
      const hashes = new Set(answers.map((r) => r.json.txHash));
      assert.equal(hashes.size, 1, [...hashes].join(", "));
      assert.equal(await relayed(), 1);
      const [first] = answers;
      assert.equal(first.json.amount, "2.000000");
      assert.equal(first.json.payer, payer.address);
      assert.equal(first.json.network, "eip155:5042002");
      assert.equal((first.json.gateway as { available: string }).available, "2.000000");
      assert.equal(await vaultOf(), 2n * USDC);
      assert.equal(await usdcOf(), 3n * USDC);
      assert.equal(await client.getBalance({ address }), 0n, "still no gas: the relayer paid");
      // The payer's own view: what it still holds to deposit, and what it deposited.
      const view = await call("GET", `/api/x402/payer/balance?address=${payer.address}`);
      assert.equal(view.status, 200, view.text);
      assert.deepEqual(view.json.wallet, { balance: "3.000000" });
      assert.equal((view.json.gateway as { available: string }).available, "2.000000");
    });

    await t.step("a retry answers the same transaction; its nonce again is 409", async () => {
      const again = await call("POST", PATH, { body: deposit });
      assert.equal(again.status, 200, again.text);
      const first = await svc.db.sql`
        select tx_hash from chain_transactions
        where intent_key like ${`x402-payer-deposit:${address}:%`}`;
      assert.equal(again.json.txHash, first[0].txHash);
      const sameNonce = await sign(payer, {
        value: USDC,
        nonce: deposit.authorization.nonce,
      });
      const used = await call("POST", PATH, { body: sameNonce });
      assert.equal(used.status, 409, used.text);
      assert.equal(used.json.error, M.x402RelayUsed);
      assert.equal(await relayed(), 1);
      assert.equal(await vaultOf(), 2n * USDC);
    });

    await t.step("Circle's unmodified GatewayClient pays from that balance", async () => {
      const circle = new GatewayClient({
        chain: "arcTestnet",
        privateKey: key,
        rpcUrl: `${svc.baseUrl}/rpc/testnet`,
      });
      const paid = await circle.pay(resource);
      assert.equal(paid.status, 200);
      assert.deepEqual(paid.data, { ok: true });
      const round = await settleRound(svc.deps);
      assert.equal(round[0]?.settled, 1);
      assert.equal(await vaultOf(), 2n * USDC - 10_000n);
      assert.equal(await client.getBalance({ address }), 0n, "paid without ever holding gas");
    });

    await t.step("a smart account with no gas deposits with its owner's signature", async () => {
      const owner = privateKeyToAccount(generatePrivateKey());
      const funder = await externalBuyer(svc, generatePrivateKey(), 0n);
      const account = await funder.deploy1271(owner.address);
      await chain.mintUsdc({ profile: X402_PROFILE, to: account, amount: 3n * USDC });
      const forged = await call("POST", PATH, {
        body: await sign(payer, { from: account, value: 2n * USDC }),
      });
      assert.equal(forged.status, 400, forged.text);
      assert.equal(forged.json.error, M.x402RelaySignature);
      const r = await call("POST", PATH, {
        body: await sign(owner, { from: account, value: 2n * USDC }),
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.payer, checksum(account));
      assert.equal((await chain.gateway.balance(X402_PROFILE, account)).available, 2n * USDC);
      assert.equal(await chain.usdcBalance(X402_PROFILE, account), USDC);
      assert.equal(await client.getBalance({ address: account }), 0n);
    });
  } finally {
    await upstream.shutdown();
    await svc.close();
  }
});
