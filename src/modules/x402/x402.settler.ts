/**
 * Gateway settlements, batched by load: a proof is settled at once when nothing is in flight;
 * while a settlement transaction is being mined, the proofs that arrive meanwhile wait and go
 * together in the next one (`transferWithAuthorizations`, at most MAX_BATCH). At low load every
 * call keeps its own transaction and latency; under load one transaction (one sender nonce, one
 * block) carries many, and from PARALLEL_AFTER waiting up to MAX_IN_FLIGHT transactions are in
 * flight at once. No timers: the in-flight transactions are the batching window.
 */
import type { Deps } from "../../deps.ts";
import { DomainError } from "../../errors.ts";
import { settlementIntent } from "./x402.rules.ts";
import { x402Profile } from "./x402.context.ts";
import type { ProofAuthorization } from "./x402.rules.ts";
import { batchGas } from "./x402.batched.settle.ts";

export const MAX_BATCH = 50;
/**
 * Settlement transactions of one settler in flight at once, at most. Measured with 32 buyers
 * (`deno task bench x402`, 3 alternating runs): 2 / 16 gave 422–455 paid calls/s, 4 / 8 412–425;
 * fewer, fuller transactions leave the node less to mine (docs/benchmarks.md).
 */
export const MAX_IN_FLIGHT = 2;
/** Proofs waiting before a second transaction starts beside one in flight. */
export const PARALLEL_AFTER = 16;
/** Batch intents: the reconcile sweep finds a proof's batch by its nonce in the signed bytes. */
export const BATCH_INTENT_PREFIX = "x402:batch:";

export interface SettleItem {
  attemptId: string;
  authorization: ProofAuthorization;
  signature: `0x${string}`;
}

export interface Settler {
  /** The settlement's transaction hash; throws the chain's error, or x402_settlement_failed. */
  settle(item: SettleItem): Promise<string>;
}

interface Waiting extends SettleItem {
  resolve: (txHash: string) => void;
  reject: (e: unknown) => void;
}

/** One proof, one transaction, its own intent: the path when batching is off. */
export async function settleOne(deps: Deps, item: SettleItem): Promise<string> {
  const a = item.authorization;
  const intentKey = settlementIntent("gateway", a.from, a.nonce);
  const tx = await deps.chain.gateway.settle(x402Profile(deps), "gateway", {
    authorization: a,
    signature: item.signature,
    intentKey,
  });
  return tx.txHash;
}

export function batchingSettler(deps: Deps): Settler {
  const queue: Waiting[] = [];
  let batchCallKnown = false;

  const flush = async (batch: Waiting[]) => {
    if (batch.length === 1) {
      const [only] = batch;
      try {
        only.resolve(await settleOne(deps, only));
      } catch (e) {
        only.reject(e);
      }
      return;
    }
    try {
      const intentKey = `${BATCH_INTENT_PREFIX}${crypto.randomUUID()}`;
      const { tx, settled } = await deps.chain.gateway.settleBatch(x402Profile(deps), {
        items: batch.map((b) => ({
          authorization: b.authorization,
          signature: b.signature,
          domain: "gateway" as const,
        })),
        intentKey,
        // Given, not estimated (a node's estimate re-runs the batch many times), once the vault
        // is known to have the batch call (an older one is refused at estimation: singles).
        ...(batchCallKnown ? { gas: batchGas(batch) } : {}),
      });
      batchCallKnown = true;
      batch.forEach((b, i) =>
        settled[i] ? b.resolve(tx.txHash) : b.reject(
          new DomainError("x402_settlement_failed", {
            hint: "the vault refused this authorization in its batch",
            txHash: tx.txHash,
          }),
        )
      );
    } catch (e) {
      // Refused before anything was broadcast (a vault deployed before the batch call existed
      // and kept because it holds funds, say): each proof goes on its own instead.
      if (e instanceof DomainError && e.code === "chain_reverted" && !e.details.txHash) {
        for (const b of batch) await flush([b]);
        return;
      }
      for (const b of batch) b.reject(e);
    }
  };

  // One transaction in flight is the batching window; under heavier load (at least
  // PARALLEL_AFTER proofs waiting) more start beside it, up to MAX_IN_FLIGHT, so a call waits
  // for about one settlement instead of the one in flight plus its own.
  let inFlight = 0;
  const pump = () => {
    while (
      queue.length > 0 &&
      (inFlight === 0 || (inFlight < MAX_IN_FLIGHT && queue.length >= PARALLEL_AFTER))
    ) {
      const batch = queue.splice(0, MAX_BATCH);
      inFlight++;
      void flush(batch).finally(() => {
        inFlight--;
        pump();
      });
    }
  };

  return {
    settle(item) {
      return new Promise<string>((resolve, reject) => {
        queue.push({ ...item, resolve, reject });
        pump();
      });
    },
  };
}
