// SPDX-License-Identifier: MIT
pragma solidity ^0.8.26;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {MessageHashUtils} from "@openzeppelin/contracts/utils/cryptography/MessageHashUtils.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";
import {Multicall} from "@openzeppelin/contracts/utils/Multicall.sol";
import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";

/// @notice Moves a payer's tokens to the calling settlement contract (one per transfer method).
interface IDepositCollector {
    function collect(address payer, address token, uint256 amount, bytes32 channelId, bytes calldata collectorData)
        external;
}

/**
 * @title X402BatchSettlement
 * @notice Our implementation of the x402 `batch-settlement` scheme's EVM binding: unidirectional
 * payment channels funded by deposits, spent by cumulative vouchers the payer signs off chain,
 * claimed by the receiver side many channels per transaction, and swept to the receiver by
 * `settle`. Written from the scheme's specification and the ABI its clients call; the EIP-712
 * domain is `x402 Batch Settlement` / `1` with this contract as verifying contract, so the
 * standard clients' signatures verify here.
 *
 * Accounting: a channel's `balance` is what was deposited minus what went back to the payer
 * (refunds, withdrawals); `totalClaimed` is the receiver's cumulative claim against it. Claimed
 * funds stay counted in `balance` and leave the contract by `settle`, per (receiver, token). The
 * payer can only ever take back `balance - totalClaimed`.
 *
 * Holds no owner and no upgrade path: the code is all the authority there is.
 */
contract X402BatchSettlement is EIP712, Multicall, ReentrancyGuardTransient {
    using SafeERC20 for IERC20;

    /// @notice A channel's immutable terms; its id is their EIP-712 hash under this domain.
    struct ChannelConfig {
        address payer;
        /// @dev An EOA that signs vouchers (ECDSA only), or zero: the payer signs (ERC-1271 too).
        address payerAuthorizer;
        address receiver;
        /// @dev Authorizes claims and refunds by EIP-712 signature; never zero.
        address receiverAuthorizer;
        address token;
        uint40 withdrawDelay;
        bytes32 salt;
    }

    struct Voucher {
        ChannelConfig channel;
        uint128 maxClaimableAmount;
    }

    /// @notice One channel's row of a claim: the payer's voucher and the cumulative total claimed.
    struct VoucherClaim {
        Voucher voucher;
        bytes signature;
        uint128 totalClaimed;
    }

    struct ChannelState {
        uint128 balance;
        uint128 totalClaimed;
    }

    struct PendingWithdrawal {
        uint128 amount;
        uint40 initiatedAt;
    }

    struct ReceiverState {
        uint128 totalClaimed;
        uint128 totalSettled;
    }

    uint40 public constant MIN_WITHDRAW_DELAY = 15 minutes;
    uint40 public constant MAX_WITHDRAW_DELAY = 30 days;

    bytes32 public constant CHANNEL_CONFIG_TYPEHASH = keccak256(
        "ChannelConfig(address payer,address payerAuthorizer,address receiver,address receiverAuthorizer,address token,uint40 withdrawDelay,bytes32 salt)"
    );
    bytes32 public constant VOUCHER_TYPEHASH = keccak256("Voucher(bytes32 channelId,uint128 maxClaimableAmount)");
    bytes32 public constant REFUND_TYPEHASH = keccak256("Refund(bytes32 channelId,uint256 nonce,uint128 amount)");
    bytes32 public constant CLAIM_ENTRY_TYPEHASH =
        keccak256("ClaimEntry(bytes32 channelId,uint128 maxClaimableAmount,uint128 totalClaimed)");
    bytes32 public constant CLAIM_BATCH_TYPEHASH = keccak256(
        "ClaimBatch(ClaimEntry[] claims)ClaimEntry(bytes32 channelId,uint128 maxClaimableAmount,uint128 totalClaimed)"
    );

    mapping(bytes32 channelId => ChannelState) public channels;
    mapping(bytes32 channelId => PendingWithdrawal) public pendingWithdrawals;
    /// @notice The nonce the next signed refund must carry; every refund advances it.
    mapping(bytes32 channelId => uint256) public refundNonce;
    mapping(address receiver => mapping(address token => ReceiverState)) public receivers;

    event ChannelCreated(bytes32 indexed channelId, ChannelConfig config);
    event ChannelClosed(bytes32 indexed channelId, ChannelConfig config);
    event Deposited(bytes32 indexed channelId, address indexed sender, uint128 amount, uint128 newBalance);
    event Claimed(bytes32 indexed channelId, address indexed sender, uint128 claimAmount, uint128 newTotalClaimed);
    event Settled(address indexed receiver, address indexed token, address indexed sender, uint128 amount);
    event Refunded(bytes32 indexed channelId, address indexed sender, uint128 amount);
    event WithdrawInitiated(bytes32 indexed channelId, uint128 amount, uint40 finalizeAfter);
    event WithdrawFinalized(bytes32 indexed channelId, address indexed sender, uint128 amount);

    error ZeroAddress();
    error ZeroAmount();
    error WithdrawDelayOutOfRange(uint40 withdrawDelay);
    error DepositShortfall(uint256 received, uint256 expected);
    error EmptyBatch();
    error MixedReceiverAuthorizers();
    error NotReceiverSide();
    error NotPayerSide();
    error InvalidSignature();
    error InvalidVoucherSignature(bytes32 channelId);
    error ClaimExceedsVoucher(bytes32 channelId, uint128 totalClaimed, uint128 maxClaimableAmount);
    error ClaimExceedsBalance(bytes32 channelId, uint128 totalClaimed, uint128 balance);
    error InvalidRefundNonce(uint256 expected, uint256 given);
    error WithdrawAlreadyPending(bytes32 channelId);
    error NoWithdrawPending(bytes32 channelId);
    error WithdrawNotReady(uint256 finalizeAfter);
    error WithdrawExceedsAvailable(uint128 amount, uint128 available);

    constructor() EIP712("x402 Batch Settlement", "1") {}

    // ---- deposits ---------------------------------------------------------------------------

    /**
     * @notice Funds the channel `config` names with `amount`, pulled from its payer by `collector`
     * (e.g. an ERC-3009 authorization bound to the channel). Anyone may submit it: the
     * collector's authorization is the permission. Creates the channel on its first deposit.
     */
    function deposit(ChannelConfig calldata config, uint128 amount, address collector, bytes calldata collectorData)
        external
        nonReentrant
    {
        _checkConfig(config);
        if (amount == 0) revert ZeroAmount();
        if (collector == address(0)) revert ZeroAddress();
        bytes32 id = getChannelId(config);
        IERC20 token = IERC20(config.token);
        uint256 before = token.balanceOf(address(this));
        IDepositCollector(collector).collect(config.payer, config.token, amount, id, collectorData);
        uint256 received = token.balanceOf(address(this)) - before;
        if (received != amount) revert DepositShortfall(received, amount);

        ChannelState storage ch = channels[id];
        bool opened = ch.balance == 0 && ch.totalClaimed == 0;
        ch.balance += amount;
        if (opened) emit ChannelCreated(id, config);
        emit Deposited(id, msg.sender, amount, ch.balance);
    }

    // ---- claims and settlement --------------------------------------------------------------

    /// @notice Claims each row's `totalClaimed`; the caller is each row's receiver or its authorizer.
    function claim(VoucherClaim[] calldata voucherClaims) external nonReentrant {
        if (voucherClaims.length == 0) revert EmptyBatch();
        bytes32 ds = _domainSeparatorV4();
        for (uint256 i = 0; i < voucherClaims.length; ++i) {
            ChannelConfig calldata c = voucherClaims[i].voucher.channel;
            if (msg.sender != c.receiver && msg.sender != c.receiverAuthorizer) revert NotReceiverSide();
            _claim(ds, _channelId(ds, c), voucherClaims[i]);
        }
    }

    /**
     * @notice {claim} for anyone holding the rows' common receiver authorizer's EIP-712
     * `ClaimBatch` signature over them (relayers; one signature covers many channels).
     */
    function claimWithSignature(VoucherClaim[] calldata voucherClaims, bytes calldata authorizerSignature)
        external
        nonReentrant
    {
        uint256 n = voucherClaims.length;
        if (n == 0) revert EmptyBatch();
        bytes32 ds = _domainSeparatorV4();
        address authorizer = voucherClaims[0].voucher.channel.receiverAuthorizer;
        bytes32[] memory ids = new bytes32[](n);
        bytes32[] memory entries = new bytes32[](n);
        for (uint256 i = 0; i < n; ++i) {
            VoucherClaim calldata c = voucherClaims[i];
            if (c.voucher.channel.receiverAuthorizer != authorizer) revert MixedReceiverAuthorizers();
            ids[i] = _channelId(ds, c.voucher.channel);
            entries[i] = _claimEntryHash(ids[i], c);
        }
        bytes32 digest = MessageHashUtils.toTypedDataHash(ds, _claimBatchHash(entries));
        if (!SignatureChecker.isValidSignatureNow(authorizer, digest, authorizerSignature)) revert InvalidSignature();
        for (uint256 i = 0; i < n; ++i) {
            _claim(ds, ids[i], voucherClaims[i]);
        }
    }

    /// @notice Pays `receiver` everything claimed for it in `token` and not yet settled. Anyone may call.
    function settle(address receiver, address token) external nonReentrant {
        ReceiverState storage r = receivers[receiver][token];
        uint128 amount = r.totalClaimed - r.totalSettled;
        if (amount == 0) return;
        r.totalSettled = r.totalClaimed;
        IERC20(token).safeTransfer(receiver, amount);
        emit Settled(receiver, token, msg.sender, amount);
    }

    // ---- cooperative refunds ----------------------------------------------------------------

    /// @notice The receiver side returns up to `amount` of the unclaimed escrow to the payer.
    function refund(ChannelConfig calldata config, uint128 amount) external nonReentrant {
        if (msg.sender != config.receiver && msg.sender != config.receiverAuthorizer) revert NotReceiverSide();
        _refund(getChannelId(config), config, amount);
    }

    /// @notice {refund} relayed by anyone with the receiver authorizer's `Refund` signature at `nonce`.
    function refundWithSignature(
        ChannelConfig calldata config,
        uint128 amount,
        uint256 nonce,
        bytes calldata receiverAuthorizerSignature
    ) external nonReentrant {
        bytes32 id = getChannelId(config);
        uint256 expected = refundNonce[id];
        if (nonce != expected) revert InvalidRefundNonce(expected, nonce);
        bytes32 digest = getRefundDigest(id, nonce, amount);
        if (!SignatureChecker.isValidSignatureNow(config.receiverAuthorizer, digest, receiverAuthorizerSignature)) {
            revert InvalidSignature();
        }
        _refund(id, config, amount);
    }

    // ---- the payer's escape hatch -----------------------------------------------------------

    /**
     * @notice Starts a timed withdrawal of at most the unclaimed escrow. The receiver side keeps
     * `withdrawDelay` seconds to claim outstanding vouchers before it can be finalized.
     */
    function initiateWithdraw(ChannelConfig calldata config, uint128 amount) external nonReentrant {
        _checkPayerSide(config);
        if (amount == 0) revert ZeroAmount();
        bytes32 id = getChannelId(config);
        PendingWithdrawal storage p = pendingWithdrawals[id];
        if (p.initiatedAt != 0) revert WithdrawAlreadyPending(id);
        ChannelState storage ch = channels[id];
        uint128 available = ch.balance - ch.totalClaimed;
        if (amount > available) revert WithdrawExceedsAvailable(amount, available);
        uint40 now_ = uint40(block.timestamp);
        p.amount = amount;
        p.initiatedAt = now_;
        emit WithdrawInitiated(id, amount, now_ + config.withdrawDelay);
    }

    /// @notice After the delay: pays the payer the pending amount, capped at the unclaimed escrow.
    function finalizeWithdraw(ChannelConfig calldata config) external nonReentrant {
        _checkPayerSide(config);
        bytes32 id = getChannelId(config);
        PendingWithdrawal memory p = pendingWithdrawals[id];
        if (p.initiatedAt == 0) revert NoWithdrawPending(id);
        uint256 finalizeAfter = uint256(p.initiatedAt) + config.withdrawDelay;
        if (block.timestamp < finalizeAfter) revert WithdrawNotReady(finalizeAfter);
        delete pendingWithdrawals[id];
        ChannelState storage ch = channels[id];
        uint128 available = ch.balance - ch.totalClaimed;
        uint128 amount = p.amount < available ? p.amount : available;
        ch.balance -= amount;
        if (amount > 0) IERC20(config.token).safeTransfer(config.payer, amount);
        emit WithdrawFinalized(id, msg.sender, amount);
        if (amount > 0 && ch.balance == 0) emit ChannelClosed(id, config);
    }

    // ---- views ------------------------------------------------------------------------------

    function getChannelId(ChannelConfig calldata config) public view returns (bytes32) {
        return _channelId(_domainSeparatorV4(), config);
    }

    function getVoucherDigest(bytes32 channelId, uint128 maxClaimableAmount) public view returns (bytes32) {
        return _hashTypedDataV4(keccak256(abi.encode(VOUCHER_TYPEHASH, channelId, maxClaimableAmount)));
    }

    function getRefundDigest(bytes32 channelId, uint256 nonce, uint128 amount) public view returns (bytes32) {
        return _hashTypedDataV4(keccak256(abi.encode(REFUND_TYPEHASH, channelId, nonce, amount)));
    }

    /// @notice What the receiver authorizer signs for {claimWithSignature} (defined for empty batches too).
    function getClaimBatchDigest(VoucherClaim[] calldata voucherClaims) external view returns (bytes32) {
        bytes32 ds = _domainSeparatorV4();
        bytes32[] memory entries = new bytes32[](voucherClaims.length);
        for (uint256 i = 0; i < voucherClaims.length; ++i) {
            entries[i] = _claimEntryHash(_channelId(ds, voucherClaims[i].voucher.channel), voucherClaims[i]);
        }
        return MessageHashUtils.toTypedDataHash(ds, _claimBatchHash(entries));
    }

    // ---- internals --------------------------------------------------------------------------

    function _claim(bytes32 ds, bytes32 id, VoucherClaim calldata c) private {
        ChannelState storage ch = channels[id];
        uint128 total = c.totalClaimed;
        uint128 claimed = ch.totalClaimed;
        // Claims are cumulative: a row at or below what is claimed already changes nothing.
        if (total <= claimed) return;
        uint128 max = c.voucher.maxClaimableAmount;
        if (total > max) revert ClaimExceedsVoucher(id, total, max);
        if (total > ch.balance) revert ClaimExceedsBalance(id, total, ch.balance);
        ChannelConfig calldata config = c.voucher.channel;
        bytes32 digest = MessageHashUtils.toTypedDataHash(ds, keccak256(abi.encode(VOUCHER_TYPEHASH, id, max)));
        if (!_voucherSigned(config, digest, c.signature)) revert InvalidVoucherSignature(id);
        uint128 delta = total - claimed;
        ch.totalClaimed = total;
        receivers[config.receiver][config.token].totalClaimed += delta;
        emit Claimed(id, msg.sender, delta, total);
    }

    /// @dev A committed payer authorizer signs with ECDSA only; otherwise the payer, any way it can.
    function _voucherSigned(ChannelConfig calldata config, bytes32 digest, bytes calldata signature)
        private
        view
        returns (bool)
    {
        if (config.payerAuthorizer != address(0)) {
            (address signer, ECDSA.RecoverError err,) = ECDSA.tryRecoverCalldata(digest, signature);
            return err == ECDSA.RecoverError.NoError && signer == config.payerAuthorizer;
        }
        return SignatureChecker.isValidSignatureNow(config.payer, digest, signature);
    }

    /// @dev The nonce advances first, so a refund that moves nothing still spends its signature.
    function _refund(bytes32 id, ChannelConfig calldata config, uint128 amount) private {
        if (amount == 0) revert ZeroAmount();
        refundNonce[id] += 1;
        ChannelState storage ch = channels[id];
        uint128 available = ch.balance - ch.totalClaimed;
        uint128 paid = amount < available ? amount : available;
        if (paid == 0) return;
        ch.balance -= paid;
        PendingWithdrawal storage p = pendingWithdrawals[id];
        if (p.initiatedAt != 0) {
            if (paid >= p.amount) delete pendingWithdrawals[id];
            else p.amount -= paid;
        }
        IERC20(config.token).safeTransfer(config.payer, paid);
        emit Refunded(id, msg.sender, paid);
        if (ch.balance == 0) emit ChannelClosed(id, config);
    }

    function _channelId(bytes32 ds, ChannelConfig calldata c) private pure returns (bytes32) {
        return MessageHashUtils.toTypedDataHash(
            ds,
            keccak256(
                abi.encode(
                    CHANNEL_CONFIG_TYPEHASH,
                    c.payer,
                    c.payerAuthorizer,
                    c.receiver,
                    c.receiverAuthorizer,
                    c.token,
                    c.withdrawDelay,
                    c.salt
                )
            )
        );
    }

    function _claimEntryHash(bytes32 id, VoucherClaim calldata c) private pure returns (bytes32) {
        return keccak256(abi.encode(CLAIM_ENTRY_TYPEHASH, id, c.voucher.maxClaimableAmount, c.totalClaimed));
    }

    function _claimBatchHash(bytes32[] memory entries) private pure returns (bytes32) {
        return keccak256(abi.encode(CLAIM_BATCH_TYPEHASH, keccak256(abi.encodePacked(entries))));
    }

    function _checkConfig(ChannelConfig calldata c) private pure {
        if (
            c.payer == address(0) || c.receiver == address(0) || c.receiverAuthorizer == address(0)
                || c.token == address(0)
        ) revert ZeroAddress();
        if (c.withdrawDelay < MIN_WITHDRAW_DELAY || c.withdrawDelay > MAX_WITHDRAW_DELAY) {
            revert WithdrawDelayOutOfRange(c.withdrawDelay);
        }
    }

    function _checkPayerSide(ChannelConfig calldata c) private view {
        if (msg.sender != c.payer && (c.payerAuthorizer == address(0) || msg.sender != c.payerAuthorizer)) {
            revert NotPayerSide();
        }
    }
}
