import assert from "node:assert/strict";
import { stopMessage } from "../../src/modules/streams/streams.rules.ts";

Deno.test("streams: the stop message counts an earlier withdrawal once", () => {
  assert.equal(
    stopMessage({ totalStreamed: 7_000n, paidAtStop: 7_000n, refundedToSender: 9_993_000n }),
    "Stream stopped. 0.007 USDC went to the receiver and 9.993 USDC was refunded to the sender.",
  );
  // The receiver had withdrawn all of it before the stop: nothing more went out at the stop.
  assert.equal(
    stopMessage({ totalStreamed: 7_000n, paidAtStop: 0n, refundedToSender: 9_993_000n }),
    "Stream stopped. 0.007 USDC went to the receiver (0 USDC sent now; the rest was withdrawn " +
      "before) and 9.993 USDC was refunded to the sender.",
  );
});
