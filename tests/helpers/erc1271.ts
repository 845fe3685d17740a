/** A tiny ERC-1271 smart account for tests, compiled here with solc: valid when its owner signed. */
import assert from "node:assert/strict";
import solc from "solc";
import type { Hex } from "viem";

/** A minimal ERC-1271 smart account: valid when its owner's ECDSA key signed the hash. */
const WALLET_1271 = `
// SPDX-License-Identifier: MIT
pragma solidity ^0.8.26;
contract Test1271Wallet {
    address public immutable owner;
    constructor(address owner_) { owner = owner_; }
    function isValidSignature(bytes32 hash, bytes memory sig) external view returns (bytes4) {
        if (sig.length != 65) return 0xffffffff;
        bytes32 r; bytes32 s; uint8 v;
        assembly { r := mload(add(sig, 32)) s := mload(add(sig, 64)) v := byte(0, mload(add(sig, 96))) }
        return ecrecover(hash, v, r, s) == owner ? bytes4(0x1626ba7e) : bytes4(0xffffffff);
    }
    function approve(address token, address spender, uint256 value) external {
        require(msg.sender == owner);
        (bool ok,) = token.call(abi.encodeWithSignature("approve(address,uint256)", spender, value));
        require(ok);
    }
}`;

/**
 * An ERC-1271 account whose owner can take its signatures back (`revoke`): what it answers for a
 * signature may change between a check and a settlement, as any smart account's may.
 */
const REVOCABLE_1271 = `
// SPDX-License-Identifier: MIT
pragma solidity ^0.8.26;
contract Revocable1271Wallet {
    address public immutable owner;
    bool public revoked;
    constructor(address owner_) { owner = owner_; }
    function revoke() external { require(msg.sender == owner); revoked = true; }
    function isValidSignature(bytes32 hash, bytes memory sig) external view returns (bytes4) {
        if (revoked || sig.length != 65) return 0xffffffff;
        bytes32 r; bytes32 s; uint8 v;
        assembly { r := mload(add(sig, 32)) s := mload(add(sig, 64)) v := byte(0, mload(add(sig, 96))) }
        return ecrecover(hash, v, r, s) == owner ? bytes4(0x1626ba7e) : bytes4(0xffffffff);
    }
}`;

export function compile1271(): { abi: readonly unknown[]; bytecode: Hex } {
  return compileOne("Test1271Wallet", WALLET_1271);
}

export function compileRevocable1271(): { abi: readonly unknown[]; bytecode: Hex } {
  return compileOne("Revocable1271Wallet", REVOCABLE_1271);
}

function compileOne(name: string, content: string): { abi: readonly unknown[]; bytecode: Hex } {
  const out = JSON.parse(solc.compile(JSON.stringify({
    language: "Solidity",
    sources: { [`${name}.sol`]: { content } },
    settings: { outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } } },
  })));
  const errors = (out.errors ?? []).filter((e: { severity: string }) => e.severity === "error");
  assert.equal(errors.length, 0, JSON.stringify(errors));
  const c = out.contracts[`${name}.sol`][name];
  return { abi: c.abi, bytecode: `0x${c.evm.bytecode.object}` };
}
