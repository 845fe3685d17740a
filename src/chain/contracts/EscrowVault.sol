// SPDX-License-Identifier: MIT
pragma solidity ^0.8.26;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {IERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/IERC20Permit.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {IERC3009} from "@openzeppelin/contracts/interfaces/draft-IERC3009.sol";

/**
 * @title EscrowVault
 * @notice Holds USDC per escrow id between a depositor and a beneficiary until the depositor
 * releases it, an arbiter resolves a dispute, or it expires and is refunded to the depositor.
 *
 *   ACTIVE --release (depositor)--------------------> RELEASED
 *   ACTIVE --confirm (beneficiary)------------------> ACTIVE (confirmed = true)
 *   ACTIVE --dispute (depositor | beneficiary)------> DISPUTED
 *   ACTIVE --refund (anyone, at or after expiresAt)-> REFUNDED
 *   DISPUTED --resolve(true) (arbiter)--------------> RELEASED
 *   DISPUTED --resolve(false) (arbiter)-------------> REFUNDED
 *
 * @dev Funds are pulled at creation, either from the depositor's own transaction with an EIP-2612
 * permit, or with the depositor's EIP-3009 ReceiveWithAuthorization submitted by anyone (the
 * service relays it). The authorization nonce is derived from every term of the escrow, so a
 * signature funds exactly the escrow its depositor agreed to, once.
 */
contract EscrowVault {
    using SafeERC20 for IERC20;

    enum Status {
        None,
        Active,
        Disputed,
        Released,
        Refunded
    }

    struct Escrow {
        address depositor;
        address beneficiary;
        address arbiter;
        uint64 expiresAt;
        Status status;
        bool confirmed;
        uint256 amount;
        bytes32 disputeReasonHash;
        address disputedBy;
    }

    struct Terms {
        bytes32 id;
        address depositor;
        address beneficiary;
        address arbiter;
        uint256 amount;
        uint64 expiresAt;
    }

    /// @notice The depositor's EIP-3009 ReceiveWithAuthorization minus what the terms fix.
    struct Authorization {
        uint256 validAfter;
        uint256 validBefore;
        uint8 v;
        bytes32 r;
        bytes32 s;
    }

    IERC20 public immutable usdc;

    mapping(bytes32 id => Escrow) private _escrows;

    event EscrowCreated(
        bytes32 indexed id,
        address indexed depositor,
        address indexed beneficiary,
        address arbiter,
        uint256 amount,
        uint64 expiresAt
    );
    event EscrowReleased(bytes32 indexed id, address indexed beneficiary, uint256 amount);
    event EscrowConfirmed(bytes32 indexed id, address indexed beneficiary);
    event EscrowDisputed(bytes32 indexed id, address indexed by, bytes32 reasonHash);
    event DisputeResolved(bytes32 indexed id, bool released, address indexed to, uint256 amount);
    event EscrowRefunded(bytes32 indexed id, address indexed depositor, uint256 amount);

    error ZeroAddress();
    error ZeroAmount();
    error InvalidParties();
    error InvalidExpiry(uint64 expiresAt);
    error EscrowExists(bytes32 id);
    error UnknownEscrow(bytes32 id);
    error NotDepositor(address caller);
    error NotBeneficiary(address caller);
    error NotParty(address caller);
    error NotArbiter(address caller);
    error NotActive(bytes32 id, Status status);
    error NotDisputed(bytes32 id, Status status);
    error NotExpired(uint64 expiresAt);
    error AlreadyConfirmed(bytes32 id);
    /// @dev The permit reverted and the existing allowance does not cover the amount.
    error PermitFailed(bytes reason);

    constructor(address usdc_) {
        if (usdc_ == address(0)) revert ZeroAddress();
        usdc = IERC20(usdc_);
    }

    /// @notice Creates an escrow funded from the caller (the depositor) with an EIP-2612 permit.
    function createWithPermit(Terms calldata t, uint256 permitDeadline, uint8 v, bytes32 r, bytes32 s)
        external
    {
        if (msg.sender != t.depositor) revert NotDepositor(msg.sender);
        _open(t);
        try IERC20Permit(address(usdc)).permit(t.depositor, address(this), t.amount, permitDeadline, v, r, s) {
            // allowance set
        } catch (bytes memory reason) {
            if (usdc.allowance(t.depositor, address(this)) < t.amount) revert PermitFailed(reason);
        }
        usdc.safeTransferFrom(t.depositor, address(this), t.amount);
    }

    /// @notice Creates an escrow funded with the depositor's EIP-3009 authorization (to = this
    /// vault, value = amount, nonce = authorizationNonce(t)); anyone may submit it.
    function createWithAuthorization(Terms calldata t, Authorization calldata auth) external {
        _open(t);
        IERC3009(address(usdc)).receiveWithAuthorization(
            t.depositor,
            address(this),
            t.amount,
            auth.validAfter,
            auth.validBefore,
            authorizationNonce(t),
            auth.v,
            auth.r,
            auth.s
        );
    }

    /// @notice The EIP-3009 nonce a depositor signs to fund `t`: it binds every term.
    function authorizationNonce(Terms calldata t) public pure returns (bytes32) {
        return keccak256(abi.encode(t.id, t.depositor, t.beneficiary, t.arbiter, t.amount, t.expiresAt));
    }

    /// @notice The depositor pays the beneficiary.
    function release(bytes32 id) external {
        Escrow storage e = _active(id);
        if (msg.sender != e.depositor) revert NotDepositor(msg.sender);
        e.status = Status.Released;
        usdc.safeTransfer(e.beneficiary, e.amount);
        emit EscrowReleased(id, e.beneficiary, e.amount);
    }

    /// @notice The beneficiary marks the goods or service delivered; the escrow stays active.
    function confirm(bytes32 id) external {
        Escrow storage e = _active(id);
        if (msg.sender != e.beneficiary) revert NotBeneficiary(msg.sender);
        if (e.confirmed) revert AlreadyConfirmed(id);
        e.confirmed = true;
        emit EscrowConfirmed(id, msg.sender);
    }

    /// @notice Either party freezes the escrow until the arbiter resolves it.
    function dispute(bytes32 id, bytes32 reasonHash) external {
        Escrow storage e = _active(id);
        if (msg.sender != e.depositor && msg.sender != e.beneficiary) revert NotParty(msg.sender);
        e.status = Status.Disputed;
        e.disputeReasonHash = reasonHash;
        e.disputedBy = msg.sender;
        emit EscrowDisputed(id, msg.sender, reasonHash);
    }

    /// @notice The arbiter settles a dispute: to the beneficiary (released) or back (refunded).
    function resolve(bytes32 id, bool released) external {
        Escrow storage e = _escrows[id];
        if (e.status == Status.None) revert UnknownEscrow(id);
        if (msg.sender != e.arbiter) revert NotArbiter(msg.sender);
        if (e.status != Status.Disputed) revert NotDisputed(id, e.status);
        address to = released ? e.beneficiary : e.depositor;
        e.status = released ? Status.Released : Status.Refunded;
        usdc.safeTransfer(to, e.amount);
        emit DisputeResolved(id, released, to, e.amount);
    }

    /// @notice After expiry an active escrow goes back to the depositor; anyone may trigger it.
    function refund(bytes32 id) external {
        Escrow storage e = _active(id);
        if (block.timestamp < e.expiresAt) revert NotExpired(e.expiresAt);
        e.status = Status.Refunded;
        usdc.safeTransfer(e.depositor, e.amount);
        emit EscrowRefunded(id, e.depositor, e.amount);
    }

    function getEscrow(bytes32 id) external view returns (Escrow memory) {
        return _escrows[id];
    }

    function _open(Terms calldata t) private {
        if (t.depositor == address(0) || t.beneficiary == address(0) || t.arbiter == address(0)) {
            revert ZeroAddress();
        }
        if (t.depositor == t.beneficiary || t.beneficiary == address(this)) revert InvalidParties();
        if (t.amount == 0) revert ZeroAmount();
        if (t.expiresAt <= block.timestamp) revert InvalidExpiry(t.expiresAt);
        if (_escrows[t.id].status != Status.None) revert EscrowExists(t.id);
        _escrows[t.id] = Escrow({
            depositor: t.depositor,
            beneficiary: t.beneficiary,
            arbiter: t.arbiter,
            expiresAt: t.expiresAt,
            status: Status.Active,
            confirmed: false,
            amount: t.amount,
            disputeReasonHash: bytes32(0),
            disputedBy: address(0)
        });
        emit EscrowCreated(t.id, t.depositor, t.beneficiary, t.arbiter, t.amount, t.expiresAt);
    }

    function _active(bytes32 id) private view returns (Escrow storage e) {
        e = _escrows[id];
        if (e.status == Status.None) revert UnknownEscrow(id);
        if (e.status != Status.Active) revert NotActive(id, e.status);
    }
}
