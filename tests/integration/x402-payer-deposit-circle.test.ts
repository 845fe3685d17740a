/**
 * POST /api/x402/payer/deposit against Circle's own USDC (FiatToken v2.1 behind its proxy, from
 * the compiled fixtures in ../shared), the chain's USDC by configuration, with our contracts
 * deployed beside it as `contracts:deploy` does. A key's signed deposit goes through as v, r, s
 * (what every USDC takes). A smart account's signature needs the bytes form of
 * `receiveWithAuthorization`, which v2.1 does not have: refused with 409 and its reason, nothing
 * sent, where it was a 502 from the node's estimate before.
 */
import assert from "node:assert/strict";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { freePort, startTestService, type TestService } from "../helpers/service.ts";
import { api } from "../helpers/accounts.ts";
import { startAnvil } from "../helpers/anvil.ts";
import { circleEnv, deployCircle, ROLES } from "../helpers/circle-cctp.ts";
import { externalBuyer, signedDeposit, X402_PROFILE } from "../helpers/x402.ts";
import { deployContracts } from "../../src/chain/deploy.ts";
import { silentLogger } from "../../src/log.ts";
import { checksum } from "../../src/chain/address.ts";
import { M } from "../../src/http/messages.ts";

const USDC = 1_000_000n;
const PATH = "/api/x402/payer/deposit";

Deno.test("x402 payer deposit on Circle's USDC v2.1: a key's goes through; a smart account's is refused, nothing sent", async (t) => {
  const node = await startAnvil({ chainId: 5042002 });
  let svc: TestService | undefined;
  try {
    const circle = await deployCircle(node.rpcUrl, {
      domain: 26,
      attesters: ROLES.attesterKeys,
      threshold: 1,
    });
    const port = freePort();
    svc = await startTestService({
      env: {
        RATE_LIMITS: "off",
        CHAINS: "testnet",
        PORT: String(port),
        BASE_URL: `http://127.0.0.1:${port}`,
        ...circleEnv("TESTNET", circle),
        TESTNET_CONFIRMATIONS: "0",
        X402_BATCH_SECONDS: "3600",
      },
      crons: false,
    });
    const s = svc;
    const chain = s.deps.chain;
    // Our own contracts beside Circle's, with Circle's USDC: `contracts:deploy --network testnet`.
    await deployContracts(chain.runtime(X402_PROFILE), chain.sender, s.db.sql, silentLogger);
    assert.equal(chain.contract(X402_PROFILE, "TestUSDC").toLowerCase(), circle.usdc.toLowerCase());
    const client = chain.runtime(X402_PROFILE).client;
    const call = api(s);
    const relayed = async () => {
      const [r] = await s.db.sql`
        select count(*)::int as n from chain_transactions
        where intent_key like 'x402-payer-deposit:%'`;
      return r.n as number;
    };

    await t.step("a wallet with no gas: its key's signature, sent as v, r, s", async () => {
      const payer = privateKeyToAccount(generatePrivateKey());
      const address = payer.address.toLowerCase() as `0x${string}`;
      await chain.mintUsdc({ profile: X402_PROFILE, to: address, amount: 3n * USDC });
      const r = await call("POST", PATH, {
        body: await signedDeposit(s, payer, { value: 2n * USDC }),
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.payer, checksum(address));
      assert.equal((await chain.gateway.balance(X402_PROFILE, address)).available, 2n * USDC);
      assert.equal(await chain.usdcBalance(X402_PROFILE, address), USDC);
      assert.equal(await client.getBalance({ address }), 0n, "deposited without ever holding gas");
      assert.equal(await relayed(), 1);
    });

    await t.step("a smart account's signature: 409 with the reason, nothing sent", async () => {
      const owner = privateKeyToAccount(generatePrivateKey());
      // Circle's USDC refuses a mint of 0: the deployer gets one base unit with its gas.
      const funder = await externalBuyer(s, generatePrivateKey(), 1n);
      const account = await funder.deploy1271(owner.address);
      await chain.mintUsdc({ profile: X402_PROFILE, to: account, amount: 3n * USDC });
      const body = await signedDeposit(s, owner, { from: account, value: 2n * USDC });
      const before = await relayed();
      for (let i = 0; i < 2; i++) {
        const r = await call("POST", PATH, { body });
        assert.equal(r.status, 409, r.text);
        assert.equal(r.json.error, M.x402RelayAccountUnsupported);
      }
      assert.equal(await relayed(), before, "no transaction recorded, none sent");
      assert.equal((await chain.gateway.balance(X402_PROFILE, account)).available, 0n);
      assert.equal(await chain.usdcBalance(X402_PROFILE, account), 3n * USDC);
      // Another account's signature is still the signature's refusal, not the token's.
      const forged = await call("POST", PATH, {
        body: await signedDeposit(s, privateKeyToAccount(generatePrivateKey()), {
          from: account,
          value: 2n * USDC,
        }),
      });
      assert.equal(forged.status, 400, forged.text);
      assert.equal(forged.json.error, M.x402RelaySignature);
    });
  } finally {
    await svc?.close();
    await node.stop();
  }
});
