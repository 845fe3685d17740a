// SPDX-License-Identifier: MIT
pragma solidity ^0.8.26;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {IERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/IERC20Permit.sol";

/**
 * @title BatchPayout
 * @notice Pays many recipients in one transaction from a payer's USDC allowance (granted once by
 * an EIP-2612 permit the operator relays). Each transfer is its own low-level call with a gas
 * cap, so one recipient the token refuses (or one that burns gas in a token hook) fails alone:
 * the others are paid and every recipient gets a `Payout` event with `ok`.
 *
 * @dev Only the operator may move a payer's allowance, and a chunk id pays at most once, so a
 * chunk re-sent after a crash (a second transaction for the same chunk) reverts instead of paying
 * twice.
 */
contract BatchPayout {
    /// @notice Gas each transfer may use; a plain USDC transferFrom needs well under half.
    uint256 public constant TRANSFER_GAS = 100_000;

    IERC20 public immutable token;
    address public immutable operator;

    /// @notice Chunk ids already paid.
    mapping(bytes32 => bool) public paid;

    /// @notice One per recipient of a chunk, in order; `index` is the recipient's place in its batch.
    event Payout(bytes32 indexed chunkId, uint256 index, address indexed recipient, uint256 amount, bool ok);

    error NotOperator();
    error ChunkAlreadyPaid(bytes32 chunkId);
    error LengthMismatch();
    error PermitFailed();

    constructor(IERC20 token_, address operator_) {
        token = token_;
        operator = operator_;
    }

    /**
     * @notice Relays the payer's permit for this contract. A permit already used (a retry) is
     * fine as long as the allowance it granted is still there; the check after the call also
     * keeps a gas estimate from settling on too little gas for the permit itself.
     */
    function permit(address payer, uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s) external {
        if (msg.sender != operator) revert NotOperator();
        try IERC20Permit(address(token)).permit(payer, address(this), value, deadline, v, r, s) {} catch {}
        if (token.allowance(payer, address(this)) < value) revert PermitFailed();
    }

    /**
     * @notice Pays `amounts[i]` to `recipients[i]` from `payer`, each attempted on its own.
     * @param firstIndex the batch index of `recipients[0]` (events carry batch indexes).
     */
    function pay(
        bytes32 chunkId,
        address payer,
        address[] calldata recipients,
        uint256[] calldata amounts,
        uint256 firstIndex
    ) external {
        if (msg.sender != operator) revert NotOperator();
        if (recipients.length != amounts.length) revert LengthMismatch();
        if (paid[chunkId]) revert ChunkAlreadyPaid(chunkId);
        paid[chunkId] = true;
        for (uint256 i = 0; i < recipients.length; i++) {
            (bool ok, bytes memory ret) = address(token).call{gas: TRANSFER_GAS}(
                abi.encodeCall(IERC20.transferFrom, (payer, recipients[i], amounts[i]))
            );
            // A token that returns false instead of reverting has failed too.
            if (ok && ret.length > 0) ok = ret.length == 32 && abi.decode(ret, (bool));
            emit Payout(chunkId, firstIndex + i, recipients[i], amounts[i], ok);
        }
    }
}
