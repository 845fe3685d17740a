// SPDX-License-Identifier: MIT
pragma solidity ^0.8.26;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {IERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/IERC20Permit.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {IERC3009} from "@openzeppelin/contracts/interfaces/draft-IERC3009.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";
import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";

/**
 * @title PaymentRouter
 * @notice Settles hosted-checkout payments. The service signs an EIP-712 order (reference, payee,
 * exact amount, deadline); either the payer submits it with their own transaction (permit), or the
 * service relays the payer's EIP-3009 authorization (gasless). The router moves exactly that
 * amount from the payer to the payee, once per reference, emitting the reference so the
 * service's log watcher can match the payment.
 *
 * @dev `reference` is a reserved word in Solidity, so the ABI calls the field `ref`; the signed
 * EIP-712 type keeps the name `reference` (field names only matter in the type string).
 */
contract PaymentRouter is EIP712, Ownable {
    using SafeERC20 for IERC20;

    struct PaymentOrder {
        bytes32 ref;
        address payTo;
        uint256 amount;
        uint256 validBefore;
    }

    /// @notice The payer's EIP-3009 ReceiveWithAuthorization, minus what the order fixes (to,
    /// value, nonce). A struct keeps the relay call within the stack limit.
    struct Authorization {
        address from;
        uint256 validAfter;
        uint256 validBefore;
        uint8 v;
        bytes32 r;
        bytes32 s;
    }

    bytes32 public constant PAYMENT_ORDER_TYPEHASH =
        keccak256("PaymentOrder(bytes32 reference,address payTo,uint256 amount,uint256 validBefore)");

    IERC20 public immutable usdc;

    /// @notice The key whose EIP-712 signature makes an order payable (EOA or ERC-1271).
    address public orderSigner;

    /// @notice References already paid; each can settle once.
    mapping(bytes32 ref => bool) public settled;

    event PaymentSettled(bytes32 indexed ref, address indexed payer, address indexed payTo, uint256 amount);
    event OrderSignerChanged(address indexed previousSigner, address indexed newSigner);

    error InvalidOrderSignature();
    error OrderExpired(uint256 validBefore);
    error AlreadySettled(bytes32 ref);
    error ZeroAmount();
    error InvalidPayTo();
    error ZeroAddress();
    /// @dev The permit reverted and the existing allowance does not cover the amount.
    error PermitFailed(bytes reason);

    constructor(address usdc_, address orderSigner_, address owner_) EIP712("PaymentRouter", "1") Ownable(owner_) {
        if (usdc_ == address(0) || orderSigner_ == address(0)) revert ZeroAddress();
        usdc = IERC20(usdc_);
        orderSigner = orderSigner_;
        emit OrderSignerChanged(address(0), orderSigner_);
    }

    /// @notice Pays `order` from the caller with an EIP-2612 permit for exactly `order.amount`.
    /// @dev A permit front-run from the mempool makes ours revert; the payment then proceeds on
    /// the allowance it already created.
    function payWithPermit(
        PaymentOrder calldata order,
        bytes calldata orderSignature,
        uint256 permitDeadline,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external {
        _accept(order, orderSignature);
        try IERC20Permit(address(usdc)).permit(msg.sender, address(this), order.amount, permitDeadline, v, r, s) {
            // allowance set
        } catch (bytes memory reason) {
            if (usdc.allowance(msg.sender, address(this)) < order.amount) revert PermitFailed(reason);
        }
        usdc.safeTransferFrom(msg.sender, order.payTo, order.amount);
        emit PaymentSettled(order.ref, msg.sender, order.payTo, order.amount);
    }

    /// @notice Gasless checkout: pays `order` from `from` with their EIP-3009
    /// ReceiveWithAuthorization (to = this router, value = exactly `order.amount`, nonce =
    /// `authorizationNonce(order)`). Anyone may submit it (the service relays it from its
    /// operator), so the payer needs USDC and no native gas.
    /// @dev The nonce is derived from the order, never passed in: a signature made for one
    /// payment recovers to another address under any other order (the token refuses it), and the
    /// token spends the nonce, so it pays that payment once. Front-running it only submits the
    /// same payment to the same payee.
    function payWithAuthorization(
        PaymentOrder calldata order,
        bytes calldata orderSignature,
        Authorization calldata auth
    ) external {
        if (auth.from == address(0)) revert ZeroAddress();
        _accept(order, orderSignature);
        IERC3009(address(usdc)).receiveWithAuthorization(
            auth.from,
            address(this),
            order.amount,
            auth.validAfter,
            auth.validBefore,
            authorizationNonce(order),
            auth.v,
            auth.r,
            auth.s
        );
        usdc.safeTransfer(order.payTo, order.amount);
        emit PaymentSettled(order.ref, auth.from, order.payTo, order.amount);
    }

    /// @notice The EIP-3009 nonce a payer signs to pay `order` gaslessly: it binds the reference,
    /// the payee and the amount.
    function authorizationNonce(PaymentOrder calldata order) public pure returns (bytes32) {
        return keccak256(abi.encode(order.ref, order.payTo, order.amount));
    }

    /// @notice Pays `order` from the caller using an allowance given beforehand with `approve`.
    function pay(PaymentOrder calldata order, bytes calldata orderSignature) external {
        _accept(order, orderSignature);
        usdc.safeTransferFrom(msg.sender, order.payTo, order.amount);
        emit PaymentSettled(order.ref, msg.sender, order.payTo, order.amount);
    }

    function setOrderSigner(address newSigner) external onlyOwner {
        if (newSigner == address(0)) revert ZeroAddress();
        emit OrderSignerChanged(orderSigner, newSigner);
        orderSigner = newSigner;
    }

    /// @notice The EIP-712 digest the order signer signs for `order`.
    function hashOrder(PaymentOrder calldata order) public view returns (bytes32) {
        return
            _hashTypedDataV4(
                keccak256(abi.encode(PAYMENT_ORDER_TYPEHASH, order.ref, order.payTo, order.amount, order.validBefore))
            );
    }

    /// @dev Validates the order and marks it settled before any token call (checks-effects-
    /// interactions); a later revert undoes the mark.
    function _accept(PaymentOrder calldata order, bytes calldata orderSignature) private {
        if (order.amount == 0) revert ZeroAmount();
        if (order.payTo == address(0) || order.payTo == address(this)) revert InvalidPayTo();
        if (block.timestamp > order.validBefore) revert OrderExpired(order.validBefore);
        if (settled[order.ref]) revert AlreadySettled(order.ref);
        if (!SignatureChecker.isValidSignatureNowCalldata(orderSigner, hashOrder(order), orderSignature)) {
            revert InvalidOrderSignature();
        }
        settled[order.ref] = true;
    }
}
