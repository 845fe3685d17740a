/**
 * ERC-8183 jobs (AgenticCommerce) through the sender. Every action is sent from the acting
 * party's managed wallet; the contract decides whether the job's status allows it (a wrong status
 * reverts while the sender estimates gas, so nothing is broadcast and the caller gets 502).
 */
import { encodeFunctionData, type Hex, keccak256, parseEventLogs, stringToHex } from "viem";
import { AgenticCommerce, TestUSDC } from "./contracts/artifacts/index.ts";
import type { ProfileName } from "./profiles.ts";
import type { TxRequest } from "./sender.ts";
import type { TxRow } from "./transactions.repo.ts";
import type { ChainRuntime } from "./runtime.ts";

export interface JobChain {
  runtime(profile: ProfileName): ChainRuntime;
  contract(profile: ProfileName, name: "AgenticCommerce" | "TestUSDC"): `0x${string}`;
  send(req: TxRequest, wait?: { timeoutMs?: number }): Promise<TxRow>;
  /** The live transaction an intent already has, if any. */
  transaction(profile: ProfileName, intentKey: string): Promise<TxRow | null>;
}

export const JOB_CHAIN_STATUSES = [
  "OPEN",
  "FUNDED",
  "SUBMITTED",
  "COMPLETED",
  "REJECTED",
  "EXPIRED",
] as const;
export type JobChainStatus = typeof JOB_CHAIN_STATUSES[number];

export interface JobOnChain {
  client: `0x${string}`;
  provider: `0x${string}`;
  evaluator: `0x${string}`;
  expiredAt: bigint;
  status: JobChainStatus;
  budget: bigint;
  deliverable: Hex;
  reason: Hex;
  description: string;
}

export type JobAction = "submit" | "complete" | "reject" | "claimRefund";

/** keccak256 of a text: deliverables and reasons as the contract stores them. */
export const textHash = (text: string): Hex => keccak256(stringToHex(text));

export function jobOps(chain: JobChain) {
  const escrow = (p: ProfileName) => chain.contract(p, "AgenticCommerce");
  const usdc = (p: ProfileName) => chain.contract(p, "TestUSDC");
  const send = (
    p: ProfileName,
    walletId: string,
    to: `0x${string}`,
    data: Hex,
    intentKey: string,
  ) => chain.send({ profile: p, from: { walletId }, to, data, intentKey });

  const ops = {
    address: escrow,

    /** createJob then setBudget, both from the client's wallet; the job id from JobCreated. */
    async create(p: ProfileName, req: {
      walletId: string;
      provider: `0x${string}`;
      evaluator: `0x${string}`;
      expiredAt: bigint;
      description: string;
      budget: bigint;
      intentKey: string;
    }): Promise<{ jobId: bigint; expiredAt: bigint; createTx: TxRow; budgetTx: TxRow }> {
      const createTx = await send(
        p,
        req.walletId,
        escrow(p),
        encodeFunctionData({
          abi: AgenticCommerce.abi,
          functionName: "createJob",
          args: [req.provider, req.evaluator, req.expiredAt, req.description],
        }),
        `${req.intentKey}:create`,
      );
      const receipt = await chain.runtime(p).client.getTransactionReceipt({
        hash: createTx.txHash as Hex,
      });
      const [created] = parseEventLogs({
        abi: AgenticCommerce.abi,
        eventName: "JobCreated",
        logs: receipt.logs,
      });
      if (!created) throw new Error(`no JobCreated event in ${createTx.txHash}`);
      // From the event, not the request: a retried intent returns the first transaction.
      const { jobId, expiredAt } = created.args;
      const budgetTx = await send(
        p,
        req.walletId,
        escrow(p),
        encodeFunctionData({
          abi: AgenticCommerce.abi,
          functionName: "setBudget",
          args: [jobId, req.budget],
        }),
        `${req.intentKey}:budget`,
      );
      return { jobId, expiredAt, createTx, budgetTx };
    },

    /**
     * The client's approval of exactly the budget (skipped while the allowance already covers
     * it, or when the job is no longer OPEN: then only the contract's refusal of `fund` is
     * wanted), then fund(jobId, budget).
     */
    async fund(p: ProfileName, req: {
      walletId: string;
      client: `0x${string}`;
      jobId: bigint;
      budget: bigint;
      intentKey: string;
    }): Promise<{ approveTx: TxRow | null; fundTx: TxRow }> {
      const c = chain.runtime(p).client;
      // A retried intent answers with its first transactions, the approval included.
      const fundData = encodeFunctionData({
        abi: AgenticCommerce.abi,
        functionName: "fund",
        args: [req.jobId, req.budget],
      });
      const [earlierApprove, earlierFund] = await Promise.all([
        chain.transaction(p, `${req.intentKey}:approve`),
        chain.transaction(p, `${req.intentKey}:fund`),
      ]);
      if (earlierFund) {
        const fundTx = await send(p, req.walletId, escrow(p), fundData, `${req.intentKey}:fund`);
        return { approveTx: earlierApprove, fundTx };
      }
      if (earlierApprove) {
        // Stopped between the two (a crash, a timeout): the approval is awaited, not sent again.
        const approveTx = await chain.send({
          profile: p,
          from: { walletId: req.walletId },
          to: usdc(p),
          data: earlierApprove.data as Hex,
          intentKey: `${req.intentKey}:approve`,
        });
        const fundTx = await send(p, req.walletId, escrow(p), fundData, `${req.intentKey}:fund`);
        return { approveTx, fundTx };
      }
      const [allowance, job] = await Promise.all([
        c.readContract({
          address: usdc(p),
          abi: TestUSDC.abi,
          functionName: "allowance",
          args: [req.client, escrow(p)],
        }),
        ops.read(p, req.jobId),
      ]);
      let approveTx: TxRow | null = null;
      if (allowance < req.budget && job.status === "OPEN") {
        approveTx = await send(
          p,
          req.walletId,
          usdc(p),
          encodeFunctionData({
            abi: TestUSDC.abi,
            functionName: "approve",
            args: [escrow(p), req.budget],
          }),
          `${req.intentKey}:approve`,
        );
      }
      const fundTx = await send(p, req.walletId, escrow(p), fundData, `${req.intentKey}:fund`);
      return { approveTx, fundTx };
    },

    /** submit(deliverable) / complete(reason) / reject(reason) / claimRefund from `walletId`. */
    async act(p: ProfileName, req: {
      walletId: string;
      action: JobAction;
      jobId: bigint;
      hash?: Hex;
      intentKey: string;
    }): Promise<TxRow> {
      const data = req.action === "claimRefund"
        ? encodeFunctionData({
          abi: AgenticCommerce.abi,
          functionName: "claimRefund",
          args: [req.jobId],
        })
        : encodeFunctionData({
          abi: AgenticCommerce.abi,
          functionName: req.action,
          args: [req.jobId, req.hash ?? `0x${"0".repeat(64)}`],
        });
      return await send(p, req.walletId, escrow(p), data, req.intentKey);
    },

    async read(p: ProfileName, jobId: bigint): Promise<JobOnChain> {
      const j = await chain.runtime(p).client.readContract({
        address: escrow(p),
        abi: AgenticCommerce.abi,
        functionName: "getJob",
        args: [jobId],
      });
      const low = (a: string) => a.toLowerCase() as `0x${string}`;
      return {
        client: low(j.client),
        provider: low(j.provider),
        evaluator: low(j.evaluator),
        expiredAt: BigInt(j.expiredAt),
        status: JOB_CHAIN_STATUSES[j.status],
        budget: j.budget,
        deliverable: j.deliverable,
        reason: j.reason,
        description: j.description,
      };
    },
  };
  return ops;
}
