// SPDX-License-Identifier: MIT
pragma solidity ^0.8.26;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {ReentrancyGuard} from "@openzeppelin/contracts/utils/ReentrancyGuard.sol";

/**
 * @title StreamVault
 * @notice Per-second USDC streams. The sender locks `deposit` at creation; the receiver accrues
 * `rate` base units per second, capped at the deposit: accrued = min(rate * elapsed, deposit),
 * where elapsed ends at the stop time of a stopped stream. The service computes its derived
 * values with the same formula from the same timestamps.
 *
 * - `withdraw`: anyone may call it; it always pays the receiver what has accrued and not yet been
 *   paid (so a drain job can settle a finished stream). Once the whole deposit has been paid the
 *   stream is Completed.
 * - `stop`: the sender only. Pays the receiver everything accrued and unpaid and refunds the rest
 *   of the deposit to the sender in the same transaction; receiver + refund = deposit exactly.
 */
contract StreamVault is ReentrancyGuard {
    using SafeERC20 for IERC20;

    enum Status {
        None,
        Active,
        Stopped,
        Completed
    }

    struct Stream {
        address sender;
        uint64 startTime;
        uint64 stopTime;
        address receiver;
        Status status;
        uint128 rate;
        uint128 deposit;
        uint128 withdrawn;
    }

    IERC20 public immutable usdc;

    mapping(bytes32 id => Stream) private _streams;

    event StreamCreated(
        bytes32 indexed id, address indexed sender, address indexed receiver, uint256 rate, uint256 deposit, uint256 startTime
    );
    event StreamWithdrawn(bytes32 indexed id, address indexed receiver, uint256 amount, uint256 totalWithdrawn);
    event StreamStopped(bytes32 indexed id, uint256 paidToReceiver, uint256 refundedToSender, uint256 totalStreamed, uint256 stopTime);
    event StreamCompleted(bytes32 indexed id, uint256 totalStreamed);

    error ZeroAddress();
    error RateTooLow();
    error ZeroDeposit();
    error StreamExists(bytes32 id);
    error StreamNotFound(bytes32 id);
    error NotActive(bytes32 id, Status status);
    error NotSender(address caller, address sender);
    error NothingToWithdraw(bytes32 id);

    constructor(address usdc_) {
        if (usdc_ == address(0)) revert ZeroAddress();
        usdc = IERC20(usdc_);
    }

    /// @notice Locks `deposit` from the caller (who must have approved this vault) in a new stream.
    function create(bytes32 id, address receiver, uint256 rate, uint256 deposit) external nonReentrant {
        if (receiver == address(0)) revert ZeroAddress();
        if (rate == 0) revert RateTooLow();
        if (deposit == 0) revert ZeroDeposit();
        if (_streams[id].status != Status.None) revert StreamExists(id);
        _streams[id] = Stream({
            sender: msg.sender,
            startTime: uint64(block.timestamp),
            stopTime: 0,
            receiver: receiver,
            status: Status.Active,
            rate: uint128(rate),
            deposit: uint128(deposit),
            withdrawn: 0
        });
        usdc.safeTransferFrom(msg.sender, address(this), deposit);
        emit StreamCreated(id, msg.sender, receiver, rate, deposit, block.timestamp);
    }

    /// @notice min(rate * elapsed, deposit); elapsed ends at the stop time of a stopped stream.
    function accruedAt(bytes32 id, uint256 timestamp) public view returns (uint256) {
        Stream storage s = _streams[id];
        if (s.status == Status.None) revert StreamNotFound(id);
        if (s.status == Status.Completed) return s.deposit;
        uint256 end = s.status == Status.Stopped ? s.stopTime : timestamp;
        if (end <= s.startTime) return 0;
        uint256 a = uint256(s.rate) * (end - s.startTime);
        return a > s.deposit ? s.deposit : a;
    }

    function accrued(bytes32 id) public view returns (uint256) {
        return accruedAt(id, block.timestamp);
    }

    /// @notice Accrued and not yet paid to the receiver (0 once stopped: stop pays it out).
    function withdrawable(bytes32 id) public view returns (uint256) {
        Stream storage s = _streams[id];
        if (s.status != Status.Active) return 0;
        return accrued(id) - s.withdrawn;
    }

    function getStream(bytes32 id) external view returns (Stream memory) {
        return _streams[id];
    }

    /// @notice Pays the receiver what has accrued and is unpaid; completes a fully streamed stream.
    function withdraw(bytes32 id) external nonReentrant returns (uint256 amount) {
        Stream storage s = _streams[id];
        if (s.status == Status.None) revert StreamNotFound(id);
        if (s.status != Status.Active) revert NotActive(id, s.status);
        uint256 a = accrued(id);
        amount = a - s.withdrawn;
        if (amount == 0) revert NothingToWithdraw(id);
        s.withdrawn = uint128(a);
        if (a == s.deposit) s.status = Status.Completed;
        usdc.safeTransfer(s.receiver, amount);
        emit StreamWithdrawn(id, s.receiver, amount, a);
        if (a == s.deposit) emit StreamCompleted(id, a);
    }

    /// @notice Sender only: pays the receiver the accrued remainder and refunds the rest.
    function stop(bytes32 id) external nonReentrant returns (uint256 paid, uint256 refund) {
        Stream storage s = _streams[id];
        if (s.status == Status.None) revert StreamNotFound(id);
        if (msg.sender != s.sender) revert NotSender(msg.sender, s.sender);
        if (s.status != Status.Active) revert NotActive(id, s.status);
        uint256 a = accrued(id);
        paid = a - s.withdrawn;
        refund = s.deposit - a;
        s.withdrawn = uint128(a);
        s.stopTime = uint64(block.timestamp);
        s.status = Status.Stopped;
        if (paid > 0) usdc.safeTransfer(s.receiver, paid);
        if (refund > 0) usdc.safeTransfer(s.sender, refund);
        emit StreamStopped(id, paid, refund, a, block.timestamp);
    }
}
