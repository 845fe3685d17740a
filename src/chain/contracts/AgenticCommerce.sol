// SPDX-License-Identifier: MIT
pragma solidity ^0.8.26;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {ReentrancyGuard} from "@openzeppelin/contracts/utils/ReentrancyGuard.sol";

/**
 * @title AgenticCommerce
 * @notice The ERC-8183 job escrow: a client creates a job for a provider with an evaluator, sets
 * a budget, funds it (USDC held here), the provider submits a deliverable hash, and the evaluator
 * completes it (the budget goes to the provider in the same transaction) or rejects it (back to
 * the client). After `expiredAt` anyone may refund a funded or submitted job to the client.
 *
 *   Open --setBudget (client | provider)--------> Open
 *   Open --fund (client, expectedBudget)--------> Funded
 *   Open --reject (client)----------------------> Rejected
 *   Funded --submit (provider)------------------> Submitted
 *   Funded | Submitted --reject (evaluator)-----> Rejected   (refund to client)
 *   Submitted --complete (evaluator)------------> Completed  (payment to provider)
 *   Funded | Submitted --claimRefund (anyone, at or after expiredAt) --> Expired
 *
 * @dev Any other action reverts with WrongStatus. No hooks and no platform fee (both optional).
 */
contract AgenticCommerce is ReentrancyGuard {
    using SafeERC20 for IERC20;

    enum JobStatus {
        Open,
        Funded,
        Submitted,
        Completed,
        Rejected,
        Expired
    }

    struct Job {
        address client;
        address provider;
        address evaluator;
        uint64 expiredAt;
        JobStatus status;
        uint256 budget;
        bytes32 deliverable;
        bytes32 reason;
        string description;
    }

    IERC20 public immutable paymentToken;
    uint256 public jobCount;
    mapping(uint256 jobId => Job) private _jobs;

    event JobCreated(
        uint256 indexed jobId, address indexed client, address indexed provider, address evaluator, uint256 expiredAt
    );
    event ProviderSet(uint256 indexed jobId, address indexed provider);
    event BudgetSet(uint256 indexed jobId, uint256 amount);
    event JobFunded(uint256 indexed jobId, address indexed client, uint256 amount);
    event JobSubmitted(uint256 indexed jobId, address indexed provider, bytes32 deliverable);
    event JobCompleted(uint256 indexed jobId, address indexed evaluator, bytes32 reason);
    event JobRejected(uint256 indexed jobId, address indexed rejector, bytes32 reason);
    event JobExpired(uint256 indexed jobId);
    event PaymentReleased(uint256 indexed jobId, address indexed provider, uint256 amount);
    event Refunded(uint256 indexed jobId, address indexed client, uint256 amount);

    error ZeroAddress();
    error InvalidExpiry(uint256 expiredAt);
    error JobNotFound(uint256 jobId);
    error WrongStatus(uint256 jobId, JobStatus status);
    error Unauthorized(uint256 jobId, address caller);
    error ProviderAlreadySet(uint256 jobId);
    error ProviderNotSet(uint256 jobId);
    error ZeroBudget(uint256 jobId);
    error BudgetMismatch(uint256 expected, uint256 actual);
    error NotExpired(uint256 expiredAt);

    constructor(address token) {
        if (token == address(0)) revert ZeroAddress();
        paymentToken = IERC20(token);
    }

    function createJob(address provider, address evaluator, uint256 expiredAt, string calldata description)
        external
        returns (uint256 jobId)
    {
        if (evaluator == address(0)) revert ZeroAddress();
        if (expiredAt <= block.timestamp || expiredAt > type(uint64).max) revert InvalidExpiry(expiredAt);
        jobId = ++jobCount;
        Job storage j = _jobs[jobId];
        j.client = msg.sender;
        j.provider = provider;
        j.evaluator = evaluator;
        j.expiredAt = uint64(expiredAt);
        j.description = description;
        emit JobCreated(jobId, msg.sender, provider, evaluator, expiredAt);
    }

    function setProvider(uint256 jobId, address provider) external {
        Job storage j = _inStatus(jobId, JobStatus.Open);
        if (msg.sender != j.client) revert Unauthorized(jobId, msg.sender);
        if (j.provider != address(0)) revert ProviderAlreadySet(jobId);
        if (provider == address(0)) revert ZeroAddress();
        j.provider = provider;
        emit ProviderSet(jobId, provider);
    }

    function setBudget(uint256 jobId, uint256 amount) external {
        Job storage j = _inStatus(jobId, JobStatus.Open);
        if (msg.sender != j.client && msg.sender != j.provider) revert Unauthorized(jobId, msg.sender);
        j.budget = amount;
        emit BudgetSet(jobId, amount);
    }

    function fund(uint256 jobId, uint256 expectedBudget) external nonReentrant {
        Job storage j = _inStatus(jobId, JobStatus.Open);
        if (msg.sender != j.client) revert Unauthorized(jobId, msg.sender);
        if (j.provider == address(0)) revert ProviderNotSet(jobId);
        if (j.budget == 0) revert ZeroBudget(jobId);
        if (j.budget != expectedBudget) revert BudgetMismatch(expectedBudget, j.budget);
        j.status = JobStatus.Funded;
        paymentToken.safeTransferFrom(msg.sender, address(this), j.budget);
        emit JobFunded(jobId, msg.sender, j.budget);
    }

    function submit(uint256 jobId, bytes32 deliverable) external {
        Job storage j = _inStatus(jobId, JobStatus.Funded);
        if (msg.sender != j.provider) revert Unauthorized(jobId, msg.sender);
        j.status = JobStatus.Submitted;
        j.deliverable = deliverable;
        emit JobSubmitted(jobId, msg.sender, deliverable);
    }

    function complete(uint256 jobId, bytes32 reason) external nonReentrant {
        Job storage j = _inStatus(jobId, JobStatus.Submitted);
        if (msg.sender != j.evaluator) revert Unauthorized(jobId, msg.sender);
        j.status = JobStatus.Completed;
        j.reason = reason;
        emit JobCompleted(jobId, msg.sender, reason);
        paymentToken.safeTransfer(j.provider, j.budget);
        emit PaymentReleased(jobId, j.provider, j.budget);
    }

    function reject(uint256 jobId, bytes32 reason) external nonReentrant {
        Job storage j = _job(jobId);
        JobStatus s = j.status;
        if (s == JobStatus.Open) {
            if (msg.sender != j.client) revert Unauthorized(jobId, msg.sender);
        } else if (s == JobStatus.Funded || s == JobStatus.Submitted) {
            if (msg.sender != j.evaluator) revert Unauthorized(jobId, msg.sender);
        } else {
            revert WrongStatus(jobId, s);
        }
        j.status = JobStatus.Rejected;
        j.reason = reason;
        emit JobRejected(jobId, msg.sender, reason);
        if (s != JobStatus.Open) {
            paymentToken.safeTransfer(j.client, j.budget);
            emit Refunded(jobId, j.client, j.budget);
        }
    }

    function claimRefund(uint256 jobId) external nonReentrant {
        Job storage j = _job(jobId);
        if (j.status != JobStatus.Funded && j.status != JobStatus.Submitted) revert WrongStatus(jobId, j.status);
        if (block.timestamp < j.expiredAt) revert NotExpired(j.expiredAt);
        j.status = JobStatus.Expired;
        emit JobExpired(jobId);
        paymentToken.safeTransfer(j.client, j.budget);
        emit Refunded(jobId, j.client, j.budget);
    }

    function getJob(uint256 jobId) external view returns (Job memory) {
        return _job(jobId);
    }

    function _job(uint256 jobId) private view returns (Job storage j) {
        j = _jobs[jobId];
        if (j.client == address(0)) revert JobNotFound(jobId);
    }

    function _inStatus(uint256 jobId, JobStatus expected) private view returns (Job storage j) {
        j = _job(jobId);
        if (j.status != expected) revert WrongStatus(jobId, j.status);
    }
}
