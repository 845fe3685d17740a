// SPDX-License-Identifier: MIT
pragma solidity ^0.8.26;

import {IERC1271} from "@openzeppelin/contracts/interfaces/IERC1271.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {Create2} from "@openzeppelin/contracts/utils/Create2.sol";

/**
 * @title AgentAccount
 * @notice An agent's smart-contract account: holds USDC (any token, and native value), executes
 * calls its owner sends, and answers ERC-1271 for signatures made by its owner, so what the owner
 * signs on the account's behalf (an x402 payment authorization, its ERC-8004 wallet proof) is
 * valid for the account.
 * @dev The owner signs the EIP-712 digest itself. Every agent has its own owner key, so a
 * signature cannot be replayed against another account of the same owner.
 */
contract AgentAccount is IERC1271 {
    struct Call {
        address target;
        uint256 value;
        bytes data;
    }

    address public immutable owner;

    event Executed(address indexed target, uint256 value, bytes data);

    error NotOwner(address caller);
    error CallFailed(address target, bytes reason);

    constructor(address owner_) {
        owner = owner_;
    }

    receive() external payable {}

    function execute(address target, uint256 value, bytes calldata data) external returns (bytes memory result) {
        if (msg.sender != owner) revert NotOwner(msg.sender);
        result = _call(target, value, data);
    }

    function executeBatch(Call[] calldata calls) external returns (bytes[] memory results) {
        if (msg.sender != owner) revert NotOwner(msg.sender);
        results = new bytes[](calls.length);
        for (uint256 i = 0; i < calls.length; i++) {
            results[i] = _call(calls[i].target, calls[i].value, calls[i].data);
        }
    }

    function isValidSignature(bytes32 hash, bytes memory signature) external view returns (bytes4) {
        (address signer, ECDSA.RecoverError err,) = ECDSA.tryRecover(hash, signature);
        if (err == ECDSA.RecoverError.NoError && signer == owner) return IERC1271.isValidSignature.selector;
        return 0xffffffff;
    }

    function _call(address target, uint256 value, bytes calldata data) private returns (bytes memory) {
        (bool ok, bytes memory result) = target.call{value: value}(data);
        if (!ok) revert CallFailed(target, result);
        emit Executed(target, value, data);
        return result;
    }
}

/**
 * @title AgentAccountFactory
 * @notice Deploys AgentAccounts with CREATE2: the address follows from (owner, salt) and is known
 * before deployment. Creating an existing account returns it, so the call is idempotent; anyone
 * may deploy an account, which is always owned by the owner its address commits to.
 */
contract AgentAccountFactory {
    event AccountCreated(address indexed account, address indexed owner, bytes32 salt);

    function createAccount(address owner, bytes32 salt) external returns (address account) {
        account = getAddress(owner, salt);
        if (account.code.length > 0) return account;
        new AgentAccount{salt: salt}(owner);
        emit AccountCreated(account, owner, salt);
    }

    function getAddress(address owner, bytes32 salt) public view returns (address) {
        bytes32 initCodeHash = keccak256(abi.encodePacked(type(AgentAccount).creationCode, abi.encode(owner)));
        return Create2.computeAddress(salt, initCodeHash);
    }
}
