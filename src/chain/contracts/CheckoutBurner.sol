// SPDX-License-Identifier: MIT
pragma solidity ^0.8.26;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {IERC3009} from "@openzeppelin/contracts/interfaces/draft-IERC3009.sol";

/// @notice The part of CCTP v2's TokenMessengerV2 this contract calls (Circle's and ours).
interface ITokenMessengerV2 {
    function depositForBurnWithHook(
        uint256 amount,
        uint32 destinationDomain,
        bytes32 mintRecipient,
        address burnToken,
        bytes32 destinationCaller,
        uint256 maxFee,
        uint32 minFinalityThreshold,
        bytes calldata hookData
    ) external;
}

/**
 * @title CheckoutBurner
 * @notice Cross-chain checkout with one signature: a shopper on a source chain signs an EIP-3009
 * ReceiveWithAuthorization (to = this contract) and anyone (the service's relayer) submits it;
 * the contract pulls exactly that USDC and burns it through the chain's TokenMessengerV2 with
 * the payment's hook data, so the shopper pays no gas on the source chain.
 *
 * The authorization's nonce is `burnNonce(burn)`: it commits to the amount, the destination
 * domain, the mint recipient, the maxFee, the finality and the hook data (the payment
 * reference). The contract derives it from the burn it is asked to make, never takes it as an
 * argument, so a submitter who changes any of them presents a signature that recovers to
 * another address and the token refuses it: nobody can redirect the funds, raise the fee or
 * name another payment. The token spends the nonce, so one signature burns once. The
 * destination caller is always zero (anyone may deliver the message).
 *
 * @dev Holds nothing between transactions: it receives `amount` and the messenger takes it in
 * the same call. Immutable, no owner.
 */
contract CheckoutBurner {
    using SafeERC20 for IERC20;

    /// @notice What is burned and where it is minted.
    struct Burn {
        uint256 amount;
        uint32 destinationDomain;
        bytes32 mintRecipient;
        uint256 maxFee;
        uint32 minFinalityThreshold;
        bytes hookData;
    }

    /// @notice The shopper's ReceiveWithAuthorization, minus what the burn fixes (to, value,
    /// nonce). A struct keeps the call within the stack limit.
    struct Authorization {
        address from;
        uint256 validAfter;
        uint256 validBefore;
        uint8 v;
        bytes32 r;
        bytes32 s;
    }

    IERC20 public immutable usdc;
    ITokenMessengerV2 public immutable tokenMessenger;

    /// @notice One per burn: who paid (the messenger's DepositForBurn names this contract).
    event CheckoutBurn(
        address indexed payer,
        bytes32 indexed nonce,
        uint256 amount,
        uint32 destinationDomain,
        bytes32 mintRecipient,
        uint256 maxFee,
        bytes hookData
    );

    error ZeroAddress();
    error EmptyHookData();

    constructor(address usdc_, address tokenMessenger_) {
        if (usdc_ == address(0) || tokenMessenger_ == address(0)) revert ZeroAddress();
        usdc = IERC20(usdc_);
        tokenMessenger = ITokenMessengerV2(tokenMessenger_);
    }

    /// @notice The EIP-3009 nonce a shopper signs to have `burn` made from their USDC.
    function burnNonce(Burn calldata burn) public pure returns (bytes32) {
        return keccak256(
            abi.encode(
                burn.amount,
                burn.destinationDomain,
                burn.mintRecipient,
                burn.maxFee,
                burn.minFinalityThreshold,
                keccak256(burn.hookData)
            )
        );
    }

    /// @notice Pulls `burn.amount` from `auth.from` with their authorization and burns it.
    function burnWithAuthorization(Burn calldata burn, Authorization calldata auth) external {
        if (auth.from == address(0)) revert ZeroAddress();
        if (burn.hookData.length == 0) revert EmptyHookData();
        bytes32 nonce = burnNonce(burn);
        IERC3009(address(usdc)).receiveWithAuthorization(
            auth.from, address(this), burn.amount, auth.validAfter, auth.validBefore, nonce, auth.v, auth.r, auth.s
        );
        usdc.forceApprove(address(tokenMessenger), burn.amount);
        tokenMessenger.depositForBurnWithHook(
            burn.amount,
            burn.destinationDomain,
            burn.mintRecipient,
            address(usdc),
            bytes32(0),
            burn.maxFee,
            burn.minFinalityThreshold,
            burn.hookData
        );
        emit CheckoutBurn(
            auth.from, nonce, burn.amount, burn.destinationDomain, burn.mintRecipient, burn.maxFee, burn.hookData
        );
    }
}
