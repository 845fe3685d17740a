/**
 * One action on an escrow (release, confirm, dispute, refund, resolve), serialised per escrow by
 * a resource claim that holds no connection (DESIGN §11): claim `escrow:<reference>` → read the
 * row and check (wrong party, wrong state: refused, nothing sent) → send the transaction and wait
 * for its receipt with no transaction open → one short transaction applying the change and its
 * event (escrow.apply.ts) → release the claim. The next request for the escrow then sees the row
 * the first left, so 50 identical releases send one transaction and refuse 49 for the state.
 *
 * The apply is skipped when the row no longer needs it (the catch-up, which shares the apply
 * functions, got there first: escrow.catchup.ts), so a change and its event are written once.
 */
import type { Deps } from "../../deps.ts";
import { DomainError } from "../../errors.ts";
import { withClaim } from "../../db/claims.ts";
import type { ProfileName } from "../../chain/profiles.ts";
import type { TxRow } from "../../chain/index.ts";
import * as repo from "./escrow.repo.ts";
import { APPLY } from "./escrow.apply.ts";
import { catchUpEscrow } from "./escrow.catchup.ts";
import {
  actionIntent,
  ESCROW_CLAIM,
  type EscrowActionName,
  escrowClaim,
  type EscrowRow,
  pendingActions,
} from "./escrow.rules.ts";

/**
 * Whose escrows a request may see or act on: the merchant's, on the chain of the credential's
 * environment (DESIGN §11). Null: any escrow (the arbiter, the expiry jobs).
 */
export interface EscrowScope {
  merchantId: string;
  profile: ProfileName;
  /**
   * The request re-runs an Idempotency-Key whose first run died in progress: an action that run
   * already sent is finished and answered, not refused for the state it brought about.
   */
  resumed?: boolean;
}

/** Whether the escrow is within the scope: another merchant's or environment's is not. */
export function inScope(deps: Deps, e: EscrowRow, scope: EscrowScope | null): boolean {
  if (scope === null) return true;
  return e.merchantId === scope.merchantId && deps.chain.has(scope.profile) &&
    deps.chain.chainId(scope.profile) === e.chainId;
}

export interface ActSteps {
  action: EscrowActionName;
  /** Refuses before anything is sent (party, state, expiry). */
  check: (e: EscrowRow) => Promise<void> | void;
  /** Broadcasts with the action's intent (`escrow:<action>:<reference>`) and waits. */
  send: (e: EscrowRow, profile: ProfileName, intentKey: string) => Promise<TxRow>;
}

/**
 * Runs one action. A revert the checks could not foresee (the chain's clock, a state changed
 * outside this service) is mapped to the refusal the checks give. A refusal for the escrow's
 * state may mean the row fell behind the chain (an action mined without its commit): the escrow
 * is caught up, and when that moved the row the action is checked once more on the row as it now
 * is (a resolution of an escrow whose dispute was caught up goes through; a release of one caught
 * up as disputed is refused with DISPUTED), so the answer and the row agree.
 */
export async function act(
  deps: Deps,
  reference: string,
  scope: EscrowScope | null,
  steps: ActSteps,
): Promise<TxRow> {
  // Another merchant's or environment's escrow is refused before its claim is touched, so such
  // requests never make the owner's wait.
  const seen = await repo.findByReference(deps.sql, reference);
  if (!seen || !inScope(deps, seen, scope)) throw new DomainError("escrow_not_found");
  return await withClaim(deps.sql, escrowClaim(reference), async () => {
    for (let caughtUp = false;; caughtUp = true) {
      const e = await repo.findByReference(deps.sql, reference);
      if (!e || !inScope(deps, e, scope)) throw new DomainError("escrow_not_found");
      if (scope?.resumed) {
        // The dead run's transaction, if it sent one (the action's intent): its receipt and
        // its change are this request's answer, whatever the row says now (a catch-up may have
        // applied it: a 400 for the state would tell the caller a paid release failed).
        const profile = deps.chain.profileOf(e.chainId);
        const sent = await deps.chain.transaction(profile, actionIntent(steps.action, reference));
        if (sent) {
          const tx = await sendMapped(deps, e, profile, steps);
          await applyOnce(deps, steps.action, reference, tx);
          return tx;
        }
      }
      try {
        await steps.check(e);
        const profile = deps.chain.profileOf(e.chainId);
        const tx = await sendMapped(deps, e, profile, steps);
        await applyOnce(deps, steps.action, reference, tx);
        return tx;
      } catch (err) {
        if (caughtUp || !(err instanceof DomainError) || err.code !== "escrow_wrong_state") {
          throw err;
        }
        let caught: EscrowActionName[] = [];
        try {
          caught = await catchUpEscrow(deps, reference);
        } catch (e) {
          deps.log.warn("escrow catch-up failed", { reference, error: e });
        }
        if (!caught.length) throw err;
      }
    }
  }, ESCROW_CLAIM);
}

async function sendMapped(deps: Deps, e: EscrowRow, profile: ProfileName, steps: ActSteps) {
  try {
    return await steps.send(e, profile, actionIntent(steps.action, e.reference));
  } catch (err) {
    const hint = err instanceof DomainError && err.code === "chain_reverted"
      ? err.details.hint ?? ""
      : "";
    if (/NotExpired/.test(hint)) throw new DomainError("escrow_not_expired");
    if (/NotActive|NotDisputed/.test(hint)) {
      const onChain = await deps.chain.escrow.read(profile, e.reference);
      throw new DomainError("escrow_wrong_state", {
        escrowState: { status: onChain.status, action: steps.action },
      });
    }
    throw err;
  }
}

/** The action's change and event, in one short transaction, unless the row already has it. */
async function applyOnce(deps: Deps, action: EscrowActionName, reference: string, tx: TxRow) {
  await deps.sql.begin(async (db) => {
    const locked = await repo.lockByReference(db, reference);
    if (!locked || !pendingActions(locked).includes(action)) return;
    await APPLY[action](deps, db, locked, tx, deps.clock.now());
  });
}
