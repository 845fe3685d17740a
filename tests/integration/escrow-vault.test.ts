/**
 * EscrowVault from the committed artifact on a real anvil: every transition, every revert with
 * its custom error, the event of each transition, and the gas each operation costs (printed, so
 * docs/decisions.md can quote it).
 */
import assert from "node:assert/strict";
import {
  type Address,
  getAddress,
  type Hash,
  type Hex,
  keccak256,
  parseEventLogs,
  parseSignature,
  toHex,
  type TransactionReceipt,
} from "viem";
import { EscrowVault, TestUSDC } from "../../src/chain/contracts/artifacts/index.ts";
import { ANVIL_KEYS, startAnvil } from "../helpers/anvil.ts";
import { waitFor } from "../helpers/poll.ts";
import {
  anvilClients,
  AUTHORIZATION_FIELDS,
  PERMIT_TYPES,
  reverts,
} from "../helpers/contract-kit.ts";

const USDC = 1_000_000n;
const ABI = [...EscrowVault.abi, ...TestUSDC.abi] as const;
const Status = { None: 0, Active: 1, Disputed: 2, Released: 3, Refunded: 4 } as const;

const randomId = (): Hex => toHex(crypto.getRandomValues(new Uint8Array(32)));

Deno.test("contracts: EscrowVault on anvil", async (t) => {
  const anvil = await startAnvil({ chainId: 31337 });
  try {
    const { chain, pub, testClient, wallet } = anvilClients(anvil);
    const arbiter = wallet(ANVIL_KEYS[0]); // deployer, token owner, arbiter, relayer
    const depositor = wallet(ANVIL_KEYS[1]);
    const beneficiary = wallet(ANVIL_KEYS[2]);
    const stranger = wallet(ANVIL_KEYS[3]);
    const [arbiterAddr, depositorAddr, beneficiaryAddr] = [arbiter, depositor, beneficiary]
      .map((w) => w.account.address);
    const gas: Record<string, bigint> = {};

    const mined = async (hash: Promise<Hash> | Hash): Promise<TransactionReceipt> => {
      const h = await hash;
      const receipt = await waitFor(() => pub.getTransactionReceipt({ hash: h }), {
        timeoutMs: 10_000,
        what: `receipt of ${h}`,
      });
      assert.equal(receipt.status, "success", `transaction ${h} reverted`);
      return receipt;
    };
    const now = async () => (await pub.getBlock()).timestamp;

    const usdc = getAddress(
      (await mined(arbiter.deployContract({ abi: TestUSDC.abi, bytecode: TestUSDC.bytecode })))
        .contractAddress!,
    );
    const vaultDeploy = await mined(arbiter.deployContract({
      abi: EscrowVault.abi,
      bytecode: EscrowVault.bytecode,
      args: [usdc],
    }));
    gas.deploy = vaultDeploy.gasUsed;
    const vault = getAddress(vaultDeploy.contractAddress!);
    await mined(arbiter.writeContract({
      address: usdc,
      abi: TestUSDC.abi,
      functionName: "mint",
      args: [depositorAddr, 1_000n * USDC],
    }));

    const balanceOf = (who: Address) =>
      pub.readContract({
        address: usdc,
        abi: TestUSDC.abi,
        functionName: "balanceOf",
        args: [who],
      });
    const escrowOf = (id: Hex) =>
      pub.readContract({
        address: vault,
        abi: EscrowVault.abi,
        functionName: "getEscrow",
        args: [id],
      });
    const usdcDomain = {
      name: "USD Coin",
      version: "2",
      chainId: chain.id,
      verifyingContract: usdc,
    };

    type Terms = {
      id: Hex;
      depositor: Address;
      beneficiary: Address;
      arbiter: Address;
      amount: bigint;
      expiresAt: bigint;
    };
    const terms = async (over: Partial<Terms> = {}): Promise<Terms> => ({
      id: randomId(),
      depositor: depositorAddr,
      beneficiary: beneficiaryAddr,
      arbiter: arbiterAddr,
      amount: 10n * USDC,
      expiresAt: (await now()) + 3600n,
      ...over,
    });
    const authorize = async (tm: Terms, signer = depositor) => {
      const nonce = await pub.readContract({
        address: vault,
        abi: EscrowVault.abi,
        functionName: "authorizationNonce",
        args: [tm],
      });
      const validBefore = (await now()) + 600n;
      const sig = await signer.account.signTypedData({
        domain: usdcDomain,
        types: { ReceiveWithAuthorization: AUTHORIZATION_FIELDS },
        primaryType: "ReceiveWithAuthorization",
        message: {
          from: tm.depositor,
          to: vault,
          value: tm.amount,
          validAfter: 0n,
          validBefore,
          nonce,
        },
      });
      const { v, r, s } = parseSignature(sig);
      return { validAfter: 0n, validBefore, v: Number(v), r, s };
    };
    const createEscrow = async (over: Partial<Terms> = {}) => {
      const tm = await terms(over);
      const receipt = await mined(arbiter.writeContract({
        address: vault,
        abi: EscrowVault.abi,
        functionName: "createWithAuthorization",
        args: [tm, await authorize(tm)],
      }));
      return { tm, receipt };
    };
    const call = (
      w: ReturnType<typeof wallet>,
      functionName: "release" | "confirm" | "refund",
      id: Hex,
    ) => w.writeContract({ address: vault, abi: ABI, functionName, args: [id] });
    const dispute = (w: ReturnType<typeof wallet>, id: Hex, reason = "late") =>
      w.writeContract({
        address: vault,
        abi: ABI,
        functionName: "dispute",
        args: [id, keccak256(toHex(reason))],
      });
    const resolve = (w: ReturnType<typeof wallet>, id: Hex, released: boolean) =>
      w.writeContract({ address: vault, abi: ABI, functionName: "resolve", args: [id, released] });
    const eventOf = (receipt: TransactionReceipt, eventName: string) => {
      const logs = parseEventLogs({ abi: EscrowVault.abi, logs: receipt.logs })
        .filter((l) => l.eventName === eventName);
      assert.equal(logs.length, 1, `one ${eventName}`);
      return logs[0].args as Record<string, unknown>;
    };

    await t.step("createWithAuthorization pulls the amount and records the terms", async () => {
      const before = await balanceOf(depositorAddr);
      const { tm, receipt } = await createEscrow();
      gas.createWithAuthorization = receipt.gasUsed;
      assert.equal(await balanceOf(depositorAddr), before - tm.amount);
      assert.equal(await balanceOf(vault), tm.amount);
      const e = await escrowOf(tm.id);
      assert.equal(e.status, Status.Active);
      assert.equal(e.depositor, depositorAddr);
      assert.equal(e.beneficiary, beneficiaryAddr);
      assert.equal(e.arbiter, arbiterAddr);
      assert.equal(e.amount, tm.amount);
      assert.equal(BigInt(e.expiresAt), tm.expiresAt);
      assert.deepEqual(eventOf(receipt, "EscrowCreated"), {
        id: tm.id,
        depositor: depositorAddr,
        beneficiary: beneficiaryAddr,
        arbiter: arbiterAddr,
        amount: tm.amount,
        expiresAt: tm.expiresAt,
      });
    });

    await t.step("the authorization binds every term and funds once", async () => {
      const tm = await terms();
      const auth = await authorize(tm);
      for (
        const changed of [{ amount: 1n }, { beneficiary: arbiterAddr }, { arbiter: depositorAddr }]
      ) {
        await assert.rejects(
          arbiter.writeContract({
            address: vault,
            abi: ABI,
            functionName: "createWithAuthorization",
            args: [{ ...tm, ...changed }, auth],
          }),
        );
      }
      await mined(arbiter.writeContract({
        address: vault,
        abi: ABI,
        functionName: "createWithAuthorization",
        args: [tm, auth],
      }));
      await reverts(
        arbiter.writeContract({
          address: vault,
          abi: ABI,
          functionName: "createWithAuthorization",
          args: [tm, auth],
        }),
        "EscrowExists",
      );
    });

    await t.step("createWithPermit from the depositor's own transaction", async () => {
      const tm = await terms();
      const nonce = await pub.readContract({
        address: usdc,
        abi: TestUSDC.abi,
        functionName: "nonces",
        args: [depositorAddr],
      });
      const deadline = (await now()) + 600n;
      const sig = await depositor.account.signTypedData({
        domain: usdcDomain,
        types: PERMIT_TYPES,
        primaryType: "Permit",
        message: { owner: depositorAddr, spender: vault, value: tm.amount, nonce, deadline },
      });
      const { v, r, s } = parseSignature(sig);
      const args = [tm, deadline, Number(v), r, s] as const;
      await reverts(
        stranger.writeContract({
          address: vault,
          abi: ABI,
          functionName: "createWithPermit",
          args,
        }),
        "NotDepositor",
      );
      const receipt = await mined(
        depositor.writeContract({
          address: vault,
          abi: ABI,
          functionName: "createWithPermit",
          args,
        }),
      );
      gas.createWithPermit = receipt.gasUsed;
      assert.equal((await escrowOf(tm.id)).status, Status.Active);
    });

    await t.step("invalid terms are refused", async () => {
      const create = async (over: Partial<Terms>) => {
        const tm = await terms(over);
        return arbiter.writeContract({
          address: vault,
          abi: ABI,
          functionName: "createWithAuthorization",
          args: [tm, { validAfter: 0n, validBefore: 0n, v: 27, r: randomId(), s: randomId() }],
        });
      };
      await reverts(create({ amount: 0n }), "ZeroAmount");
      await reverts(create({ beneficiary: depositorAddr }), "InvalidParties");
      await reverts(
        create({ arbiter: "0x0000000000000000000000000000000000000000" }),
        "ZeroAddress",
      );
      await reverts(create({ expiresAt: await now() }), "InvalidExpiry");
    });

    await t.step("release: the depositor only, then RELEASED to the beneficiary", async () => {
      const { tm } = await createEscrow();
      await reverts(call(beneficiary, "release", tm.id), "NotDepositor");
      await reverts(call(stranger, "release", tm.id), "NotDepositor");
      const before = await balanceOf(beneficiaryAddr);
      const receipt = await mined(call(depositor, "release", tm.id));
      gas.release = receipt.gasUsed;
      assert.deepEqual(eventOf(receipt, "EscrowReleased"), {
        id: tm.id,
        beneficiary: beneficiaryAddr,
        amount: tm.amount,
      });
      assert.equal(await balanceOf(beneficiaryAddr), before + tm.amount);
      assert.equal((await escrowOf(tm.id)).status, Status.Released);
      await reverts(call(depositor, "release", tm.id), "NotActive");
      await reverts(dispute(depositor, tm.id), "NotActive");
      await reverts(call(beneficiary, "confirm", tm.id), "NotActive");
      await reverts(call(stranger, "refund", tm.id), "NotActive");
      await reverts(resolve(arbiter, tm.id, true), "NotDisputed");
    });

    await t.step("confirm: the beneficiary only, once; the escrow stays ACTIVE", async () => {
      const { tm } = await createEscrow();
      await reverts(call(depositor, "confirm", tm.id), "NotBeneficiary");
      const receipt = await mined(call(beneficiary, "confirm", tm.id));
      gas.confirm = receipt.gasUsed;
      assert.deepEqual(eventOf(receipt, "EscrowConfirmed"), {
        id: tm.id,
        beneficiary: beneficiaryAddr,
      });
      const e = await escrowOf(tm.id);
      assert.equal(e.status, Status.Active);
      assert.equal(e.confirmed, true);
      await reverts(call(beneficiary, "confirm", tm.id), "AlreadyConfirmed");
      await mined(call(depositor, "release", tm.id));
    });

    await t.step(
      "dispute by either party blocks release and confirm; no double dispute",
      async () => {
        for (const by of [depositor, beneficiary]) {
          const { tm } = await createEscrow();
          await reverts(dispute(stranger, tm.id), "NotParty");
          await reverts(dispute(arbiter, tm.id), "NotParty");
          const receipt = await mined(dispute(by, tm.id, "never arrived"));
          gas.dispute = receipt.gasUsed;
          assert.deepEqual(eventOf(receipt, "EscrowDisputed"), {
            id: tm.id,
            by: by.account.address,
            reasonHash: keccak256(toHex("never arrived")),
          });
          const e = await escrowOf(tm.id);
          assert.equal(e.status, Status.Disputed);
          assert.equal(e.disputedBy, by.account.address);
          await reverts(dispute(by, tm.id), "NotActive");
          await reverts(call(depositor, "release", tm.id), "NotActive");
          await reverts(call(beneficiary, "confirm", tm.id), "NotActive");
        }
      },
    );

    await t.step("resolve: the arbiter only; released or refunded", async () => {
      for (const released of [true, false]) {
        const { tm } = await createEscrow();
        await reverts(resolve(arbiter, tm.id, released), "NotDisputed");
        await mined(dispute(beneficiary, tm.id));
        await reverts(resolve(depositor, tm.id, released), "NotArbiter");
        await reverts(resolve(beneficiary, tm.id, released), "NotArbiter");
        const to = released ? beneficiaryAddr : depositorAddr;
        const before = await balanceOf(to);
        const receipt = await mined(resolve(arbiter, tm.id, released));
        gas[released ? "resolveReleased" : "resolveRefunded"] = receipt.gasUsed;
        assert.deepEqual(eventOf(receipt, "DisputeResolved"), {
          id: tm.id,
          released,
          to,
          amount: tm.amount,
        });
        assert.equal(await balanceOf(to), before + tm.amount);
        assert.equal(
          (await escrowOf(tm.id)).status,
          released ? Status.Released : Status.Refunded,
        );
        await reverts(resolve(arbiter, tm.id, !released), "NotDisputed");
      }
      await reverts(resolve(arbiter, randomId(), true), "UnknownEscrow");
    });

    await t.step("refund: anyone, only once expired and while ACTIVE", async () => {
      const { tm } = await createEscrow({ expiresAt: (await now()) + 100n });
      await reverts(call(stranger, "refund", tm.id), "NotExpired");
      await testClient.increaseTime({ seconds: 100 });
      await testClient.mine({ blocks: 1 });
      const before = await balanceOf(depositorAddr);
      const receipt = await mined(call(stranger, "refund", tm.id));
      gas.refund = receipt.gasUsed;
      assert.deepEqual(eventOf(receipt, "EscrowRefunded"), {
        id: tm.id,
        depositor: depositorAddr,
        amount: tm.amount,
      });
      assert.equal(await balanceOf(depositorAddr), before + tm.amount);
      assert.equal((await escrowOf(tm.id)).status, Status.Refunded);
      await reverts(call(stranger, "refund", tm.id), "NotActive");

      // A disputed escrow past its expiry waits for the arbiter.
      const d = await createEscrow({ expiresAt: (await now()) + 100n });
      await mined(dispute(depositor, d.tm.id));
      await testClient.increaseTime({ seconds: 200 });
      await testClient.mine({ blocks: 1 });
      await reverts(call(stranger, "refund", d.tm.id), "NotActive");
      await reverts(call(stranger, "release", randomId()), "UnknownEscrow");
    });

    await t.step("gas per operation", () => {
      console.log(`EscrowVault gas: ${
        JSON.stringify(Object.fromEntries(
          Object.entries(gas).map(([k, v]) => [k, Number(v)]),
        ))
      }`);
      for (const op of ["createWithAuthorization", "release", "confirm", "dispute", "refund"]) {
        assert.ok(gas[op] > 21_000n && gas[op] < 200_000n, `${op}: ${gas[op]}`);
      }
    });
  } finally {
    await anvil.stop();
  }
});
