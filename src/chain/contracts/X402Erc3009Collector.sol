// SPDX-License-Identifier: MIT
pragma solidity ^0.8.26;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";

/// @dev EIP-3009's receive: the (v, r, s) form every USDC version has, and the `bytes` form
/// (USDC v2.2, our test USDC) that also takes ERC-1271 signatures.
interface IReceiveWithAuthorization {
    function receiveWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external;

    function receiveWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes memory signature
    ) external;
}

/**
 * @title X402Erc3009Collector
 * @notice The x402 batch-settlement deposit collector for tokens with EIP-3009: the payer signs a
 * `ReceiveWithAuthorization` to this contract whose nonce is `keccak256(abi.encode(channelId,
 * salt))`, so the authorization funds exactly one channel; the settlement contract calls
 * {collect}, this contract receives the tokens and passes them on to it.
 *
 * Only the settlement contract may call: `receiveWithAuthorization` makes the collector the
 * recipient, and tokens it receives go to the caller, so any other caller could divert them.
 */
contract X402Erc3009Collector {
    using SafeERC20 for IERC20;

    address public immutable settlement;

    error ZeroAddress();
    error NotSettlement(address caller);

    constructor(address settlement_) {
        if (settlement_ == address(0)) revert ZeroAddress();
        settlement = settlement_;
    }

    /// @param collectorData abi.encode(uint256 validAfter, uint256 validBefore, uint256 salt, bytes signature)
    function collect(address payer, address token, uint256 amount, bytes32 channelId, bytes calldata collectorData)
        external
    {
        if (msg.sender != settlement) revert NotSettlement(msg.sender);
        _receive(IReceiveWithAuthorization(token), payer, amount, channelId, collectorData);
        IERC20(token).safeTransfer(msg.sender, amount);
    }

    function _receive(
        IReceiveWithAuthorization token,
        address payer,
        uint256 amount,
        bytes32 channelId,
        bytes calldata collectorData
    ) private {
        (uint256 validAfter, uint256 validBefore, uint256 salt, bytes memory signature) =
            abi.decode(collectorData, (uint256, uint256, uint256, bytes));
        bytes32 nonce = keccak256(abi.encode(channelId, salt));
        if (signature.length != 65) {
            token.receiveWithAuthorization(payer, address(this), amount, validAfter, validBefore, nonce, signature);
            return;
        }
        (bytes32 r, bytes32 s, uint8 v) = _split(signature);
        token.receiveWithAuthorization(payer, address(this), amount, validAfter, validBefore, nonce, v, r, s);
    }

    function _split(bytes memory sig) private pure returns (bytes32 r, bytes32 s, uint8 v) {
        assembly ("memory-safe") {
            r := mload(add(sig, 0x20))
            s := mload(add(sig, 0x40))
            v := byte(0, mload(add(sig, 0x60)))
        }
    }
}
