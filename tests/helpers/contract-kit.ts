/** What every contract test on a bare anvil needs: clients, the EIP-712 types, revert checks. */
import assert from "node:assert/strict";
import {
  BaseError,
  ContractFunctionRevertedError,
  createPublicClient,
  createTestClient,
  createWalletClient,
  defineChain,
  type Hex,
  http,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import type { Anvil } from "./anvil.ts";

export const PERMIT_TYPES = {
  Permit: [
    { name: "owner", type: "address" },
    { name: "spender", type: "address" },
    { name: "value", type: "uint256" },
    { name: "nonce", type: "uint256" },
    { name: "deadline", type: "uint256" },
  ],
} as const;

/** EIP-3009's fields, shared by TransferWithAuthorization and ReceiveWithAuthorization. */
export const AUTHORIZATION_FIELDS = [
  { name: "from", type: "address" },
  { name: "to", type: "address" },
  { name: "value", type: "uint256" },
  { name: "validAfter", type: "uint256" },
  { name: "validBefore", type: "uint256" },
  { name: "nonce", type: "bytes32" },
] as const;

/** Public, test and per-key wallet clients on the anvil's chain. */
export function anvilClients(anvil: Anvil) {
  const chain = defineChain({
    id: anvil.chainId,
    name: "anvil",
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [anvil.rpcUrl] } },
  });
  const transport = http(anvil.rpcUrl);
  return {
    chain,
    transport,
    pub: createPublicClient({ chain, transport }),
    testClient: createTestClient({ chain, transport, mode: "anvil" }),
    wallet: (key: Hex) =>
      createWalletClient({ account: privateKeyToAccount(key), chain, transport }),
  };
}

/** Asserts that `promise` rejects with the named custom error. */
export async function reverts(promise: Promise<unknown>, errorName: string): Promise<void> {
  await assert.rejects(promise, (e: unknown) => {
    assert.ok(e instanceof BaseError, `expected a viem error, got ${e}`);
    const revert = e.walk((x) => x instanceof ContractFunctionRevertedError);
    assert.ok(
      revert instanceof ContractFunctionRevertedError,
      `expected revert ${errorName}, got ${e.shortMessage}`,
    );
    assert.equal(revert.data?.errorName, errorName, revert.shortMessage);
    return true;
  });
}

/** Asserts that `promise` rejects with `require(false, text)`'s revert reason. */
export async function revertsWith(promise: Promise<unknown>, text: string): Promise<void> {
  await assert.rejects(promise, (e: unknown) => {
    assert.ok(e instanceof BaseError, `expected a viem error, got ${e}`);
    const revert = e.walk((x) => x instanceof ContractFunctionRevertedError);
    assert.ok(
      revert instanceof ContractFunctionRevertedError,
      `expected revert "${text}", got ${e.shortMessage}`,
    );
    assert.equal(revert.reason, text, revert.shortMessage);
    return true;
  });
}
