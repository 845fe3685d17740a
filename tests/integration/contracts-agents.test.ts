/**
 * The agent contracts from the committed artifacts on a real anvil: the ERC-8004 identity and
 * reputation registries, the CREATE2 agent account (owner-only calls, ERC-1271) and the ERC-8183
 * job escrow: every transition, each wrong-status and wrong-caller revert, the events, and the
 * gas of each operation (printed for docs/decisions.md).
 */
import assert from "node:assert/strict";
import {
  type Abi,
  type Address,
  encodeFunctionData,
  getAddress,
  type Hash,
  hexToString,
  keccak256,
  parseEventLogs,
  stringToHex,
  toHex,
  type TransactionReceipt,
} from "viem";
import {
  AgentAccount,
  AgentAccountFactory,
  AgenticCommerce,
  AgentIdentityRegistry,
  AgentReputationRegistry,
  TestUSDC,
} from "../../src/chain/contracts/artifacts/index.ts";
import { AGENT_WALLET_TYPES } from "../../src/chain/agents.ts";
import { ANVIL_KEYS, startAnvil } from "../helpers/anvil.ts";
import { waitFor } from "../helpers/poll.ts";
import { anvilClients, reverts, revertsWith } from "../helpers/contract-kit.ts";

const USDC = 1_000_000n;
const ZERO32 = `0x${"0".repeat(64)}` as const;
const S = { Open: 0, Funded: 1, Submitted: 2, Completed: 3, Rejected: 4, Expired: 5 } as const;

Deno.test("contracts: ERC-8004 registries, agent accounts, ERC-8183 jobs on anvil", async (t) => {
  const anvil = await startAnvil({ chainId: 31337 });
  try {
    const { chain, pub, testClient, wallet } = anvilClients(anvil);
    const operator = wallet(ANVIL_KEYS[0]);
    const owner = wallet(ANVIL_KEYS[1]);
    const client = wallet(ANVIL_KEYS[2]);
    const provider = wallet(ANVIL_KEYS[3]);
    const evaluator = operator; // anvil gives us four keys
    const addr = (w: ReturnType<typeof wallet>) => w.account.address;
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
    const deploy = async (abi: Abi, bytecode: `0x${string}`, args: unknown[] = []) =>
      getAddress(
        (await mined(operator.deployContract({ abi, bytecode, args }))).contractAddress!,
      );
    const events = (abi: Abi, receipt: TransactionReceipt, eventName: string) =>
      parseEventLogs({ abi, logs: receipt.logs }).filter((l) => l.eventName === eventName)
        .map((l) => l.args as Record<string, unknown>);

    const usdc = await deploy(TestUSDC.abi, TestUSDC.bytecode);
    const identity = await deploy(AgentIdentityRegistry.abi, AgentIdentityRegistry.bytecode);
    const reputation = await deploy(AgentReputationRegistry.abi, AgentReputationRegistry.bytecode, [
      identity,
    ]);
    const factory = await deploy(AgentAccountFactory.abi, AgentAccountFactory.bytecode);
    const jobs = await deploy(AgenticCommerce.abi, AgenticCommerce.bytecode, [usdc]);
    const balanceOf = (who: Address) =>
      pub.readContract({
        address: usdc,
        abi: TestUSDC.abi,
        functionName: "balanceOf",
        args: [who],
      });
    const mint = (to: Address, amount: bigint) =>
      mined(operator.writeContract({
        address: usdc,
        abi: TestUSDC.abi,
        functionName: "mint",
        args: [to, amount],
      }));

    const idc = { address: identity, abi: AgentIdentityRegistry.abi } as const;
    let agentId = 0n;
    let sca: Address = "0x";

    await t.step(
      "identity: register with metadata mints the token, sets URI, name, wallet",
      async () => {
        const receipt = await mined(owner.writeContract({
          ...idc,
          functionName: "register",
          args: ["ipfs://agent-one", [{
            metadataKey: "name",
            metadataValue: stringToHex("Scout"),
          }]],
        }));
        gas.register = receipt.gasUsed;
        const [reg] = events(AgentIdentityRegistry.abi, receipt, "Registered");
        agentId = reg.agentId as bigint;
        assert.equal(agentId, 0n, "ERC-8004 numbers agents from 0");
        assert.deepEqual(reg, { agentId, agentURI: "ipfs://agent-one", owner: addr(owner) });
        const meta = events(AgentIdentityRegistry.abi, receipt, "MetadataSet");
        assert.deepEqual(meta.map((m) => m.metadataKey), ["agentWallet", "name"]);
        assert.equal(
          await pub.readContract({ ...idc, functionName: "ownerOf", args: [agentId] }),
          addr(owner),
        );
        assert.equal(
          await pub.readContract({ ...idc, functionName: "tokenURI", args: [agentId] }),
          "ipfs://agent-one",
        );
        const name = await pub.readContract({
          ...idc,
          functionName: "getMetadata",
          args: [agentId, "name"],
        });
        assert.equal(hexToString(name), "Scout");
        assert.equal(
          await pub.readContract({ ...idc, functionName: "getAgentWallet", args: [agentId] }),
          addr(owner),
        );
        assert.equal(
          await pub.readContract({ ...idc, functionName: "getAgentWallet", args: [1n] }),
          "0x0000000000000000000000000000000000000000",
          "an unknown id reads empty",
        );
      },
    );

    await t.step(
      "identity: only the owner updates URI and metadata; agentWallet is reserved",
      async () => {
        await revertsWith(
          client.writeContract({
            ...idc,
            functionName: "setAgentURI",
            args: [agentId, "ipfs://x"],
          }),
          "Not authorized",
        );
        const receipt = await mined(owner.writeContract({
          ...idc,
          functionName: "setAgentURI",
          args: [agentId, "ipfs://agent-one-v2"],
        }));
        assert.deepEqual(events(AgentIdentityRegistry.abi, receipt, "URIUpdated"), [{
          agentId,
          newURI: "ipfs://agent-one-v2",
          updatedBy: addr(owner),
        }]);
        await revertsWith(
          owner.writeContract({
            ...idc,
            functionName: "setMetadata",
            args: [agentId, "agentWallet", addr(client)],
          }),
          "reserved key",
        );
        await mined(owner.writeContract({
          ...idc,
          functionName: "setMetadata",
          args: [agentId, "role", stringToHex("buyer")],
        }));
        const role = await pub.readContract({
          ...idc,
          functionName: "getMetadata",
          args: [agentId, "role"],
        });
        assert.equal(hexToString(role), "buyer");
      },
    );

    const fac = { address: factory, abi: AgentAccountFactory.abi } as const;
    const salt = keccak256(toHex("agent-row-1"));

    await t.step("factory: CREATE2 address known in advance, creation idempotent", async () => {
      const predicted = await pub.readContract({
        ...fac,
        functionName: "getAddress",
        args: [addr(owner), salt],
      });
      assert.equal(await pub.getCode({ address: predicted }), undefined);
      const receipt = await mined(operator.writeContract({
        ...fac,
        functionName: "createAccount",
        args: [addr(owner), salt],
      }));
      gas.createAccount = receipt.gasUsed;
      assert.deepEqual(events(AgentAccountFactory.abi, receipt, "AccountCreated"), [{
        account: predicted,
        owner: addr(owner),
        salt,
      }]);
      sca = predicted;
      assert.equal(
        await pub.readContract({ address: sca, abi: AgentAccount.abi, functionName: "owner" }),
        addr(owner),
      );
      const again = await mined(operator.writeContract({
        ...fac,
        functionName: "createAccount",
        args: [addr(owner), salt],
      }));
      assert.equal(events(AgentAccountFactory.abi, again, "AccountCreated").length, 0);
      const other = await pub.readContract({
        ...fac,
        functionName: "getAddress",
        args: [addr(client), salt],
      });
      assert.notEqual(other, sca, "another owner, another account");
    });

    await t.step("account: holds USDC, executes only its owner's calls", async () => {
      await mint(sca, 50n * USDC);
      const transfer = encodeFunctionData({
        abi: TestUSDC.abi,
        functionName: "transfer",
        args: [addr(client), 5n * USDC],
      });
      await reverts(
        client.writeContract({
          address: sca,
          abi: AgentAccount.abi,
          functionName: "execute",
          args: [usdc, 0n, transfer],
        }),
        "NotOwner",
      );
      const before = await balanceOf(addr(client));
      const receipt = await mined(owner.writeContract({
        address: sca,
        abi: AgentAccount.abi,
        functionName: "execute",
        args: [usdc, 0n, transfer],
      }));
      gas.execute = receipt.gasUsed;
      assert.equal(await balanceOf(addr(client)), before + 5n * USDC);
      assert.equal(await balanceOf(sca), 45n * USDC);
    });

    await t.step("account: ERC-1271 accepts its owner's signature only", async () => {
      const hash = keccak256(toHex("some typed-data digest"));
      const sign = (w: ReturnType<typeof wallet>) => w.account.sign!({ hash });
      const check = async (signature: `0x${string}`) =>
        await pub.readContract({
          address: sca,
          abi: AgentAccount.abi,
          functionName: "isValidSignature",
          args: [hash, signature],
        });
      assert.equal(await check(await sign(owner)), "0x1626ba7e");
      assert.equal(await check(await sign(client)), "0xffffffff");
      assert.equal(await check("0x1234"), "0xffffffff");
    });

    await t.step("identity: the account becomes the agent wallet by ERC-1271 proof", async () => {
      const deadline = (await pub.getBlock()).timestamp + 200n;
      const domain = {
        name: "ERC8004IdentityRegistry",
        version: "1",
        chainId: chain.id,
        verifyingContract: identity,
      } as const;
      const proof = (w: ReturnType<typeof wallet>, d = deadline) =>
        w.account.signTypedData!({
          domain,
          types: AGENT_WALLET_TYPES,
          primaryType: "AgentWalletSet",
          message: { agentId, newWallet: sca, owner: addr(owner), deadline: d },
        });
      await revertsWith(
        owner.writeContract({
          ...idc,
          functionName: "setAgentWallet",
          args: [agentId, sca, deadline, await proof(client)],
        }),
        "invalid wallet sig",
      );
      const far = deadline + 200n; // more than 5 minutes ahead
      await revertsWith(
        owner.writeContract({
          ...idc,
          functionName: "setAgentWallet",
          args: [agentId, sca, far, await proof(owner, far)],
        }),
        "deadline too far",
      );
      const past = (await pub.getBlock()).timestamp - 1n;
      await revertsWith(
        owner.writeContract({
          ...idc,
          functionName: "setAgentWallet",
          args: [agentId, sca, past, await proof(owner, past)],
        }),
        "expired",
      );
      const receipt = await mined(owner.writeContract({
        ...idc,
        functionName: "setAgentWallet",
        args: [agentId, sca, deadline, await proof(owner)],
      }));
      gas.setAgentWallet = receipt.gasUsed;
      assert.equal(
        await pub.readContract({ ...idc, functionName: "getAgentWallet", args: [agentId] }),
        sca,
      );
      const [set] = events(AgentIdentityRegistry.abi, receipt, "MetadataSet");
      assert.equal(set.metadataKey, "agentWallet");
      assert.equal((set.metadataValue as string).toLowerCase(), sca.toLowerCase());
    });

    const rep = { address: reputation, abi: AgentReputationRegistry.abi } as const;
    const feedback = (w: ReturnType<typeof wallet>, value: bigint, tag2: string, id = agentId) =>
      w.writeContract({
        ...rep,
        functionName: "giveFeedback",
        args: [
          id,
          value,
          0,
          "x402",
          tag2,
          "/x402/weather",
          "",
          keccak256(toHex(`p${value}${tag2}`)),
        ],
      });

    await t.step(
      "reputation: feedback, self-feedback refused, summary and revocation",
      async () => {
        await revertsWith(feedback(owner, 100n, "success"), "Self-feedback not allowed");
        await assert.rejects(feedback(operator, 100n, "success", 99n));
        const first = await mined(feedback(operator, 100n, "success"));
        gas.giveFeedback = first.gasUsed;
        const [nf] = events(AgentReputationRegistry.abi, first, "NewFeedback");
        assert.equal(nf.agentId, agentId);
        assert.equal(nf.clientAddress, addr(operator));
        assert.equal(nf.feedbackIndex, 1n);
        assert.equal(nf.value, 100n);
        assert.equal(nf.tag1, "x402");
        assert.equal(nf.tag2, "success");
        assert.equal(nf.endpoint, "/x402/weather");
        await mined(feedback(operator, 0n, "failed"));
        await mined(feedback(client, 100n, "success"));
        const summary = (clients: Address[], tag1 = "x402", tag2 = "") =>
          pub.readContract({
            ...rep,
            functionName: "getSummary",
            args: [agentId, clients, tag1, tag2],
          });
        assert.deepEqual(await summary([addr(operator)]), [2n, 50n, 0]);
        assert.deepEqual(await summary([addr(operator), addr(client)]), [3n, 66n, 0]);
        await revertsWith(summary([]), "clientAddresses required");
        assert.deepEqual(await summary([addr(operator)], "x402", "failed"), [1n, 0n, 0]);
        assert.deepEqual(
          await pub.readContract({ ...rep, functionName: "getClients", args: [agentId] }),
          [addr(operator), addr(client)],
        );
        assert.equal(
          await pub.readContract({
            ...rep,
            functionName: "getLastIndex",
            args: [agentId, addr(operator)],
          }),
          2n,
        );
        const revoke = await mined(operator.writeContract({
          ...rep,
          functionName: "revokeFeedback",
          args: [agentId, 2n],
        }));
        assert.deepEqual(events(AgentReputationRegistry.abi, revoke, "FeedbackRevoked"), [{
          agentId,
          clientAddress: addr(operator),
          feedbackIndex: 2n,
        }]);
        await revertsWith(
          operator.writeContract({ ...rep, functionName: "revokeFeedback", args: [agentId, 2n] }),
          "Already revoked",
        );
        assert.deepEqual(await summary([addr(operator)]), [1n, 100n, 0]);
        const read = await pub.readContract({
          ...rep,
          functionName: "readFeedback",
          args: [agentId, addr(operator), 2n],
        });
        assert.deepEqual(read, [0n, 0, "x402", "failed", true]);
        await revertsWith(
          pub.readContract({
            ...rep,
            functionName: "readFeedback",
            args: [agentId, addr(operator), 3n],
          }),
          "index out of bounds",
        );
      },
    );

    await t.step("identity: a transfer clears the agent wallet", async () => {
      await mined(owner.writeContract({
        ...idc,
        functionName: "transferFrom",
        args: [addr(owner), addr(client), agentId],
      }));
      assert.equal(
        await pub.readContract({ ...idc, functionName: "getAgentWallet", args: [agentId] }),
        "0x0000000000000000000000000000000000000000",
      );
    });

    // ---- ERC-8183 ------------------------------------------------------------------------
    const jc = { address: jobs, abi: AgenticCommerce.abi } as const;
    const now = async () => (await pub.getBlock()).timestamp;
    const getJob = (id: bigint) => pub.readContract({ ...jc, functionName: "getJob", args: [id] });
    await mint(addr(client), 1_000n * USDC);
    await mined(client.writeContract({
      address: usdc,
      abi: TestUSDC.abi,
      functionName: "approve",
      args: [jobs, 1_000n * USDC],
    }));
    const newJob = async (expiresIn = 3600n) => {
      const receipt = await mined(client.writeContract({
        ...jc,
        functionName: "createJob",
        args: [addr(provider), addr(evaluator), (await now()) + expiresIn, "Summarise a paper"],
      }));
      const [created] = events(AgenticCommerce.abi, receipt, "JobCreated");
      return { id: created.jobId as bigint, receipt, created };
    };
    const act = (
      w: ReturnType<typeof wallet>,
      fn: "submit" | "complete" | "reject",
      id: bigint,
      hash: `0x${string}` = ZERO32,
    ) => w.writeContract({ ...jc, functionName: fn, args: [id, hash] });

    await t.step("jobs: create, budget, fund, submit, complete pays the provider", async () => {
      await reverts(
        client.writeContract({
          ...jc,
          functionName: "createJob",
          args: [
            addr(provider),
            "0x0000000000000000000000000000000000000000",
            (await now()) + 60n,
            "",
          ],
        }),
        "ZeroAddress",
      );
      await reverts(
        client.writeContract({
          ...jc,
          functionName: "createJob",
          args: [addr(provider), addr(evaluator), await now(), ""],
        }),
        "InvalidExpiry",
      );
      const { id, receipt, created } = await newJob();
      gas.createJob = receipt.gasUsed;
      assert.equal(id, 1n);
      assert.equal(created.client, addr(client));
      assert.equal(created.provider, addr(provider));
      assert.equal(created.evaluator, addr(evaluator));
      assert.equal((await getJob(id)).status, S.Open);
      await reverts(
        client.writeContract({ ...jc, functionName: "fund", args: [id, 0n] }),
        "ZeroBudget",
      );
      await reverts(
        evaluator.writeContract({ ...jc, functionName: "setBudget", args: [id, 1n] }),
        "Unauthorized",
      );
      const budget = await mined(client.writeContract({
        ...jc,
        functionName: "setBudget",
        args: [id, 25n * USDC],
      }));
      gas.setBudget = budget.gasUsed;
      assert.deepEqual(events(AgenticCommerce.abi, budget, "BudgetSet"), [{
        jobId: id,
        amount: 25n * USDC,
      }]);
      await reverts(
        client.writeContract({ ...jc, functionName: "fund", args: [id, 24n * USDC] }),
        "BudgetMismatch",
      );
      await reverts(
        provider.writeContract({ ...jc, functionName: "fund", args: [id, 25n * USDC] }),
        "Unauthorized",
      );
      await reverts(act(provider, "submit", id), "WrongStatus");
      const before = await balanceOf(addr(client));
      const fund = await mined(
        client.writeContract({ ...jc, functionName: "fund", args: [id, 25n * USDC] }),
      );
      gas.fund = fund.gasUsed;
      assert.deepEqual(events(AgenticCommerce.abi, fund, "JobFunded"), [{
        jobId: id,
        client: addr(client),
        amount: 25n * USDC,
      }]);
      assert.equal(await balanceOf(addr(client)), before - 25n * USDC);
      assert.equal(await balanceOf(jobs), 25n * USDC);
      await reverts(
        client.writeContract({ ...jc, functionName: "fund", args: [id, 25n * USDC] }),
        "WrongStatus",
      );
      await reverts(act(evaluator, "complete", id), "WrongStatus");
      await reverts(act(client, "submit", id), "Unauthorized");
      const deliverable = keccak256(stringToHex("ipfs://result"));
      const submit = await mined(act(provider, "submit", id, deliverable));
      gas.submit = submit.gasUsed;
      assert.deepEqual(events(AgenticCommerce.abi, submit, "JobSubmitted"), [{
        jobId: id,
        provider: addr(provider),
        deliverable,
      }]);
      await reverts(act(provider, "submit", id, deliverable), "WrongStatus");
      await reverts(act(client, "complete", id), "Unauthorized");
      const reason = keccak256(stringToHex("deliverable-approved"));
      const paid = await balanceOf(addr(provider));
      const complete = await mined(act(evaluator, "complete", id, reason));
      gas.complete = complete.gasUsed;
      assert.deepEqual(events(AgenticCommerce.abi, complete, "JobCompleted"), [{
        jobId: id,
        evaluator: addr(evaluator),
        reason,
      }]);
      assert.deepEqual(events(AgenticCommerce.abi, complete, "PaymentReleased"), [{
        jobId: id,
        provider: addr(provider),
        amount: 25n * USDC,
      }]);
      assert.equal(await balanceOf(addr(provider)), paid + 25n * USDC);
      assert.equal(await balanceOf(jobs), 0n);
      const j = await getJob(id);
      assert.equal(j.status, S.Completed);
      assert.equal(j.deliverable, deliverable);
      assert.equal(j.reason, reason);
      await reverts(act(evaluator, "complete", id, reason), "WrongStatus");
      await reverts(act(evaluator, "reject", id), "WrongStatus");
      await reverts(
        client.writeContract({ ...jc, functionName: "claimRefund", args: [id] }),
        "WrongStatus",
      );
      await reverts(getJob(99n), "JobNotFound");
    });

    await t.step(
      "jobs: reject by the client while OPEN, by the evaluator once funded",
      async () => {
        const open = await newJob();
        await reverts(act(evaluator, "reject", open.id), "Unauthorized");
        const r = await mined(act(client, "reject", open.id));
        assert.equal((await getJob(open.id)).status, S.Rejected);
        assert.equal(events(AgenticCommerce.abi, r, "Refunded").length, 0);

        const funded = await newJob();
        await mined(
          client.writeContract({ ...jc, functionName: "setBudget", args: [funded.id, 7n * USDC] }),
        );
        await mined(
          client.writeContract({ ...jc, functionName: "fund", args: [funded.id, 7n * USDC] }),
        );
        await mined(act(provider, "submit", funded.id, keccak256(toHex("x"))));
        await reverts(act(client, "reject", funded.id), "Unauthorized");
        const before = await balanceOf(addr(client));
        const reason = keccak256(stringToHex("wrong format"));
        const rej = await mined(act(evaluator, "reject", funded.id, reason));
        gas.reject = rej.gasUsed;
        assert.deepEqual(events(AgenticCommerce.abi, rej, "JobRejected"), [{
          jobId: funded.id,
          rejector: addr(evaluator),
          reason,
        }]);
        assert.deepEqual(events(AgenticCommerce.abi, rej, "Refunded"), [{
          jobId: funded.id,
          client: addr(client),
          amount: 7n * USDC,
        }]);
        assert.equal(await balanceOf(addr(client)), before + 7n * USDC);
        assert.equal((await getJob(funded.id)).status, S.Rejected);
      },
    );

    await t.step("jobs: claimRefund only after expiredAt, by anyone", async () => {
      const { id } = await newJob(600n);
      await mined(
        client.writeContract({ ...jc, functionName: "setBudget", args: [id, 3n * USDC] }),
      );
      await mined(client.writeContract({ ...jc, functionName: "fund", args: [id, 3n * USDC] }));
      await reverts(
        operator.writeContract({ ...jc, functionName: "claimRefund", args: [id] }),
        "NotExpired",
      );
      await testClient.increaseTime({ seconds: 601 });
      await testClient.mine({ blocks: 1 });
      const before = await balanceOf(addr(client));
      const refund = await mined(
        operator.writeContract({ ...jc, functionName: "claimRefund", args: [id] }),
      );
      gas.claimRefund = refund.gasUsed;
      assert.deepEqual(events(AgenticCommerce.abi, refund, "JobExpired"), [{ jobId: id }]);
      assert.equal(await balanceOf(addr(client)), before + 3n * USDC);
      assert.equal((await getJob(id)).status, S.Expired);
      await reverts(
        operator.writeContract({ ...jc, functionName: "claimRefund", args: [id] }),
        "WrongStatus",
      );
    });

    console.log(
      "agent contracts gas:",
      Object.entries(gas).map(([k, v]) => `${k}=${v}`).join(" "),
    );
  } finally {
    await anvil.stop();
  }
});
