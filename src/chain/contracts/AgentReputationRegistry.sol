// SPDX-License-Identifier: MIT
pragma solidity ^0.8.26;

import {IERC721} from "@openzeppelin/contracts/token/ERC721/IERC721.sol";

/**
 * @title AgentReputationRegistry
 * @notice The ERC-8004 reputation registry: clients give feedback (a signed fixed-point value,
 * two tags, the endpoint, an off-chain file and its hash) about agents of the identity registry;
 * anyone reads each entry and a summary over chosen clients and tags.
 *
 * @dev Follows the ERC's interface: `giveFeedback`, `revokeFeedback`, `appendResponse`,
 * `readFeedback`, `getSummary`, `getClients`, `getLastIndex`, `getIdentityRegistry` and the events
 * `NewFeedback`, `FeedbackRevoked`, `ResponseAppended`. Feedback indices start at 1 per
 * (agent, client). An agent's owner or approved operator cannot rate it. `getSummary` with no
 * client addresses summarises every client (callers that fear Sybil clients pass their list).
 */
contract AgentReputationRegistry {
    struct Feedback {
        int128 value;
        uint8 valueDecimals;
        bool isRevoked;
        string tag1;
        string tag2;
    }

    IERC721 private immutable _identity;

    mapping(uint256 agentId => mapping(address client => Feedback[])) private _feedback;
    mapping(uint256 agentId => address[]) private _clients;
    mapping(uint256 agentId => mapping(address client => bool)) private _known;
    mapping(uint256 agentId => mapping(address client => mapping(uint64 index => uint64))) private _responses;

    event NewFeedback(
        uint256 indexed agentId,
        address indexed clientAddress,
        uint64 feedbackIndex,
        int128 value,
        uint8 valueDecimals,
        string indexed indexedTag1,
        string tag1,
        string tag2,
        string endpoint,
        string feedbackURI,
        bytes32 feedbackHash
    );
    event FeedbackRevoked(uint256 indexed agentId, address indexed clientAddress, uint64 indexed feedbackIndex);
    event ResponseAppended(
        uint256 indexed agentId,
        address indexed clientAddress,
        uint64 feedbackIndex,
        address indexed responder,
        string responseURI,
        bytes32 responseHash
    );

    error SelfFeedback(uint256 agentId, address caller);
    error InvalidDecimals(uint8 valueDecimals);
    error UnknownFeedback(uint256 agentId, address clientAddress, uint64 feedbackIndex);
    error AlreadyRevoked(uint64 feedbackIndex);

    constructor(address identityRegistry) {
        _identity = IERC721(identityRegistry);
    }

    function getIdentityRegistry() external view returns (address) {
        return address(_identity);
    }

    function giveFeedback(
        uint256 agentId,
        int128 value,
        uint8 valueDecimals,
        string memory tag1,
        string memory tag2,
        string memory endpoint,
        string memory feedbackURI,
        bytes32 feedbackHash
    ) external {
        uint64 index = _store(agentId, value, valueDecimals, tag1, tag2);
        emit NewFeedback(
            agentId, msg.sender, index, value, valueDecimals, tag1, tag1, tag2, endpoint, feedbackURI, feedbackHash
        );
    }

    function _store(uint256 agentId, int128 value, uint8 valueDecimals, string memory tag1, string memory tag2)
        private
        returns (uint64)
    {
        address owner = _identity.ownerOf(agentId); // reverts for an unknown agent
        if (
            msg.sender == owner || _identity.isApprovedForAll(owner, msg.sender)
                || _identity.getApproved(agentId) == msg.sender
        ) revert SelfFeedback(agentId, msg.sender);
        if (valueDecimals > 18) revert InvalidDecimals(valueDecimals);
        Feedback[] storage list = _feedback[agentId][msg.sender];
        list.push(Feedback({value: value, valueDecimals: valueDecimals, isRevoked: false, tag1: tag1, tag2: tag2}));
        if (!_known[agentId][msg.sender]) {
            _known[agentId][msg.sender] = true;
            _clients[agentId].push(msg.sender);
        }
        return uint64(list.length);
    }

    function revokeFeedback(uint256 agentId, uint64 feedbackIndex) external {
        Feedback storage f = _entry(agentId, msg.sender, feedbackIndex);
        if (f.isRevoked) revert AlreadyRevoked(feedbackIndex);
        f.isRevoked = true;
        emit FeedbackRevoked(agentId, msg.sender, feedbackIndex);
    }

    function appendResponse(
        uint256 agentId,
        address clientAddress,
        uint64 feedbackIndex,
        string calldata responseURI,
        bytes32 responseHash
    ) external {
        _entry(agentId, clientAddress, feedbackIndex);
        _responses[agentId][clientAddress][feedbackIndex]++;
        emit ResponseAppended(agentId, clientAddress, feedbackIndex, msg.sender, responseURI, responseHash);
    }

    function readFeedback(uint256 agentId, address clientAddress, uint64 feedbackIndex)
        external
        view
        returns (int128 value, uint8 valueDecimals, string memory tag1, string memory tag2, bool isRevoked)
    {
        Feedback storage f = _entry(agentId, clientAddress, feedbackIndex);
        return (f.value, f.valueDecimals, f.tag1, f.tag2, f.isRevoked);
    }

    function getResponseCount(uint256 agentId, address clientAddress, uint64 feedbackIndex)
        external
        view
        returns (uint64)
    {
        return _responses[agentId][clientAddress][feedbackIndex];
    }

    function getClients(uint256 agentId) external view returns (address[] memory) {
        return _clients[agentId];
    }

    function getLastIndex(uint256 agentId, address clientAddress) external view returns (uint64) {
        return uint64(_feedback[agentId][clientAddress].length);
    }

    /**
     * @notice Count and average of the non-revoked feedback of `clientAddresses` (all clients when
     * empty) whose tags match (an empty tag matches any). Values are averaged at the largest
     * precision among them, which is returned as `summaryValueDecimals`.
     */
    function getSummary(uint256 agentId, address[] calldata clientAddresses, string calldata tag1, string calldata tag2)
        external
        view
        returns (uint64 count, int128 summaryValue, uint8 summaryValueDecimals)
    {
        address[] memory clients = clientAddresses;
        if (clients.length == 0) clients = _clients[agentId];
        Filter memory f = Filter({
            tag1: keccak256(bytes(tag1)),
            tag2: keccak256(bytes(tag2)),
            any1: bytes(tag1).length == 0,
            any2: bytes(tag2).length == 0
        });
        (count, summaryValueDecimals) = _precision(agentId, clients, f);
        if (count > 0) {
            summaryValue = int128(_sum(agentId, clients, f, summaryValueDecimals) / int256(uint256(count)));
        }
    }

    struct Filter {
        bytes32 tag1;
        bytes32 tag2;
        bool any1;
        bool any2;
    }

    function _matches(Feedback storage e, Filter memory f) private view returns (bool) {
        if (e.isRevoked) return false;
        if (!f.any1 && keccak256(bytes(e.tag1)) != f.tag1) return false;
        return f.any2 || keccak256(bytes(e.tag2)) == f.tag2;
    }

    function _precision(uint256 agentId, address[] memory clients, Filter memory f)
        private
        view
        returns (uint64 count, uint8 decimals)
    {
        for (uint256 c = 0; c < clients.length; c++) {
            Feedback[] storage list = _feedback[agentId][clients[c]];
            for (uint256 i = 0; i < list.length; i++) {
                if (!_matches(list[i], f)) continue;
                count++;
                if (list[i].valueDecimals > decimals) decimals = list[i].valueDecimals;
            }
        }
    }

    function _sum(uint256 agentId, address[] memory clients, Filter memory f, uint8 decimals)
        private
        view
        returns (int256 sum)
    {
        for (uint256 c = 0; c < clients.length; c++) {
            Feedback[] storage list = _feedback[agentId][clients[c]];
            for (uint256 i = 0; i < list.length; i++) {
                if (!_matches(list[i], f)) continue;
                sum += int256(list[i].value) * int256(10 ** (decimals - list[i].valueDecimals));
            }
        }
    }

    function _entry(uint256 agentId, address clientAddress, uint64 feedbackIndex)
        private
        view
        returns (Feedback storage)
    {
        Feedback[] storage list = _feedback[agentId][clientAddress];
        if (feedbackIndex == 0 || feedbackIndex > list.length) {
            revert UnknownFeedback(agentId, clientAddress, feedbackIndex);
        }
        return list[feedbackIndex - 1];
    }
}
