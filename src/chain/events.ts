/**
 * Typed events for modules: the watcher decodes our contracts' logs, and these constructors turn
 * a decoded log into the event a module acts on (a payment reference as text, checksummable
 * addresses, base units), so no module handles an ABI, a bytes32 or a call back into chain.
 */
import type { Tx } from "../db/client.ts";
import { PaymentRouter } from "./contracts/artifacts/index.ts";
import { bytes32ToReference } from "./checkout.ts";
import type { LogHandler } from "./watcher.ts";

/** Where a log sits: enough to find it on chain and to act on it once. */
export interface LogPosition {
  chainId: number;
  txHash: string;
  logIndex: number;
  blockNumber: bigint;
}

/** PaymentRouter's PaymentSettled: `amount` base units from `payer` reached `payTo`. */
export interface PaymentSettledEvent extends LogPosition {
  reference: string;
  payer: `0x${string}`;
  payTo: `0x${string}`;
  amount: bigint;
}

/** A handler for PaymentSettled past the confirmation depth, run in the watcher's transaction. */
export function onPaymentSettled(
  name: string,
  handle: (tx: Tx, event: PaymentSettledEvent) => Promise<unknown>,
): LogHandler {
  return {
    name,
    contract: "PaymentRouter",
    abi: PaymentRouter.abi,
    eventName: "PaymentSettled",
    handle: async (tx, event, ctx) => {
      const a = event.args as {
        ref: `0x${string}`;
        payer: `0x${string}`;
        payTo: `0x${string}`;
        amount: bigint;
      };
      await handle(tx, {
        chainId: ctx.chainId,
        reference: bytes32ToReference(a.ref),
        payer: a.payer,
        payTo: a.payTo,
        amount: a.amount,
        txHash: event.transactionHash,
        logIndex: event.logIndex,
        blockNumber: event.blockNumber,
      });
    },
  };
}
