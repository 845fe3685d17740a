/** The log handler that settles payments: PaymentRouter's PaymentSettled, past the confirmation depth. */
import type { Deps } from "../../deps.ts";
import type { LogHandler } from "../../chain/index.ts";
import { PaymentRouter } from "../../chain/contracts/artifacts/index.ts";
import { settleFromLog } from "./payments.service.ts";

export function settlementHandlers(deps: Deps): LogHandler[] {
  return [{
    name: "payments.settled",
    contract: "PaymentRouter",
    abi: PaymentRouter.abi,
    eventName: "PaymentSettled",
    handle: async (tx, event, ctx) => {
      const a = event.args as { ref: `0x${string}`; payer: string; payTo: string; amount: bigint };
      await settleFromLog(deps, tx, {
        chainId: ctx.chainId,
        reference: deps.chain.checkout.reference(a.ref),
        payer: a.payer,
        payTo: a.payTo,
        amount: a.amount,
        txHash: event.transactionHash,
        logIndex: event.logIndex,
        blockNumber: event.blockNumber,
      });
    },
  }];
}
