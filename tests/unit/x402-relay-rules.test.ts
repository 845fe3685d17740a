/**
 * The relayed deposit's and withdrawal's rules (x402.rules.ts): what is refused from their terms
 * and windows alone.
 */
import assert from "node:assert/strict";
import {
  RELAY_MARGIN_SECONDS,
  RELAY_MIN_DEPOSIT,
  relayDeadlineOpen,
  relayTermsRefusal,
  relayWindowOpen,
  relayWithdrawalTooSmall,
} from "../../src/modules/x402/x402.rules.ts";

const VAULT = "0x00000000000000000000000000000000000000aA";

Deno.test("a relayed deposit's terms: to the vault (any case), at least the minimum", () => {
  const terms = { to: VAULT.toLowerCase(), value: RELAY_MIN_DEPOSIT };
  assert.equal(relayTermsRefusal(terms, VAULT), null);
  assert.equal(
    relayTermsRefusal({ ...terms, to: VAULT.toUpperCase().replace("0X", "0x") }, VAULT),
    null,
  );
  assert.equal(
    relayTermsRefusal({ ...terms, to: "0x00000000000000000000000000000000000000ab" }, VAULT),
    "x402_relay_vault",
  );
  assert.equal(
    relayTermsRefusal({ ...terms, value: RELAY_MIN_DEPOSIT - 1n }, VAULT),
    "x402_relay_minimum",
  );
  // The vault comes first: a dust deposit elsewhere is named for where it goes.
  assert.equal(relayTermsRefusal({ to: "0x01", value: 1n }, VAULT), "x402_relay_vault");
});

Deno.test("a relayed deposit's window: past validAfter, and open until it can be mined", () => {
  const now = 1_800_000_000n;
  const open = { validAfter: now - 1n, validBefore: now + RELAY_MARGIN_SECONDS + 1n };
  assert.equal(relayWindowOpen(open, now), true);
  assert.equal(relayWindowOpen({ ...open, validAfter: 0n }, now), true);
  // The token wants block.timestamp > validAfter: equal to now is not open yet.
  assert.equal(relayWindowOpen({ ...open, validAfter: now }, now), false);
  assert.equal(relayWindowOpen({ ...open, validBefore: now + RELAY_MARGIN_SECONDS }, now), false);
  assert.equal(relayWindowOpen({ ...open, validBefore: now - 1n }, now), false);
});

Deno.test("a relayed withdrawal: at least the minimum, or everything the account can take", () => {
  assert.equal(relayWithdrawalTooSmall(RELAY_MIN_DEPOSIT, 10n * RELAY_MIN_DEPOSIT), false);
  assert.equal(relayWithdrawalTooSmall(RELAY_MIN_DEPOSIT - 1n, 10n * RELAY_MIN_DEPOSIT), true);
  // A balance under the minimum comes out whole, once; part of it does not.
  assert.equal(relayWithdrawalTooSmall(500_000n, 500_000n), false);
  assert.equal(relayWithdrawalTooSmall(400_000n, 500_000n), true);
  assert.equal(relayWithdrawalTooSmall(1n, 1n), false);
});

Deno.test("a relayed withdrawal's deadline: open until it can be mined", () => {
  const now = 1_800_000_000n;
  assert.equal(relayDeadlineOpen(now + RELAY_MARGIN_SECONDS + 1n, now), true);
  assert.equal(relayDeadlineOpen(now + RELAY_MARGIN_SECONDS, now), false);
  assert.equal(relayDeadlineOpen(now, now), false);
  assert.equal(relayDeadlineOpen(0n, now), false);
});
