/**
 * GatewayVault from the committed artifact on a real anvil: the three deposit paths, payment
 * authorizations from an EOA and from an ERC-1271 contract payer (a tiny wallet compiled here),
 * every refusal with its custom error (used nonce, window, signature, balance, payee), the
 * available / withdrawing / withdrawable split with and without a delay, and the gas of each
 * operation (printed, so docs/decisions.md can quote it).
 */
import assert from "node:assert/strict";
import {
  type Address,
  getAddress,
  type Hash,
  type Hex,
  parseEventLogs,
  parseSignature,
  toHex,
  type TransactionReceipt,
} from "viem";
import { generatePrivateKey } from "viem/accounts";
import { GatewayVault, TestUSDC } from "../../src/chain/contracts/artifacts/index.ts";
import { SIGNED_WITHDRAWAL_TYPES } from "../../src/chain/gateway-withdrawals.ts";
import { signedDepositValid } from "../../src/chain/gateway-balance.ts";
import { transferSigner } from "../../src/chain/gateway-authorization.ts";
import { stopRecoveryLane } from "../../src/chain/recovery-lane.ts";
import type { GatewayChain } from "../../src/chain/gateway.ts";
import { ANVIL_KEYS, startAnvil } from "../helpers/anvil.ts";
import { compile1271 } from "../helpers/erc1271.ts";
import { waitFor } from "../helpers/poll.ts";
import {
  anvilClients,
  AUTHORIZATION_FIELDS,
  PERMIT_TYPES,
  reverts,
} from "../helpers/contract-kit.ts";

const USDC = 1_000_000n;
const { InitiateWithdrawal: START_FIELDS, Withdraw: WITHDRAW_FIELDS } = SIGNED_WITHDRAWAL_TYPES;
const nonce = (): Hex => toHex(crypto.getRandomValues(new Uint8Array(32)));

Deno.test("contracts: GatewayVault on anvil", async (t) => {
  const anvil = await startAnvil({ chainId: 31337 });
  try {
    const { chain, pub, testClient, wallet } = anvilClients(anvil);
    const operator = wallet(ANVIL_KEYS[0]); // deployer, token owner, relayer
    const buyer = wallet(ANVIL_KEYS[1]);
    const seller = wallet(ANVIL_KEYS[2]);
    const owner1271 = wallet(ANVIL_KEYS[3]);
    const [buyerAddr, sellerAddr] = [buyer, seller].map((w) => w.account.address);
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
      (await mined(operator.deployContract({ abi: TestUSDC.abi, bytecode: TestUSDC.bytecode })))
        .contractAddress!,
    );
    const deployVault = async (delay: bigint, settlers: Address[] = []) => {
      const r = await mined(operator.deployContract({
        abi: GatewayVault.abi,
        bytecode: GatewayVault.bytecode,
        args: [usdc, delay, operator.account.address, settlers],
      }));
      gas.deploy ??= r.gasUsed;
      return getAddress(r.contractAddress!);
    };
    const vault = await deployVault(0n);
    /** A tiny ERC-1271 account of `owner1271` (valid when its key signed). */
    const deploy1271 = async () => {
      const w = compile1271();
      const deployed = await mined(owner1271.deployContract({
        abi: w.abi,
        bytecode: w.bytecode,
        args: [owner1271.account.address],
      }));
      return getAddress(deployed.contractAddress!);
    };
    /**
     * `payer` delegates its code (EIP-7702) to a tiny ERC-1271 account of `owner`'s: code that
     * accepts the payer's own key's signatures when `owner` is the payer, and refuses them else.
     */
    const delegateTo = async (payer: ReturnType<typeof wallet>, owner: Address) => {
      const { abi, bytecode } = compile1271();
      const code = getAddress(
        (await mined(operator.deployContract({ abi, bytecode, args: [owner] }))).contractAddress!,
      );
      const delegation = await payer.signAuthorization({ contractAddress: code, executor: "self" });
      await mined(payer.sendTransaction({
        authorizationList: [delegation],
        to: sellerAddr,
        data: "0x",
      }));
      const delegated = await pub.getCode({ address: payer.account.address });
      assert.ok(delegated?.startsWith("0xef0100"), `delegated: ${delegated}`);
    };
    const mint = (to: Address, amount: bigint) =>
      mined(operator.writeContract({
        address: usdc,
        abi: TestUSDC.abi,
        functionName: "mint",
        args: [to, amount],
      }));
    await mint(buyerAddr, 1_000n * USDC);
    /** The buyer approves vault `v` and deposits `amount` into `account`'s balance there. */
    const buyerDepositsFor = async (v: Address, account: Address, amount: bigint) => {
      await mined(buyer.writeContract({
        address: usdc,
        abi: TestUSDC.abi,
        functionName: "approve",
        args: [v, amount],
      }));
      await mined(buyer.writeContract({
        address: v,
        abi: GatewayVault.abi,
        functionName: "depositFor",
        args: [account, amount],
      }));
    };
    const usdcOf = (who: Address) =>
      pub.readContract({
        address: usdc,
        abi: TestUSDC.abi,
        functionName: "balanceOf",
        args: [who],
      });
    const balanceIn = async (v: Address, who: Address) => {
      const b = await pub.readContract({
        address: v,
        abi: GatewayVault.abi,
        functionName: "balanceOf",
        args: [who],
      });
      const withdrawable = await pub.readContract({
        address: v,
        abi: GatewayVault.abi,
        functionName: "withdrawable",
        args: [who],
      });
      return { available: b.available, withdrawing: b.withdrawing, withdrawable };
    };
    const gatewayDomain = (v: Address) => ({
      name: "GatewayVault",
      version: "1",
      chainId: chain.id,
      verifyingContract: v,
    });

    interface Auth {
      from: Address;
      to: Address;
      value: bigint;
      validAfter: bigint;
      validBefore: bigint;
      nonce: Hex;
    }
    const authorization = async (over: Partial<Auth> = {}): Promise<Auth> => {
      const t0 = await now();
      return {
        from: buyerAddr,
        to: sellerAddr,
        value: 1n * USDC,
        validAfter: t0 - 5n,
        validBefore: t0 + 300n,
        nonce: nonce(),
        ...over,
      };
    };
    const sign = (a: Auth, signer: Pick<typeof buyer, "account"> = buyer, v = vault) =>
      signer.account.signTypedData({
        domain: gatewayDomain(v),
        types: { TransferWithAuthorization: AUTHORIZATION_FIELDS },
        primaryType: "TransferWithAuthorization",
        message: a,
      });
    const pay = (a: Auth, signature: Hex, v = vault) =>
      operator.writeContract({
        address: v,
        abi: GatewayVault.abi,
        functionName: "transferWithAuthorization",
        args: [a.from, a.to, a.value, a.validAfter, a.validBefore, a.nonce, signature],
      });

    await t.step(
      "deposits: approve + deposit, EIP-2612 permit, EIP-3009 authorization",
      async () => {
        await mined(buyer.writeContract({
          address: usdc,
          abi: TestUSDC.abi,
          functionName: "approve",
          args: [vault, 10n * USDC],
        }));
        const d = await mined(buyer.writeContract({
          address: vault,
          abi: GatewayVault.abi,
          functionName: "deposit",
          args: [10n * USDC],
        }));
        gas.deposit = d.gasUsed;
        const ev = parseEventLogs({ abi: GatewayVault.abi, logs: d.logs, eventName: "Deposited" });
        assert.deepEqual(ev[0].args, { account: buyerAddr, from: buyerAddr, value: 10n * USDC });

        const deadline = (await now()) + 600n;
        const permitSig = await buyer.account.signTypedData({
          domain: { name: "USD Coin", version: "2", chainId: chain.id, verifyingContract: usdc },
          types: PERMIT_TYPES,
          primaryType: "Permit",
          message: {
            owner: buyerAddr,
            spender: vault,
            value: 20n * USDC,
            nonce: await pub.readContract({
              address: usdc,
              abi: TestUSDC.abi,
              functionName: "nonces",
              args: [buyerAddr],
            }),
            deadline,
          },
        });
        const p = parseSignature(permitSig);
        const permitted = await mined(operator.writeContract({
          address: vault,
          abi: GatewayVault.abi,
          functionName: "depositWithPermit",
          args: [buyerAddr, 20n * USDC, deadline, Number(p.v), p.r, p.s],
        }));
        gas.depositWithPermit = permitted.gasUsed;

        const n = nonce();
        const recvSig = await buyer.account.signTypedData({
          domain: { name: "USD Coin", version: "2", chainId: chain.id, verifyingContract: usdc },
          types: { ReceiveWithAuthorization: AUTHORIZATION_FIELDS },
          primaryType: "ReceiveWithAuthorization",
          message: {
            from: buyerAddr,
            to: vault,
            value: 70n * USDC,
            validAfter: 0n,
            validBefore: deadline,
            nonce: n,
          },
        });
        const r = parseSignature(recvSig);
        const authorized = await mined(operator.writeContract({
          address: vault,
          abi: GatewayVault.abi,
          functionName: "depositWithAuthorization",
          args: [buyerAddr, 70n * USDC, 0n, deadline, n, Number(r.v), r.r, r.s],
        }));
        gas.depositWithAuthorization = authorized.gasUsed;
        assert.deepEqual(await balanceIn(vault, buyerAddr), {
          available: 100n * USDC,
          withdrawing: 0n,
          withdrawable: 100n * USDC,
        });
        assert.equal(await usdcOf(vault), 100n * USDC);
        assert.equal(await usdcOf(buyerAddr), 900n * USDC);
      },
    );

    await t.step("an EOA's authorization moves gateway balance once per nonce", async () => {
      const a = await authorization();
      const sig = await sign(a);
      const r = await mined(pay(a, sig));
      gas.transferWithAuthorization = r.gasUsed;
      const ev = parseEventLogs({
        abi: GatewayVault.abi,
        logs: r.logs,
        eventName: "PaymentTransferred",
      });
      assert.deepEqual(ev[0].args, {
        from: buyerAddr,
        to: sellerAddr,
        value: a.value,
        nonce: a.nonce,
      });
      assert.equal((await balanceIn(vault, buyerAddr)).available, 99n * USDC);
      assert.equal((await balanceIn(vault, sellerAddr)).available, 1n * USDC);
      assert.equal(
        await pub.readContract({
          address: vault,
          abi: GatewayVault.abi,
          functionName: "authorizationState",
          args: [buyerAddr, a.nonce],
        }),
        true,
      );
      await reverts(pay(a, sig), "AuthorizationAlreadyUsed");
      assert.equal((await balanceIn(vault, buyerAddr)).available, 99n * USDC);
    });

    await t.step("refusals: window, signature, tampering, balance", async () => {
      const t0 = await now();
      const early = await authorization({ validAfter: t0 + 100n, validBefore: t0 + 200n });
      await reverts(pay(early, await sign(early)), "AuthorizationNotYetValid");
      const late = await authorization({ validAfter: t0 - 100n, validBefore: t0 - 1n });
      await reverts(pay(late, await sign(late)), "AuthorizationExpired");
      const a = await authorization();
      await reverts(pay(a, await sign(a, seller)), "InvalidSignature");
      const sig = await sign(a);
      await reverts(pay({ ...a, value: 2n * USDC }, sig), "InvalidSignature");
      await reverts(pay({ ...a, to: buyerAddr }, sig), "InvalidSignature");
      const other = await deployVault(0n);
      await reverts(pay(a, await sign(a, buyer, other), vault), "InvalidSignature");
      const big = await authorization({ value: 1_000n * USDC });
      await reverts(pay(big, await sign(big)), "InsufficientBalance");
      const zero = await authorization({ value: 0n });
      await reverts(pay(zero, await sign(zero)), "ZeroAmount");
      assert.equal((await balanceIn(vault, buyerAddr)).available, 99n * USDC);
    });

    await t.step(
      "settlers: only the operator and those it names submit authorizations; a payer cannot pay itself ahead of a settlement",
      async () => {
        const relayer = wallet(generatePrivateKey());
        const relayerAddr = relayer.account.address;
        await testClient.setBalance({ address: relayerAddr, value: 10n ** 18n });
        const isSettler = (who: Address, v = vault) =>
          pub.readContract({
            address: v,
            abi: GatewayVault.abi,
            functionName: "isSettler",
            args: [who],
          });
        const submit = (by: typeof buyer, a: Auth, signature: Hex) =>
          by.writeContract({
            address: vault,
            abi: GatewayVault.abi,
            functionName: "transferWithAuthorization",
            args: [a.from, a.to, a.value, a.validAfter, a.validBefore, a.nonce, signature],
          });
        const batch = (by: typeof buyer, a: Auth, signature: Hex) =>
          by.writeContract({
            address: vault,
            abi: GatewayVault.abi,
            functionName: "transferWithAuthorizations",
            args: [[{ ...a, signature }]],
          });
        const byDomain = (by: typeof buyer, a: Auth, signature: Hex) =>
          by.writeContract({
            address: vault,
            abi: GatewayVault.abi,
            functionName: "transferWithAuthorizationsByDomain",
            args: [[{ ...a, signature }], []],
          });
        // The payer's own authorization to an address of its own, submitted by itself (or by
        // anyone but a settler), in each of the three entry points: refused, nothing moves.
        const drain = await authorization({ to: owner1271.account.address, value: 50n * USDC });
        const drainSig = await sign(drain);
        for (const send of [submit, batch, byDomain]) {
          await reverts(send(buyer, drain, drainSig), "NotSettler");
          await reverts(send(relayer, drain, drainSig), "NotSettler");
        }
        assert.equal((await balanceIn(vault, buyerAddr)).available, 99n * USDC);
        assert.equal(await isSettler(relayerAddr), false);
        // Only the operator names settlers.
        await reverts(
          relayer.writeContract({
            address: vault,
            abi: GatewayVault.abi,
            functionName: "setSettlers",
            args: [[relayerAddr], true],
          }),
          "NotOperator",
        );
        const set = await mined(operator.writeContract({
          address: vault,
          abi: GatewayVault.abi,
          functionName: "setSettlers",
          args: [[relayerAddr], true],
        }));
        const ev = parseEventLogs({
          abi: GatewayVault.abi,
          logs: set.logs,
          eventName: "SettlerSet",
        });
        assert.deepEqual(ev[0].args, { account: relayerAddr, allowed: true });
        assert.equal(await isSettler(relayerAddr), true);
        // A settler submits what the payer signed, to whom it signed it.
        const a = await authorization();
        await mined(byDomain(relayer, a, await sign(a)));
        assert.equal((await balanceIn(vault, buyerAddr)).available, 98n * USDC);
        assert.equal((await balanceIn(vault, sellerAddr)).available, 2n * USDC);
        // Stopped, it is refused again; settlers named at deployment count from the start.
        await mined(operator.writeContract({
          address: vault,
          abi: GatewayVault.abi,
          functionName: "setSettlers",
          args: [[relayerAddr], false],
        }));
        const b = await authorization();
        await reverts(submit(relayer, b, await sign(b)), "NotSettler");
        const named = await deployVault(0n, [relayerAddr]);
        assert.equal(await isSettler(relayerAddr, named), true);
        assert.equal(await isSettler(buyerAddr, named), false);
        // Give the seller's extra unit back to the buyer's count the later steps expect.
        const back = await authorization({ from: sellerAddr, to: buyerAddr });
        await mined(pay(back, await sign(back, seller)));
      },
    );

    await t.step(
      "an EOA that delegates its code (EIP-7702) after signing: what its key signed still pays",
      async () => {
        const key = generatePrivateKey();
        const payer = wallet(key);
        const payerAddr = payer.account.address;
        await testClient.setBalance({ address: payerAddr, value: 10n ** 18n });
        await mint(payerAddr, 5n * USDC);
        await mined(payer.writeContract({
          address: usdc,
          abi: TestUSDC.abi,
          functionName: "approve",
          args: [vault, 5n * USDC],
        }));
        await mined(payer.writeContract({
          address: vault,
          abi: GatewayVault.abi,
          functionName: "deposit",
          args: [5n * USDC],
        }));
        // Signed with the key while the address has no code (what the service accepts)...
        const a = await authorization({ from: payerAddr, value: 2n * USDC });
        const sig = await sign(a, payer);
        // ...then the address delegates to code that answers "no" for its key's signatures.
        await delegateTo(payer, sellerAddr);
        const before = await balanceIn(vault, sellerAddr);
        await mined(pay(a, sig));
        assert.equal((await balanceIn(vault, payerAddr)).available, 3n * USDC);
        assert.equal(
          (await balanceIn(vault, sellerAddr)).available,
          before.available + 2n * USDC,
        );
        // The seller's two units back to the payer: the later steps count the seller's balance.
        const back = await authorization({ from: sellerAddr, to: payerAddr, value: 2n * USDC });
        await mined(pay(back, await sign(back, seller)));
      },
    );

    await t.step("an ERC-1271 contract payer: its owner's signature is accepted", async () => {
      const account = await deploy1271();
      await buyerDepositsFor(vault, account, 5n * USDC);
      const a = await authorization({ from: account, value: 2n * USDC });
      const r = await mined(pay(a, await sign(a, owner1271)));
      gas.transferWithAuthorization1271 = r.gasUsed;
      assert.equal((await balanceIn(vault, account)).available, 3n * USDC);
      assert.equal((await balanceIn(vault, sellerAddr)).available, 3n * USDC);
      const forged = await authorization({ from: account });
      await reverts(pay(forged, await sign(forged, buyer)), "InvalidSignature");
    });

    await t.step(
      "a batch: good ones settle, a used nonce or a bad signature is skipped",
      async () => {
        const good1 = await authorization();
        const good2 = await authorization({ value: 2n * USDC });
        const used = await authorization();
        const usedSig = await sign(used);
        await mined(pay(used, usedSig));
        const forged = await authorization();
        const before = {
          buyer: (await balanceIn(vault, buyerAddr)).available,
          seller: (await balanceIn(vault, sellerAddr)).available,
        };
        const item = async (a: Auth, signature?: Hex) => ({
          ...a,
          signature: signature ?? await sign(a),
        });
        const batch = [
          await item(good1),
          await item(used, usedSig),
          await item(forged, await sign(forged, seller)),
          await item(good2),
        ];
        const r = await mined(operator.writeContract({
          address: vault,
          abi: GatewayVault.abi,
          functionName: "transferWithAuthorizations",
          args: [batch],
        }));
        gas.transferWithAuthorizations4 = r.gasUsed;
        const paid = parseEventLogs({
          abi: GatewayVault.abi,
          logs: r.logs,
          eventName: "PaymentTransferred",
        }).map((l) => l.args.nonce);
        assert.deepEqual(paid, [good1.nonce, good2.nonce]);
        const failed = parseEventLogs({
          abi: GatewayVault.abi,
          logs: r.logs,
          eventName: "AuthorizationFailed",
        }).map((l) => l.args.nonce);
        assert.deepEqual(failed, [used.nonce, forged.nonce]);
        assert.equal((await balanceIn(vault, buyerAddr)).available, before.buyer - 3n * USDC);
        assert.equal((await balanceIn(vault, sellerAddr)).available, before.seller + 3n * USDC);
      },
    );

    await t.step(
      "a batch by domain: each checked under its own domain only, one event per payment",
      async () => {
        const batchedDomain = {
          name: "GatewayWalletBatched",
          version: "1",
          chainId: chain.id,
          verifyingContract: vault,
        };
        const signBatched = (a: Auth) =>
          buyer.account.signTypedData({
            domain: batchedDomain,
            types: { TransferWithAuthorization: AUTHORIZATION_FIELDS },
            primaryType: "TransferWithAuthorization",
            message: a,
          });
        const item = (a: Auth, signature: Hex) => ({ ...a, signature });
        // Paid to another account than the seller's, whose balance the next steps count on.
        const to = owner1271.account.address;
        const vaultGood = await authorization({ to });
        const batchedGood = await authorization({ to, value: 2n * USDC });
        // Each signed under the other domain than the array it is sent in: refused, although
        // `transferWithAuthorizations` (either domain) would take both.
        const batchedInVault = await authorization({ to });
        const vaultInBatched = await authorization({ to });
        const vaultSigned = [
          item(vaultGood, await sign(vaultGood)),
          item(batchedInVault, await signBatched(batchedInVault)),
        ];
        const batchedSigned = [
          item(batchedGood, await signBatched(batchedGood)),
          item(vaultInBatched, await sign(vaultInBatched)),
        ];
        const before = (await balanceIn(vault, buyerAddr)).available;
        const r = await mined(operator.writeContract({
          address: vault,
          abi: GatewayVault.abi,
          functionName: "transferWithAuthorizationsByDomain",
          args: [vaultSigned, batchedSigned],
        }));
        const events = (eventName: "PaymentTransferred" | "AuthorizationFailed") =>
          parseEventLogs({ abi: GatewayVault.abi, logs: r.logs, eventName }).map((l) =>
            l.args.nonce
          );
        assert.deepEqual(events("PaymentTransferred"), [vaultGood.nonce, batchedGood.nonce]);
        assert.deepEqual(events("AuthorizationFailed"), [
          batchedInVault.nonce,
          vaultInBatched.nonce,
        ]);
        assert.equal(
          parseEventLogs({ abi: GatewayVault.abi, logs: r.logs, eventName: "AuthorizationUsed" })
            .length,
          0,
        );
        assert.equal((await balanceIn(vault, buyerAddr)).available, before - 3n * USDC);

        // Gas: the same two payments of Circle's batched domain, by domain and with either.
        const pair = async () => {
          const a = await authorization({ to });
          const b = await authorization({ to });
          return [item(a, await signBatched(a)), item(b, await signBatched(b))];
        };
        const byDomain = await mined(operator.writeContract({
          address: vault,
          abi: GatewayVault.abi,
          functionName: "transferWithAuthorizationsByDomain",
          args: [[], await pair()],
        }));
        const either = await mined(operator.writeContract({
          address: vault,
          abi: GatewayVault.abi,
          functionName: "transferWithAuthorizations",
          args: [await pair()],
        }));
        gas.transferWithAuthorizationsByDomain2Batched = byDomain.gasUsed;
        gas.transferWithAuthorizations2Batched = either.gasUsed;
        assert.ok(
          byDomain.gasUsed < either.gasUsed,
          `by domain ${byDomain.gasUsed} < either ${either.gasUsed}`,
        );
      },
    );

    await t.step("withdraw without a delay: available is withdrawable at once", async () => {
      await reverts(
        seller.writeContract({
          address: vault,
          abi: GatewayVault.abi,
          functionName: "withdraw",
          args: [8n * USDC, sellerAddr],
        }),
        "NotWithdrawable",
      );
      const r = await mined(seller.writeContract({
        address: vault,
        abi: GatewayVault.abi,
        functionName: "withdraw",
        args: [2n * USDC, sellerAddr],
      }));
      gas.withdraw = r.gasUsed;
      assert.equal(await usdcOf(sellerAddr), 2n * USDC);
      assert.deepEqual(await balanceIn(vault, sellerAddr), {
        available: 5n * USDC,
        withdrawing: 0n,
        withdrawable: 5n * USDC,
      });
    });

    await t.step(
      "with a delay: withdrawing matures, and signed payments still reach it",
      async () => {
        const delayed = await deployVault(3600n);
        await mined(buyer.writeContract({
          address: usdc,
          abi: TestUSDC.abi,
          functionName: "approve",
          args: [delayed, 10n * USDC],
        }));
        await mined(buyer.writeContract({
          address: delayed,
          abi: GatewayVault.abi,
          functionName: "deposit",
          args: [10n * USDC],
        }));
        assert.equal((await balanceIn(delayed, buyerAddr)).withdrawable, 0n);
        const init = await mined(buyer.writeContract({
          address: delayed,
          abi: GatewayVault.abi,
          functionName: "initiateWithdrawal",
          args: [8n * USDC],
        }));
        gas.initiateWithdrawal = init.gasUsed;
        assert.deepEqual(await balanceIn(delayed, buyerAddr), {
          available: 2n * USDC,
          withdrawing: 8n * USDC,
          withdrawable: 0n,
        });
        await reverts(
          buyer.writeContract({
            address: delayed,
            abi: GatewayVault.abi,
            functionName: "withdraw",
            args: [1n * USDC, buyerAddr],
          }),
          "NotWithdrawable",
        );
        // A payment signed before (or during) the delay spends available, then withdrawing.
        const a = await authorization({ value: 5n * USDC });
        await mined(pay(a, await sign(a, buyer, delayed), delayed));
        assert.deepEqual(await balanceIn(delayed, buyerAddr), {
          available: 0n,
          withdrawing: 5n * USDC,
          withdrawable: 0n,
        });
        await testClient.increaseTime({ seconds: 3601 });
        await testClient.mine({ blocks: 1 });
        assert.equal((await balanceIn(delayed, buyerAddr)).withdrawable, 5n * USDC);
        const before = await usdcOf(buyerAddr);
        await mined(buyer.writeContract({
          address: delayed,
          abi: GatewayVault.abi,
          functionName: "withdraw",
          args: [5n * USDC, buyerAddr],
        }));
        assert.equal(await usdcOf(buyerAddr), before + 5n * USDC);
        assert.deepEqual(await balanceIn(delayed, buyerAddr), {
          available: 0n,
          withdrawing: 0n,
          withdrawable: 0n,
        });
      },
    );

    await t.step(
      "a smart account deposits with its owner's signature (the token's bytes form)",
      async () => {
        const account = await deploy1271();
        await mint(account, 3n * USDC);
        const deadline = (await now()) + 600n;
        const n = nonce();
        const message = {
          from: account,
          to: vault,
          value: 3n * USDC,
          validAfter: 0n,
          validBefore: deadline,
          nonce: n,
        };
        const signBy = (who: typeof buyer) =>
          who.account.signTypedData({
            domain: { name: "USD Coin", version: "2", chainId: chain.id, verifyingContract: usdc },
            types: { ReceiveWithAuthorization: AUTHORIZATION_FIELDS },
            primaryType: "ReceiveWithAuthorization",
            message,
          });
        // The token's errors too: its refusal of the signature comes back through the vault.
        const abi = [...GatewayVault.abi, ...TestUSDC.abi.filter((x) => x.type === "error")];
        const submit = (signature: Hex) =>
          operator.writeContract({
            address: vault,
            abi,
            functionName: "depositWithAuthorization",
            args: [account, 3n * USDC, 0n, deadline, n, signature],
          });
        await reverts(submit(await signBy(buyer)), "ERC3009InvalidSignature");
        const r = await mined(submit(await signBy(owner1271)));
        gas.depositWithAuthorization1271 = r.gasUsed;
        assert.equal((await balanceIn(vault, account)).available, 3n * USDC);
        assert.equal(await usdcOf(account), 0n);
      },
    );

    await t.step(
      "an EOA that delegates its code (EIP-7702) pays USDC as its code answers: the token asks it, our deposit relay and exact check too",
      async () => {
        // The relay's check on this chain (x402.gateway.ts asks it before anything is sent).
        const here = {
          runtime: () => ({
            client: pub,
            chainId: chain.id,
            contracts: { TestUSDC: usdc },
            profile: { name: "testnet" },
          }),
          contract: (_p: string, name: string) => name === "GatewayVault" ? vault : usdc,
          send: () => Promise.reject(new Error("nothing is sent here")),
          walletAccount: () => Promise.reject(new Error("no wallet here")),
        } as unknown as GatewayChain;
        const payer = wallet(generatePrivateKey());
        const payerAddr = payer.account.address;
        await testClient.setBalance({ address: payerAddr, value: 10n ** 18n });
        await mint(payerAddr, 5n * USDC);
        const deadline = (await now()) + 600n;
        const d = {
          from: payerAddr,
          value: 2n * USDC,
          validAfter: 0n,
          validBefore: deadline,
          nonce: nonce(),
        };
        const signature = await payer.account.signTypedData({
          domain: { name: "USD Coin", version: "2", chainId: chain.id, verifyingContract: usdc },
          types: { ReceiveWithAuthorization: AUTHORIZATION_FIELDS },
          primaryType: "ReceiveWithAuthorization",
          message: { ...d, to: vault },
        });
        const valid = () => signedDepositValid(here, "testnet", { ...d, signature });
        const abi = [...GatewayVault.abi, ...TestUSDC.abi.filter((x) => x.type === "error")];
        const { r, s, v } = parseSignature(signature);
        const submit = () =>
          operator.writeContract({
            address: vault,
            abi,
            functionName: "depositWithAuthorization",
            args: [payerAddr, d.value, d.validAfter, d.validBefore, d.nonce, Number(v), r, s],
          });

        // An `exact` payment under the token's domain (what the facilitator's verify checks),
        // its own TransferWithAuthorization to the seller, asked the same way.
        const t = {
          from: payerAddr,
          to: sellerAddr,
          value: 1n * USDC,
          validAfter: 0n,
          validBefore: deadline,
          nonce: nonce(),
        };
        const tSig = await payer.account.signTypedData({
          domain: { name: "USD Coin", version: "2", chainId: chain.id, verifyingContract: usdc },
          types: { TransferWithAuthorization: AUTHORIZATION_FIELDS },
          primaryType: "TransferWithAuthorization",
          message: t,
        });
        const transferValid = async () => {
          try {
            return await transferSigner(here, "testnet", "usdc", t, tSig);
          } finally {
            stopRecoveryLane();
          }
        };
        const transfer = () => {
          const { r, s, v } = parseSignature(tSig);
          return pub.simulateContract({
            account: operator.account,
            address: usdc,
            abi: TestUSDC.abi,
            functionName: "transferWithAuthorization",
            args: [t.from, t.to, t.value, t.validAfter, t.validBefore, t.nonce, Number(v), r, s],
          });
        };

        assert.equal(await valid(), true, "no code: the key's signature");
        assert.equal(await transferValid(), "key");
        // Code that answers "no" for this key: the token asks it, and refuses the deposit.
        await delegateTo(payer, sellerAddr);
        assert.equal(await valid(), false, "delegated to code that refuses");
        await reverts(submit(), "ERC3009InvalidSignature");
        assert.equal(await transferValid(), null, "the token's domain: refused as the token does");
        await reverts(transfer(), "ERC3009InvalidSignature");
        // Code that accepts its own key's signatures (ERC-1271 over the EOA's key): deposited.
        await delegateTo(payer, payerAddr);
        assert.equal(await valid(), true, "delegated to code that accepts");
        assert.equal(await transferValid(), "node", "the code vouched, not the key");
        await transfer();
        await mined(submit());
        assert.equal((await balanceIn(vault, payerAddr)).available, 2n * USDC);
        assert.equal(await usdcOf(payerAddr), 3n * USDC);
      },
    );

    await t.step(
      "signed withdrawals: anyone submits, the account's signature decides, nonces apart from payments'",
      async () => {
        const { privateKeyToAccount } = await import("viem/accounts");
        const payer = privateKeyToAccount(generatePrivateKey()); // never holds gas
        const to = privateKeyToAccount(generatePrivateKey()).address;
        const delayed = await deployVault(3600n);
        await buyerDepositsFor(delayed, payer.address, 10n * USDC);
        const deadline = async () => (await now()) + 300n;
        type Start = { account: Address; value: bigint; validBefore: bigint; nonce: Hex };
        type Out = Start & { to: Address };
        const signStart = (m: Start, key: { signTypedData: typeof payer.signTypedData } = payer) =>
          key.signTypedData({
            domain: gatewayDomain(delayed),
            types: { InitiateWithdrawal: START_FIELDS },
            primaryType: "InitiateWithdrawal",
            message: m,
          });
        const signOut = (
          m: Out,
          v = delayed,
          key: { signTypedData: typeof payer.signTypedData } = payer,
        ) =>
          key.signTypedData({
            domain: gatewayDomain(v),
            types: { Withdraw: WITHDRAW_FIELDS },
            primaryType: "Withdraw",
            message: m,
          });
        const start = (m: Start, sig: Hex) =>
          operator.writeContract({
            address: delayed,
            abi: GatewayVault.abi,
            functionName: "initiateWithdrawalWithAuthorization",
            args: [m.account, m.value, m.validBefore, m.nonce, sig],
          });
        const out = (m: Out, sig: Hex, v = delayed) =>
          operator.writeContract({
            address: v,
            abi: GatewayVault.abi,
            functionName: "withdrawWithAuthorization",
            args: [m.account, m.to, m.value, m.validBefore, m.nonce, sig],
          });

        // The nonce of a payment the payer signed: a withdrawal using it leaves the payment valid.
        const shared = nonce();
        const m: Start = {
          account: payer.address,
          value: 6n * USDC,
          validBefore: await deadline(),
          nonce: shared,
        };
        await reverts(start(m, await signStart(m, buyer.account)), "InvalidSignature");
        await reverts(start({ ...m, value: 7n * USDC }, await signStart(m)), "InvalidSignature");
        const late = { ...m, validBefore: (await now()) - 1n };
        await reverts(start(late, await signStart(late)), "AuthorizationExpired");
        const r = await mined(start(m, await signStart(m)));
        gas.initiateWithdrawalWithAuthorization = r.gasUsed;
        const ev = parseEventLogs({
          abi: GatewayVault.abi,
          logs: r.logs,
          eventName: "WithdrawalAuthorizationUsed",
        });
        assert.deepEqual(ev[0].args, { account: payer.address, nonce: shared });
        await reverts(start(m, await signStart(m)), "AuthorizationAlreadyUsed");
        assert.equal(
          await pub.readContract({
            address: delayed,
            abi: GatewayVault.abi,
            functionName: "withdrawalAuthorizationState",
            args: [payer.address, shared],
          }),
          true,
        );
        assert.deepEqual(await balanceIn(delayed, payer.address), {
          available: 4n * USDC,
          withdrawing: 6n * USDC,
          withdrawable: 0n,
        });
        const a = await authorization({ from: payer.address, value: 1n * USDC, nonce: shared });
        await mined(pay(a, await sign(a, { account: payer }, delayed), delayed));

        const w: Out = {
          account: payer.address,
          to,
          value: 6n * USDC,
          validBefore: 0n,
          nonce: nonce(),
        };
        w.validBefore = (await now()) + 7200n;
        const wSig = await signOut(w);
        await reverts(out(w, wSig), "NotWithdrawable");
        await testClient.increaseTime({ seconds: 3601 });
        await testClient.mine({ blocks: 1 });
        await reverts(out({ ...w, to: buyerAddr }, wSig), "InvalidSignature");
        const done = await mined(out(w, wSig));
        gas.withdrawWithAuthorization = done.gasUsed;
        assert.equal(await usdcOf(to), 6n * USDC);
        await reverts(out(w, wSig), "AuthorizationAlreadyUsed");
        assert.deepEqual(await balanceIn(delayed, payer.address), {
          available: 3n * USDC,
          withdrawing: 0n,
          withdrawable: 0n,
        });
        assert.equal(await pub.getBalance({ address: payer.address }), 0n);

        // An ERC-1271 account withdraws with its owner's signature (no delay: at once).
        const account = await deploy1271();
        await buyerDepositsFor(vault, account, 2n * USDC);
        const o: Out = {
          account,
          to,
          value: 2n * USDC,
          validBefore: await deadline(),
          nonce: nonce(),
        };
        await reverts(out(o, await signOut(o, vault), vault), "InvalidSignature");
        await mined(out(o, await signOut(o, vault, owner1271.account), vault));
        assert.equal(await usdcOf(to), 8n * USDC);
        assert.equal((await balanceIn(vault, account)).available, 0n);
      },
    );

    console.log("GatewayVault gas:", Object.fromEntries(Object.entries(gas)));
  } finally {
    await anvil.stop();
  }
});
