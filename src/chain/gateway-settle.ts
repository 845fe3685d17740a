/**
 * Relaying x402 payment authorizations from the relayer pool: one on the vault or the token, or
 * many gateway ones in one transaction, with which of them went through.
 */
import { encodeFunctionData, type Hex, parseEventLogs } from "viem";
import { GatewayVault, TestUSDC } from "./contracts/artifacts/index.ts";
import type { ProfileName } from "./profiles.ts";
import type { TxRow } from "./transactions.repo.ts";
import type { GatewayChain } from "./gateway.ts";
import {
  type AuthorizationTarget,
  gatewayClient,
  gatewayVault,
  type TransferAuthorization,
} from "./gateway-authorization.ts";

/**
 * Relays a payment authorization from the operator and waits for the receipt: on the vault
 * (gateway balance) or on the token (the `exact` scheme's wallet-to-wallet transfer). Once
 * per `intentKey`.
 */
export async function settleAuthorization(
  chain: GatewayChain,
  p: ProfileName,
  target: AuthorizationTarget,
  req: { authorization: TransferAuthorization; signature: Hex; intentKey: string },
): Promise<TxRow> {
  const a = req.authorization;
  const args = [a.from, a.to, a.value, a.validAfter, a.validBefore, a.nonce] as const;
  const data = target === "usdc"
    ? encodeFunctionData({
      abi: TestUSDC.abi,
      functionName: "transferWithAuthorization",
      args: [...args, req.signature],
    })
    : encodeFunctionData({
      abi: GatewayVault.abi,
      functionName: "transferWithAuthorization",
      args: [...args, req.signature],
    });
  return await chain.send({
    profile: p,
    from: "relayer", // permissionless relay: one of the relayer pool (sender.ts)
    to: target === "usdc" ? chain.contract(p, "TestUSDC") : gatewayVault(chain, p),
    data,
    intentKey: req.intentKey,
  });
}

/**
 * Relays many gateway authorizations in one transaction (`transferWithAuthorizations`) and
 * waits for the receipt: which of them went through is read from its PaymentTransferred
 * logs (a failing one is skipped by the vault, the others still settle). Once per
 * `intentKey`.
 */
export async function settleAuthorizations(chain: GatewayChain, p: ProfileName, req: {
  items: { authorization: TransferAuthorization; signature: Hex }[];
  intentKey: string;
  /** A gas limit to send with instead of the node's estimate (slow for a large batch). */
  gas?: bigint;
}): Promise<{ tx: TxRow; settled: boolean[] }> {
  const data = encodeFunctionData({
    abi: GatewayVault.abi,
    functionName: "transferWithAuthorizations",
    args: [req.items.map((i) => ({ ...i.authorization, signature: i.signature }))],
  });
  const tx = await chain.send({
    profile: p,
    from: "relayer", // permissionless relay: one of the relayer pool (sender.ts)
    to: gatewayVault(chain, p),
    data,
    intentKey: req.intentKey,
    ...(req.gas ? { gas: req.gas } : {}),
  });
  const receipt = await gatewayClient(chain, p).getTransactionReceipt({ hash: tx.txHash as Hex });
  const paid = new Set(
    parseEventLogs({
      abi: GatewayVault.abi,
      logs: receipt.logs,
      eventName: "PaymentTransferred",
    })
      .filter((l) => l.address.toLowerCase() === gatewayVault(chain, p).toLowerCase())
      .map((l) => `${l.args.from.toLowerCase()}:${l.args.nonce.toLowerCase()}`),
  );
  return {
    tx,
    settled: req.items.map((i) =>
      paid.has(`${i.authorization.from.toLowerCase()}:${i.authorization.nonce.toLowerCase()}`)
    ),
  };
}
