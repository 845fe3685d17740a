/**
 * Our ERC-8004 registries have the official registries' interface (erc-8004/erc-8004-contracts
 * 2.0.0, the ABIs of the test fixtures): every function selector with the same outputs and
 * mutability, every event topic with the same indexed fields, every custom error, and nothing
 * else. The only exceptions are the reference deployment's proxy, initializer and owner surface
 * (UUPS, Initializable, Ownable): ours are not upgradeable and have no owner (docs/decisions.md);
 * ours declares two errors of OpenZeppelin's EIP712 it never raises.
 */
import assert from "node:assert/strict";
import {
  type AbiEvent,
  type AbiFunction,
  type AbiItem,
  toEventSelector,
  toFunctionSelector,
} from "viem";
import { formatAbiItem } from "viem/utils";
import {
  AgentIdentityRegistry,
  AgentReputationRegistry,
} from "../../src/chain/contracts/artifacts/index.ts";
import { OFFICIAL } from "../helpers/erc8004.ts";

/** The reference deployment's upgrade and ownership surface, deliberately absent from ours. */
const UPGRADE_SURFACE = new Set([
  "function UPGRADE_INTERFACE_VERSION()",
  "function initialize()",
  "function initialize(address)",
  "function owner()",
  "function proxiableUUID()",
  "function renounceOwnership()",
  "function transferOwnership(address)",
  "function upgradeToAndCall(address,bytes)",
  "event Initialized(uint64)",
  "event OwnershipTransferred(address,address)",
  "event Upgraded(address)",
  "error AddressEmptyCode(address)",
  "error ERC1967InvalidImplementation(address)",
  "error ERC1967NonPayable()",
  "error FailedCall()",
  "error InvalidInitialization()",
  "error NotInitializing()",
  "error OwnableInvalidOwner(address)",
  "error OwnableUnauthorizedAccount(address)",
  "error UUPSUnauthorizedCallContext()",
  "error UUPSUnsupportedProxiableUUID(bytes32)",
]);

/**
 * Declared by OpenZeppelin's (non-upgradeable) EIP712 for names longer than 31 bytes; never
 * raised here ("ERC8004IdentityRegistry" and "1" fit), so callers never see them.
 */
const OUR_EXTRAS = new Set(["error InvalidShortString()", "error StringTooLong(string)"]);

type Item = AbiItem & { type: "function" | "event" | "error" };

/** `kind name(types)`: what a selector or topic is computed from. */
const signature = (i: Item) => `${i.type} ${formatAbiItem(i as never)}`;

/** Everything of an item that callers depend on beyond its signature. */
function shape(i: Item): unknown {
  if (i.type === "function") {
    const f = i as AbiFunction;
    return { outputs: f.outputs.map((o) => o.type), stateMutability: f.stateMutability };
  }
  if (i.type === "event") {
    const e = i as AbiEvent;
    return {
      topic: toEventSelector(e),
      indexed: e.inputs.map((x) => !!x.indexed),
      names: e.inputs.map((x) => x.name),
    };
  }
  return null;
}

const items = (abi: readonly unknown[]) =>
  (abi as Item[]).filter((i) => ["function", "event", "error"].includes(i.type));

for (
  const [name, official, ours] of [
    ["identity", OFFICIAL.IdentityRegistry.abi, AgentIdentityRegistry.abi],
    ["reputation", OFFICIAL.ReputationRegistry.abi, AgentReputationRegistry.abi],
  ] as const
) {
  Deno.test(`ERC-8004 ABI (${name}): the official interface, nothing missing, nothing extra`, () => {
    const mine = new Map(items(ours).map((i) => [signature(i), i]));
    const theirs = new Map(items(official).map((i) => [signature(i), i]));
    const missing = [...theirs.keys()].filter((s) => !mine.has(s) && !UPGRADE_SURFACE.has(s));
    assert.deepEqual(missing, [], `missing from ours: ${missing.join("; ")}`);
    const extra = [...mine.keys()].filter((s) => !theirs.has(s) && !OUR_EXTRAS.has(s));
    assert.deepEqual(extra, [], `ours has more than the official registry: ${extra.join("; ")}`);
    for (const [sig, item] of theirs) {
      if (UPGRADE_SURFACE.has(sig)) continue;
      assert.deepEqual(shape(mine.get(sig)!), shape(item), sig);
      if (item.type === "function") {
        assert.equal(
          toFunctionSelector(mine.get(sig) as AbiFunction),
          toFunctionSelector(item as AbiFunction),
        );
      }
    }
    // The exceptions really are in the official ABI (a stale list would hide a real gap).
    const present = [...UPGRADE_SURFACE].filter((s) => theirs.has(s));
    assert.ok(present.length >= 8, `upgrade surface found: ${present.join("; ")}`);
  });
}
