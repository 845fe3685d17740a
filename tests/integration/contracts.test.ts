/**
 * TestUSDC and PaymentRouter from the committed artifacts, on a real anvil, driven with viem the
 * way the service and browsers will: typed-data signatures, one transaction per payment.
 */
import assert from "node:assert/strict";
import {
  type Address,
  encodeAbiParameters,
  getAddress,
  type Hash,
  hashTypedData,
  type Hex,
  keccak256,
  parseAbiParameters,
  parseEventLogs,
  parseSignature,
  toHex,
  type TransactionReceipt,
} from "viem";
import { PaymentRouter, TestUSDC } from "../../src/chain/contracts/artifacts/index.ts";
import { ANVIL_KEYS, startAnvil } from "../helpers/anvil.ts";
import { waitFor } from "../helpers/poll.ts";
import {
  anvilClients,
  AUTHORIZATION_FIELDS,
  PERMIT_TYPES,
  reverts,
} from "../helpers/contract-kit.ts";

const USDC = 1_000_000n; // 6 decimals

const ORDER_TYPES = {
  PaymentOrder: [
    { name: "reference", type: "bytes32" },
    { name: "payTo", type: "address" },
    { name: "amount", type: "uint256" },
    { name: "validBefore", type: "uint256" },
  ],
} as const;

/** For reverts raised by the token inside a router call. */
const ROUTER_AND_TOKEN_ABI = [...PaymentRouter.abi, ...TestUSDC.abi] as const;

const randomBytes32 = (): Hex => toHex(crypto.getRandomValues(new Uint8Array(32)));

function vrs(signature: Hex): { v: number; r: Hex; s: Hex } {
  const { v, r, s } = parseSignature(signature);
  return { v: Number(v), r, s };
}

Deno.test("contracts: TestUSDC and PaymentRouter on anvil", async (t) => {
  const anvil = await startAnvil({ chainId: 31337 });
  try {
    const { chain, pub, testClient, wallet } = anvilClients(anvil);
    const operator = wallet(ANVIL_KEYS[0]); // deployer, token owner, order signer
    const payer = wallet(ANVIL_KEYS[1]);
    const merchant = wallet(ANVIL_KEYS[2]);
    const other = wallet(ANVIL_KEYS[3]);
    const [operatorAddr, payerAddr, merchantAddr, otherAddr] = [operator, payer, merchant, other]
      .map((w) => w.account.address);

    /** Polls for the receipt with a bound (no waitForTransactionReceipt, see DESIGN.md). */
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

    const usdcDeploy = await mined(
      operator.deployContract({ abi: TestUSDC.abi, bytecode: TestUSDC.bytecode }),
    );
    const usdc = getAddress(usdcDeploy.contractAddress!);
    const routerDeploy = await mined(operator.deployContract({
      abi: PaymentRouter.abi,
      bytecode: PaymentRouter.bytecode,
      args: [usdc, operatorAddr, operatorAddr],
    }));
    const router = getAddress(routerDeploy.contractAddress!);

    const balanceOf = (who: Address) =>
      pub.readContract({
        address: usdc,
        abi: TestUSDC.abi,
        functionName: "balanceOf",
        args: [who],
      });
    const usdcDomain = {
      name: "USD Coin",
      version: "2",
      chainId: chain.id,
      verifyingContract: usdc,
    };
    const routerDomain = {
      name: "PaymentRouter",
      version: "1",
      chainId: chain.id,
      verifyingContract: router,
    };

    const signAuthorization = (
      kind: "TransferWithAuthorization" | "ReceiveWithAuthorization",
      from: ReturnType<typeof wallet>,
      m: { to: Address; value: bigint; validAfter: bigint; validBefore: bigint; nonce: Hex },
    ) =>
      from.account.signTypedData({
        domain: usdcDomain,
        types: { [kind]: AUTHORIZATION_FIELDS } as Record<typeof kind, typeof AUTHORIZATION_FIELDS>,
        primaryType: kind,
        message: { from: from.account.address, ...m },
      });
    const signPermit = async (
      owner: ReturnType<typeof wallet>,
      spender: Address,
      value: bigint,
    ) => {
      const nonce = await pub.readContract({
        address: usdc,
        abi: TestUSDC.abi,
        functionName: "nonces",
        args: [owner.account.address],
      });
      const deadline = (await now()) + 3600n;
      const signature = await owner.account.signTypedData({
        domain: usdcDomain,
        types: PERMIT_TYPES,
        primaryType: "Permit",
        message: { owner: owner.account.address, spender, value, nonce, deadline },
      });
      return { deadline, ...vrs(signature) };
    };
    const signOrder = async (
      order: { reference: Hex; payTo: Address; amount: bigint; validBefore?: bigint },
      signer = operator,
    ) => {
      const validBefore = order.validBefore ?? (await now()) + 900n;
      const signature = await signer.account.signTypedData({
        domain: routerDomain,
        types: ORDER_TYPES,
        primaryType: "PaymentOrder",
        message: { ...order, validBefore },
      });
      // The contract's ABI names the field `ref` (`reference` is reserved in Solidity).
      const abiOrder = {
        ref: order.reference,
        payTo: order.payTo,
        amount: order.amount,
        validBefore,
      };
      return { order: abiOrder, signature };
    };
    const settledEvent = (receipt: TransactionReceipt) => {
      const events = parseEventLogs({
        abi: PaymentRouter.abi,
        logs: receipt.logs,
        eventName: "PaymentSettled",
      });
      assert.equal(events.length, 1);
      return events[0].args;
    };

    await t.step("TestUSDC looks like USDC", async () => {
      const read = (functionName: "name" | "symbol" | "decimals" | "version" | "owner") =>
        pub.readContract({ address: usdc, abi: TestUSDC.abi, functionName });
      assert.equal(await read("name"), "USD Coin");
      assert.equal(await read("symbol"), "USDC");
      assert.equal(await read("decimals"), 6);
      assert.equal(await read("version"), "2");
      assert.equal(await read("owner"), operatorAddr);
      const [, name, version, chainId, verifyingContract] = await pub.readContract({
        address: usdc,
        abi: TestUSDC.abi,
        functionName: "eip712Domain",
      });
      assert.deepEqual([name, version, chainId, verifyingContract], [
        "USD Coin",
        "2",
        BigInt(chain.id),
        usdc,
      ]);
    });

    await t.step("only the owner mints", async () => {
      await mined(operator.writeContract({
        address: usdc,
        abi: TestUSDC.abi,
        functionName: "mint",
        args: [payerAddr, 1_000n * USDC],
      }));
      assert.equal(await balanceOf(payerAddr), 1_000n * USDC);
      await reverts(
        payer.writeContract({
          address: usdc,
          abi: TestUSDC.abi,
          functionName: "mint",
          args: [payerAddr, 1n],
        }),
        "OwnableUnauthorizedAccount",
      );
      assert.equal(await balanceOf(payerAddr), 1_000n * USDC);
    });

    await t.step("EIP-2612 permit signed with viem sets the allowance", async () => {
      const { deadline, v, r, s } = await signPermit(payer, otherAddr, 25n * USDC);
      const args = [payerAddr, otherAddr, 25n * USDC, deadline, v, r, s] as const;
      // Anyone may submit the permit; here the operator relays it.
      await mined(operator.writeContract({
        address: usdc,
        abi: TestUSDC.abi,
        functionName: "permit",
        args,
      }));
      const allowance = await pub.readContract({
        address: usdc,
        abi: TestUSDC.abi,
        functionName: "allowance",
        args: [payerAddr, otherAddr],
      });
      assert.equal(allowance, 25n * USDC);
      // Replaying it fails: the nonce moved on, so the recovered signer is someone else.
      await reverts(
        operator.writeContract({ address: usdc, abi: TestUSDC.abi, functionName: "permit", args }),
        "ERC2612InvalidSigner",
      );
    });

    await t.step("EIP-3009 transferWithAuthorization moves funds once", async () => {
      const message = {
        to: merchantAddr,
        value: 10n * USDC,
        validAfter: 0n,
        validBefore: (await now()) + 3600n,
        nonce: randomBytes32(),
      };
      const { v, r, s } = vrs(await signAuthorization("TransferWithAuthorization", payer, message));
      const args = [
        payerAddr,
        message.to,
        message.value,
        message.validAfter,
        message.validBefore,
        message.nonce,
        v,
        r,
        s,
      ] as const;
      const before = await balanceOf(merchantAddr);
      const receipt = await mined(operator.writeContract({
        address: usdc,
        abi: TestUSDC.abi,
        functionName: "transferWithAuthorization",
        args,
      }));
      assert.equal(await balanceOf(merchantAddr), before + 10n * USDC);
      const used = parseEventLogs({
        abi: TestUSDC.abi,
        logs: receipt.logs,
        eventName: "AuthorizationUsed",
      });
      assert.deepEqual(used[0].args, { authorizer: payerAddr, nonce: message.nonce });
      assert.equal(
        await pub.readContract({
          address: usdc,
          abi: TestUSDC.abi,
          functionName: "authorizationState",
          args: [payerAddr, message.nonce],
        }),
        true,
      );
      await reverts(
        operator.writeContract({
          address: usdc,
          abi: TestUSDC.abi,
          functionName: "transferWithAuthorization",
          args,
        }),
        "ERC3009UsedAuthorization",
      );
      assert.equal(await balanceOf(merchantAddr), before + 10n * USDC);
    });

    await t.step("EIP-3009 with an expired validBefore reverts", async () => {
      const message = {
        to: merchantAddr,
        value: 1n * USDC,
        validAfter: 0n,
        validBefore: (await now()) - 1n,
        nonce: randomBytes32(),
      };
      const { v, r, s } = vrs(await signAuthorization("TransferWithAuthorization", payer, message));
      await reverts(
        operator.writeContract({
          address: usdc,
          abi: TestUSDC.abi,
          functionName: "transferWithAuthorization",
          args: [
            payerAddr,
            message.to,
            message.value,
            message.validAfter,
            message.validBefore,
            message.nonce,
            v,
            r,
            s,
          ],
        }),
        "ERC3009InvalidAuthorizationTime",
      );
    });

    await t.step("EIP-3009 bytes-signature overload and cancelAuthorization", async () => {
      const message = {
        to: merchantAddr,
        value: 2n * USDC,
        validAfter: 0n,
        validBefore: (await now()) + 3600n,
        nonce: randomBytes32(),
      };
      const signature = await signAuthorization("TransferWithAuthorization", payer, message);
      const before = await balanceOf(merchantAddr);
      await mined(operator.writeContract({
        address: usdc,
        abi: TestUSDC.abi,
        functionName: "transferWithAuthorization",
        args: [
          payerAddr,
          message.to,
          message.value,
          message.validAfter,
          message.validBefore,
          message.nonce,
          signature,
        ],
      }));
      assert.equal(await balanceOf(merchantAddr), before + 2n * USDC);

      // A cancelled nonce can no longer be used.
      const nonce = randomBytes32();
      const cancel = await payer.account.signTypedData({
        domain: usdcDomain,
        types: {
          CancelAuthorization: [
            { name: "authorizer", type: "address" },
            { name: "nonce", type: "bytes32" },
          ],
        },
        primaryType: "CancelAuthorization",
        message: { authorizer: payerAddr, nonce },
      });
      const c = vrs(cancel);
      await mined(operator.writeContract({
        address: usdc,
        abi: TestUSDC.abi,
        functionName: "cancelAuthorization",
        args: [payerAddr, nonce, c.v, c.r, c.s],
      }));
      const late = { ...message, nonce };
      await reverts(
        operator.writeContract({
          address: usdc,
          abi: TestUSDC.abi,
          functionName: "transferWithAuthorization",
          args: [
            payerAddr,
            late.to,
            late.value,
            late.validAfter,
            late.validBefore,
            late.nonce,
            await signAuthorization("TransferWithAuthorization", payer, late),
          ],
        }),
        "ERC3009UsedAuthorization",
      );
    });

    await t.step("receiveWithAuthorization only by the payee", async () => {
      const message = {
        to: merchantAddr,
        value: 3n * USDC,
        validAfter: 0n,
        validBefore: (await now()) + 3600n,
        nonce: randomBytes32(),
      };
      const { v, r, s } = vrs(await signAuthorization("ReceiveWithAuthorization", payer, message));
      const args = [
        payerAddr,
        message.to,
        message.value,
        message.validAfter,
        message.validBefore,
        message.nonce,
        v,
        r,
        s,
      ] as const;
      const call = {
        address: usdc,
        abi: TestUSDC.abi,
        functionName: "receiveWithAuthorization",
      } as const;
      await reverts(other.writeContract({ ...call, args }), "ERC20InvalidReceiver");
      const before = await balanceOf(merchantAddr);
      await mined(merchant.writeContract({ ...call, args }));
      assert.equal(await balanceOf(merchantAddr), before + 3n * USDC);
    });

    await t.step("router: hashOrder is the digest viem signs", async () => {
      const { order } = await signOrder({
        reference: randomBytes32(),
        payTo: merchantAddr,
        amount: 5n * USDC,
      });
      const digest = await pub.readContract({
        address: router,
        abi: PaymentRouter.abi,
        functionName: "hashOrder",
        args: [order],
      });
      assert.equal(
        digest,
        hashTypedData({
          domain: routerDomain,
          types: ORDER_TYPES,
          primaryType: "PaymentOrder",
          message: { ...order, reference: order.ref },
        }),
      );
    });

    const paidRef = randomBytes32();
    let paidOrder: Awaited<ReturnType<typeof signOrder>>;

    await t.step("router: payWithPermit, one signature and one transaction", async () => {
      const amount = 12_340_000n; // 12.34 USDC
      paidOrder = await signOrder({ reference: paidRef, payTo: merchantAddr, amount });
      const permit = await signPermit(payer, router, amount);
      const [payerBefore, merchantBefore] = [
        await balanceOf(payerAddr),
        await balanceOf(merchantAddr),
      ];
      const receipt = await mined(payer.writeContract({
        address: router,
        abi: PaymentRouter.abi,
        functionName: "payWithPermit",
        args: [paidOrder.order, paidOrder.signature, permit.deadline, permit.v, permit.r, permit.s],
      }));
      assert.equal(await balanceOf(payerAddr), payerBefore - amount);
      assert.equal(await balanceOf(merchantAddr), merchantBefore + amount);
      assert.equal(await balanceOf(router), 0n);
      assert.deepEqual(settledEvent(receipt), {
        ref: paidRef,
        payer: payerAddr,
        payTo: merchantAddr,
        amount,
      });
      assert.equal(
        await pub.readContract({
          address: router,
          abi: PaymentRouter.abi,
          functionName: "settled",
          args: [paidRef],
        }),
        true,
      );
      assert.ok(receipt.gasUsed < 120_000n, `payWithPermit used ${receipt.gasUsed} gas`);
    });

    await t.step("router: a front-run permit does not break the payment", async () => {
      const amount = 3n * USDC;
      const reference = randomBytes32();
      const { order, signature } = await signOrder({ reference, payTo: merchantAddr, amount });
      const permit = await signPermit(payer, router, amount);
      const call = {
        address: router,
        abi: PaymentRouter.abi,
        functionName: "payWithPermit",
      } as const;
      const args = [order, signature, permit.deadline, permit.v, permit.r, permit.s] as const;
      // Someone watching the mempool submits the payer's permit first.
      await mined(other.writeContract({
        address: usdc,
        abi: TestUSDC.abi,
        functionName: "permit",
        args: [payerAddr, router, amount, permit.deadline, permit.v, permit.r, permit.s],
      }));
      const merchantBefore = await balanceOf(merchantAddr);
      const receipt = await mined(payer.writeContract({ ...call, args }));
      assert.equal(await balanceOf(merchantAddr), merchantBefore + amount);
      assert.equal(settledEvent(receipt).ref, reference);

      // A failing permit without a covering allowance is refused with the token's reason.
      const next = await signOrder({ reference: randomBytes32(), payTo: merchantAddr, amount });
      await reverts(
        payer.writeContract({
          ...call,
          args: [next.order, next.signature, permit.deadline, permit.v, permit.r, permit.s],
        }),
        "PermitFailed",
      );
    });

    await t.step("router: a settled reference cannot be paid again", async () => {
      const permit = await signPermit(payer, router, paidOrder.order.amount);
      await reverts(
        payer.writeContract({
          address: router,
          abi: PaymentRouter.abi,
          functionName: "payWithPermit",
          args: [
            paidOrder.order,
            paidOrder.signature,
            permit.deadline,
            permit.v,
            permit.r,
            permit.s,
          ],
        }),
        "AlreadySettled",
      );
    });

    await t.step("router: a lower amount under the original signature reverts", async () => {
      const { order, signature } = await signOrder({
        reference: randomBytes32(),
        payTo: merchantAddr,
        amount: 50n * USDC,
      });
      const underpaid = { ...order, amount: 1n * USDC };
      const permit = await signPermit(payer, router, underpaid.amount);
      const before = await balanceOf(merchantAddr);
      await reverts(
        payer.writeContract({
          address: router,
          abi: PaymentRouter.abi,
          functionName: "payWithPermit",
          args: [underpaid, signature, permit.deadline, permit.v, permit.r, permit.s],
        }),
        "InvalidOrderSignature",
      );
      assert.equal(await balanceOf(merchantAddr), before);
    });

    await t.step("router: an order signed by someone else reverts", async () => {
      const { order, signature } = await signOrder(
        { reference: randomBytes32(), payTo: otherAddr, amount: 1n * USDC },
        other,
      );
      const permit = await signPermit(payer, router, order.amount);
      await reverts(
        payer.writeContract({
          address: router,
          abi: PaymentRouter.abi,
          functionName: "payWithPermit",
          args: [order, signature, permit.deadline, permit.v, permit.r, permit.s],
        }),
        "InvalidOrderSignature",
      );
    });

    await t.step(
      "router: payWithAuthorization relayed by someone else (gasless payer)",
      async (t) => {
        const amount = 7n * USDC;
        const reference = randomBytes32();
        const { order, signature } = await signOrder({ reference, payTo: merchantAddr, amount });
        const nonceOf = (o: typeof order) =>
          pub.readContract({
            address: router,
            abi: PaymentRouter.abi,
            functionName: "authorizationNonce",
            args: [o],
          });
        const nonce = await nonceOf(order);
        // The nonce binds reference, payee and amount: abi.encode(ref, payTo, amount).
        assert.equal(
          nonce,
          keccak256(
            encodeAbiParameters(parseAbiParameters("bytes32, address, uint256"), [
              reference,
              merchantAddr,
              amount,
            ]),
          ),
        );
        const validBefore = (await now()) + 600n;
        const authFor = async (m: { value?: bigint; nonce?: Hex; validBefore?: bigint } = {}) => {
          const msg = {
            to: router,
            value: m.value ?? amount,
            validAfter: 0n,
            validBefore: m.validBefore ?? validBefore,
            nonce: m.nonce ?? nonce,
          };
          const sig = vrs(await signAuthorization("ReceiveWithAuthorization", payer, msg));
          return { from: payerAddr, validAfter: 0n, validBefore: msg.validBefore, ...sig };
        };
        // The operator relays; `other` stands for anyone else.
        const relay = (o: typeof order, auth: Awaited<ReturnType<typeof authFor>>, by = operator) =>
          by.writeContract({
            address: router,
            abi: ROUTER_AND_TOKEN_ABI,
            functionName: "payWithAuthorization",
            args: [o, signature, auth],
          });

        await t.step("another amount, nonce or window: the token refuses it", async () => {
          await reverts(
            relay(order, await authFor({ value: amount - 1n })),
            "ERC3009InvalidSignature",
          );
          await reverts(
            relay(order, await authFor({ nonce: randomBytes32() })),
            "ERC3009InvalidSignature",
          );
          // Signed for another payee's order (same reference and amount): another nonce.
          const elsewhere = await signOrder({ reference, payTo: otherAddr, amount });
          const forOther = await authFor({ nonce: await nonceOf(elsewhere.order) });
          await reverts(relay(order, forOther), "ERC3009InvalidSignature");
          await reverts(
            relay(order, await authFor({ validBefore: (await now()) - 1n })),
            "ERC3009InvalidAuthorizationTime",
          );
        });

        const payerNonce = await pub.getTransactionCount({ address: payerAddr });
        const [payerBefore, merchantBefore] = [
          await balanceOf(payerAddr),
          await balanceOf(merchantAddr),
        ];
        const auth = await authFor();
        const receipt = await mined(relay(order, auth));
        assert.equal(receipt.from.toLowerCase(), operatorAddr.toLowerCase());
        assert.equal(await balanceOf(payerAddr), payerBefore - amount);
        assert.equal(await balanceOf(merchantAddr), merchantBefore + amount);
        assert.equal(await balanceOf(router), 0n);
        assert.equal(await pub.getTransactionCount({ address: payerAddr }), payerNonce);
        assert.deepEqual(settledEvent(receipt), {
          ref: reference,
          payer: payerAddr,
          payTo: merchantAddr,
          amount,
        });

        await t.step("replays are refused", async () => {
          // The same order again: settled. The same signature under another order: its nonce
          // is another one, so the signature does not recover to the payer.
          await reverts(relay(order, auth, other), "AlreadySettled");
          const second = await signOrder({
            reference: randomBytes32(),
            payTo: merchantAddr,
            amount,
          });
          await reverts(
            other.writeContract({
              address: router,
              abi: ROUTER_AND_TOKEN_ABI,
              functionName: "payWithAuthorization",
              args: [second.order, second.signature, auth],
            }),
            "ERC3009InvalidSignature",
          );
          assert.equal(await balanceOf(merchantAddr), merchantBefore + amount);
        });
      },
    );

    await t.step("router: pay() with a prior approve", async () => {
      const amount = 4n * USDC;
      const reference = randomBytes32();
      const { order, signature } = await signOrder({ reference, payTo: merchantAddr, amount });
      const call = { address: router, abi: PaymentRouter.abi, functionName: "pay" } as const;
      // Without an allowance the token's own error comes through (decoded with both ABIs).
      await reverts(
        payer.writeContract({ ...call, abi: ROUTER_AND_TOKEN_ABI, args: [order, signature] }),
        "ERC20InsufficientAllowance",
      );
      await mined(payer.writeContract({
        address: usdc,
        abi: TestUSDC.abi,
        functionName: "approve",
        args: [router, amount],
      }));
      const merchantBefore = await balanceOf(merchantAddr);
      const receipt = await mined(payer.writeContract({ ...call, args: [order, signature] }));
      assert.equal(await balanceOf(merchantAddr), merchantBefore + amount);
      assert.equal(settledEvent(receipt).ref, reference);
    });

    await t.step("router: an expired order reverts", async () => {
      const { order, signature } = await signOrder({
        reference: randomBytes32(),
        payTo: merchantAddr,
        amount: 1n * USDC,
        validBefore: (await now()) + 60n,
      });
      await testClient.increaseTime({ seconds: 120 });
      await testClient.mine({ blocks: 1 });
      const permit = await signPermit(payer, router, order.amount);
      await reverts(
        payer.writeContract({
          address: router,
          abi: PaymentRouter.abi,
          functionName: "payWithPermit",
          args: [order, signature, permit.deadline, permit.v, permit.r, permit.s],
        }),
        "OrderExpired",
      );
    });

    await t.step("router: zero amount and zero payee are refused", async () => {
      const zero = await signOrder({ reference: randomBytes32(), payTo: merchantAddr, amount: 0n });
      const call = { address: router, abi: PaymentRouter.abi, functionName: "pay" } as const;
      await reverts(
        payer.writeContract({ ...call, args: [zero.order, zero.signature] }),
        "ZeroAmount",
      );
      const nobody = await signOrder({
        reference: randomBytes32(),
        payTo: "0x0000000000000000000000000000000000000000",
        amount: 1n,
      });
      await reverts(
        payer.writeContract({ ...call, args: [nobody.order, nobody.signature] }),
        "InvalidPayTo",
      );
    });

    await t.step("router: only the owner changes the order signer", async () => {
      const call = {
        address: router,
        abi: PaymentRouter.abi,
        functionName: "setOrderSigner",
      } as const;
      await reverts(
        other.writeContract({ ...call, args: [otherAddr] }),
        "OwnableUnauthorizedAccount",
      );
      const receipt = await mined(operator.writeContract({ ...call, args: [otherAddr] }));
      const [changed] = parseEventLogs({
        abi: PaymentRouter.abi,
        logs: receipt.logs,
        eventName: "OrderSignerChanged",
      });
      assert.deepEqual(changed.args, { previousSigner: operatorAddr, newSigner: otherAddr });
      // Orders from the old signer stop working; the new signer's work.
      const old = await signOrder({ reference: randomBytes32(), payTo: merchantAddr, amount: 1n });
      const pay = { address: router, abi: PaymentRouter.abi, functionName: "pay" } as const;
      await reverts(
        payer.writeContract({ ...pay, args: [old.order, old.signature] }),
        "InvalidOrderSignature",
      );
      await mined(payer.writeContract({
        address: usdc,
        abi: TestUSDC.abi,
        functionName: "approve",
        args: [router, 1n],
      }));
      const fresh = await signOrder(
        { reference: randomBytes32(), payTo: merchantAddr, amount: 1n },
        other,
      );
      await mined(payer.writeContract({ ...pay, args: [fresh.order, fresh.signature] }));
      await mined(operator.writeContract({ ...call, args: [operatorAddr] }));
      assert.equal(
        await pub.readContract({
          address: router,
          abi: PaymentRouter.abi,
          functionName: "orderSigner",
        }),
        operatorAddr,
      );
    });
  } finally {
    await anvil.stop();
  }
});
