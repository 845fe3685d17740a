/** The log handler that settles payments: PaymentRouter's PaymentSettled, past the confirmation depth. */
import type { Deps } from "../../deps.ts";
import { type LogHandler, onPaymentSettled } from "../../chain/index.ts";
import { settleFromLog } from "./payments.service.ts";

export function settlementHandlers(deps: Deps): LogHandler[] {
  return [onPaymentSettled("payments.settled", (tx, event) => settleFromLog(deps, tx, event))];
}
