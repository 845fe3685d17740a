/**
 * Steps of the Circle suite (bridge-circle.test.ts): cross-chain checkout from the shopper's own
 * wallet against Circle's TokenMessengerV2 and Circle's USDC (FiatTokenV2_1, EIP-712 name
 * "USDC"), with Circle's fee switch on on Base_Sepolia. Our CheckoutBurner is deployed there as
 * `deno task contracts:deploy --network Base_Sepolia` does, against the configured contracts.
 * One signature from a wallet with no gas, then approve + burn from a wallet with gas, reported.
 */
import assert from "node:assert/strict";
import type { Hex } from "viem";
import { generatePrivateKey } from "viem/accounts";
import type { TestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { waitFor } from "../helpers/poll.ts";
import { rpc } from "../helpers/chain.ts";
import { type Quote, shopper } from "../helpers/shopper.ts";
import { circleArtifact, type CircleDeployment } from "../helpers/circle-cctp.ts";
import { deployContracts } from "../../src/chain/deploy.ts";
import { silentLogger } from "../../src/log.ts";
import { M } from "../../src/http/messages.ts";

const SOURCE = "Base_Sepolia";

export async function shopperSteps(
  t: Deno.TestContext,
  ctx: { A: CircleDeployment; B: CircleDeployment; svc: TestService },
) {
  const { A, B, svc } = ctx;
  const chain = svc.deps.chain;
  const call = api(svc);
  const at = { baseUrl: svc.baseUrl, sourceChain: SOURCE, rpcUrl: B.rpcUrl, chainId: 84532 };
  const balance = async (d: CircleDeployment, who: Hex) =>
    await d.client.readContract({
      address: d.usdc,
      abi: circleArtifact("FiatTokenV2_1").abi,
      functionName: "balanceOf",
      args: [who],
    }) as bigint;
  const payment = async (amount: string) => {
    const m = await createMerchant(svc, { businessName: `Circle shopper ${amount}` });
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
    const [p] = await svc.db.sql`select pay_to from payments where reference = ${reference}`;
    return { reference, payTo: p.payTo as Hex };
  };
  // A standard burn waits for one Base_Sepolia block (BASE_SEPOLIA_CONFIRMATIONS=1).
  const minted = (reference: string) =>
    waitFor(async () => {
      const s = (await call("GET", `/api/cctp/transfer/status?reference=${reference}`)).json;
      if (s.status === "failed") throw new Error(`failed: ${s.error}`);
      if (s.status === "burned") await rpc(B.rpcUrl, "evm_mine");
      return s.status === "minted" ? s : null;
    }, { timeoutMs: 30_000, what: `transfer ${reference} minted` });
  const settled = async (reference: string) =>
    (await svc.db.sql`
      select p.status, p.payer, array(
        select event from webhook_deliveries w where w.reference = p.reference order by event
      ) as events
      from payments p where p.reference = ${reference}`)[0];

  await t.step(
    "shopper's wallet, one signature: CheckoutBurner over Circle's messenger",
    async () => {
      await chain.ensure(SOURCE);
      const deployed = await deployContracts(
        chain.runtime(SOURCE),
        chain.sender,
        svc.db.sql,
        silentLogger,
      );
      assert.deepEqual(deployed, ["CheckoutBurner"], "only ours; Circle's are configured");
      const alice = shopper(at, generatePrivateKey());
      await chain.mintUsdc({ profile: SOURCE, to: alice.address, amount: 5_000_000n });
      const p = await payment("3.5");
      const merchantBefore = await balance(A, p.payTo);
      const { body, quote } = await alice.authorize(p.reference);
      // Circle's fee switch (1 bps on Base_Sepolia): the shopper burns the fee on top.
      assert.deepEqual([quote.mode, quote.burnAmount, quote.fee], [
        "signature",
        "3.500350",
        "0.000350",
      ]);
      assert.equal(quote.authorization!.domain.name, "USDC", "Circle's USDC signs as USDC");
      const r = await alice.relay(p.reference, body);
      assert.equal(r.status, 202, JSON.stringify(r.json));
      const s = await minted(r.json.reference as string);
      assert.deepEqual([s.burnMode, s.mintedAmount, s.fee], [
        "payer_authorization",
        "3.500000",
        "0.000350",
      ]);
      assert.equal(await balance(A, p.payTo) - merchantBefore, 3_500_000n, "paid in full");
      assert.equal(await balance(B, alice.address), 5_000_000n - 3_500_350n);
      assert.equal(await B.client.getBalance({ address: alice.address }), 0n, "no gas");
      const paid = await settled(p.reference);
      assert.deepEqual([paid.status, paid.payer, paid.events], [
        "SUCCESS",
        alice.address.toLowerCase(),
        ["payment.auto_settled", "payment.settled"],
      ]);
    },
  );

  await t.step(
    "shopper's wallet sends approve + burn to Circle's messenger, reports it",
    async () => {
      const bob = shopper(at, generatePrivateKey());
      await chain.mintUsdc({ profile: SOURCE, to: bob.address, amount: 5_000_000n });
      await rpc(B.rpcUrl, "anvil_setBalance", [bob.address, "0xde0b6b3a7640000"]);
      const p = await payment("2");
      const other = await payment("2");
      const merchantBefore = await balance(A, p.payTo);
      const q = (await bob.quote(p.reference)).json as unknown as Quote;
      assert.deepEqual([q.burnAmount, q.wallet.needsApproval], ["2.000200", true]);
      const hash = await bob.burn(q);
      const unknown = await bob.report(p.reference, `0x${"cd".repeat(32)}`);
      assert.deepEqual([unknown.status, unknown.json.error], [404, M.bridgeBurnNotFound]);
      const wrong = await bob.report(other.reference, hash);
      assert.deepEqual([wrong.status, wrong.json.error], [400, M.bridgeBurnWrongPayment]);
      const r = await bob.report(p.reference, hash);
      assert.equal(r.status, 202, JSON.stringify(r.json));
      const s = await minted(r.json.reference as string);
      assert.deepEqual([s.burnMode, s.burnTxHash, s.mintedAmount], [
        "payer_wallet",
        hash,
        "2.000000",
      ]);
      assert.equal(await balance(A, p.payTo) - merchantBefore, 2_000_000n);
      assert.equal(await balance(B, bob.address), 5_000_000n - 2_000_200n);
      const paid = await settled(p.reference);
      assert.deepEqual([paid.status, paid.payer], ["SUCCESS", bob.address.toLowerCase()]);
      const rows = await svc.db.sql`
      select 1 from bridge_transfers where payment_reference = ${other.reference}`;
      assert.equal(rows.length, 0, "nothing recorded for the refused report");
    },
  );
}
