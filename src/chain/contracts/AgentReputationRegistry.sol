// SPDX-License-Identifier: MIT
pragma solidity ^0.8.26;

/// @dev What the reputation registry asks of the identity registry (any ERC-8004 one).
interface IAgentIdentity {
    function isAuthorizedOrOwner(address spender, uint256 agentId) external view returns (bool);
}

/**
 * @title AgentReputationRegistry
 * @notice The ERC-8004 reputation registry: clients give feedback (a signed fixed-point value,
 * two tags, the endpoint, an off-chain file and its hash) about agents of an identity registry;
 * anyone reads each entry, every entry at once, and a summary over the clients they trust.
 *
 * @dev The interface and the semantics of the reference `ReputationRegistryUpgradeable` 2.0.0
 * (erc-8004/erc-8004-contracts), so it pairs with either identity registry: feedback indices
 * start at 1 per (agent, client); an agent's owner or approved operator cannot rate it (asked
 * through the identity registry's `isAuthorizedOrOwner`, which reverts for an unknown agent);
 * `getSummary` needs the caller's list of clients (an empty list reverts: the caller chooses whom
 * to trust) and answers at the most common `valueDecimals`; `readAllFeedback` with no clients
 * reads every client's; `getResponseCount` filters by responders. Same events and revert reasons.
 * Not upgradeable and without an owner: the identity registry is fixed at construction.
 */
contract AgentReputationRegistry {
    int128 private constant MAX_ABS_VALUE = 1e38;

    struct Feedback {
        int128 value;
        uint8 valueDecimals;
        bool isRevoked;
        string tag1;
        string tag2;
    }

    /// @dev Tag filters of a read: an empty tag matches any.
    struct Filter {
        bytes32 tag1;
        bytes32 tag2;
        bool any1;
        bool any2;
        bool includeRevoked;
    }

    /// @dev getSummary's running totals: values at 18 decimals, entries per valueDecimals.
    struct Tally {
        uint64 count;
        int256 sum;
        uint64[19] byDecimals;
    }

    /// @dev readAllFeedback's answer, built in memory (too many values for the stack).
    struct Entries {
        address[] clients;
        uint64[] feedbackIndexes;
        int128[] values;
        uint8[] valueDecimals;
        string[] tag1s;
        string[] tag2s;
        bool[] revokedStatuses;
    }

    address private immutable _identityRegistry;

    mapping(uint256 agentId => mapping(address client => mapping(uint64 index => Feedback))) private _feedback;
    mapping(uint256 agentId => mapping(address client => uint64)) private _lastIndex;
    mapping(uint256 agentId => mapping(address client => mapping(uint64 index => mapping(address => uint64))))
        private _responseCount;
    mapping(uint256 agentId => mapping(address client => mapping(uint64 index => address[]))) private _responders;
    mapping(uint256 agentId => mapping(address client => mapping(uint64 index => mapping(address => bool))))
        private _isResponder;
    mapping(uint256 agentId => address[]) private _clients;
    mapping(uint256 agentId => mapping(address client => bool)) private _isClient;

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

    constructor(address identityRegistry_) {
        require(identityRegistry_ != address(0), "bad identity");
        _identityRegistry = identityRegistry_;
    }

    function getIdentityRegistry() external view returns (address) {
        return _identityRegistry;
    }

    function getVersion() external pure returns (string memory) {
        return "2.0.0";
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

    function revokeFeedback(uint256 agentId, uint64 feedbackIndex) external {
        _requireIndex(agentId, msg.sender, feedbackIndex);
        Feedback storage f = _feedback[agentId][msg.sender][feedbackIndex];
        require(!f.isRevoked, "Already revoked");
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
        require(feedbackIndex > 0, "index must be > 0");
        require(bytes(responseURI).length > 0, "Empty URI");
        require(feedbackIndex <= _lastIndex[agentId][clientAddress], "index out of bounds");
        if (!_isResponder[agentId][clientAddress][feedbackIndex][msg.sender]) {
            _isResponder[agentId][clientAddress][feedbackIndex][msg.sender] = true;
            _responders[agentId][clientAddress][feedbackIndex].push(msg.sender);
        }
        _responseCount[agentId][clientAddress][feedbackIndex][msg.sender]++;
        emit ResponseAppended(agentId, clientAddress, feedbackIndex, msg.sender, responseURI, responseHash);
    }

    function getLastIndex(uint256 agentId, address clientAddress) external view returns (uint64) {
        return _lastIndex[agentId][clientAddress];
    }

    function getClients(uint256 agentId) external view returns (address[] memory) {
        return _clients[agentId];
    }

    function readFeedback(uint256 agentId, address clientAddress, uint64 feedbackIndex)
        external
        view
        returns (int128 value, uint8 valueDecimals, string memory tag1, string memory tag2, bool isRevoked)
    {
        _requireIndex(agentId, clientAddress, feedbackIndex);
        Feedback storage f = _feedback[agentId][clientAddress][feedbackIndex];
        return (f.value, f.valueDecimals, f.tag1, f.tag2, f.isRevoked);
    }

    /**
     * @notice Count and average of the non-revoked feedback of `clientAddresses` (required: whom
     * the caller trusts) whose tags match (an empty tag matches any). Values are averaged at 18
     * decimals and answered at the most common `valueDecimals` among them (the lowest on a tie),
     * each division truncating toward zero.
     */
    function getSummary(uint256 agentId, address[] calldata clientAddresses, string calldata tag1, string calldata tag2)
        external
        view
        returns (uint64 count, int128 summaryValue, uint8 summaryValueDecimals)
    {
        require(clientAddresses.length > 0, "clientAddresses required");
        Tally memory t;
        Filter memory f = _filter(tag1, tag2, false);
        for (uint256 c; c < clientAddresses.length; c++) {
            _tally(agentId, clientAddresses[c], f, t);
        }
        if (t.count == 0) return (0, 0, 0);
        uint64 most;
        for (uint8 d; d <= 18; d++) {
            if (t.byDecimals[d] > most) {
                most = t.byDecimals[d];
                summaryValueDecimals = d;
            }
        }
        int256 average = t.sum / int256(uint256(t.count));
        count = t.count;
        summaryValue = int128(average / int256(10 ** (18 - uint256(summaryValueDecimals))));
    }

    /// @notice Every matching entry of `clientAddresses` (every client when empty), in client order.
    function readAllFeedback(
        uint256 agentId,
        address[] memory clientAddresses,
        string memory tag1,
        string memory tag2,
        bool includeRevoked
    )
        external
        view
        returns (
            address[] memory clients,
            uint64[] memory feedbackIndexes,
            int128[] memory values,
            uint8[] memory valueDecimals,
            string[] memory tag1s,
            string[] memory tag2s,
            bool[] memory revokedStatuses
        )
    {
        if (clientAddresses.length == 0) clientAddresses = _clients[agentId];
        Entries memory r = _readAll(agentId, clientAddresses, _filter(tag1, tag2, includeRevoked));
        return (r.clients, r.feedbackIndexes, r.values, r.valueDecimals, r.tag1s, r.tag2s, r.revokedStatuses);
    }

    /**
     * @notice Responses to feedback: to one entry; to every entry of `clientAddress` when
     * `feedbackIndex` is 0; to every entry of every client when `clientAddress` is address(0).
     * Counts the given responders' responses, or everyone's when `responders` is empty.
     */
    function getResponseCount(
        uint256 agentId,
        address clientAddress,
        uint64 feedbackIndex,
        address[] calldata responders
    ) external view returns (uint64 count) {
        if (clientAddress == address(0)) {
            address[] storage all = _clients[agentId];
            for (uint256 c; c < all.length; c++) {
                count += _countAll(agentId, all[c], responders);
            }
        } else if (feedbackIndex == 0) {
            count = _countAll(agentId, clientAddress, responders);
        } else {
            count = _countResponses(agentId, clientAddress, feedbackIndex, responders);
        }
    }

    function _store(uint256 agentId, int128 value, uint8 valueDecimals, string memory tag1, string memory tag2)
        private
        returns (uint64 index)
    {
        require(valueDecimals <= 18, "too many decimals");
        require(value >= -MAX_ABS_VALUE && value <= MAX_ABS_VALUE, "value too large");
        require(
            !IAgentIdentity(_identityRegistry).isAuthorizedOrOwner(msg.sender, agentId), "Self-feedback not allowed"
        );
        index = ++_lastIndex[agentId][msg.sender];
        _feedback[agentId][msg.sender][index] =
            Feedback({value: value, valueDecimals: valueDecimals, isRevoked: false, tag1: tag1, tag2: tag2});
        if (!_isClient[agentId][msg.sender]) {
            _isClient[agentId][msg.sender] = true;
            _clients[agentId].push(msg.sender);
        }
    }

    function _tally(uint256 agentId, address client, Filter memory f, Tally memory t) private view {
        uint64 last = _lastIndex[agentId][client];
        for (uint64 i = 1; i <= last; i++) {
            Feedback storage e = _feedback[agentId][client][i];
            if (!_matches(e, f)) continue;
            t.sum += int256(e.value) * int256(10 ** (18 - uint256(e.valueDecimals)));
            t.byDecimals[e.valueDecimals]++;
            t.count++;
        }
    }

    function _readAll(uint256 agentId, address[] memory clients, Filter memory f)
        private
        view
        returns (Entries memory r)
    {
        uint256 n;
        for (uint256 c; c < clients.length; c++) {
            uint64 last = _lastIndex[agentId][clients[c]];
            for (uint64 i = 1; i <= last; i++) {
                if (_matches(_feedback[agentId][clients[c]][i], f)) n++;
            }
        }
        r = Entries(
            new address[](n),
            new uint64[](n),
            new int128[](n),
            new uint8[](n),
            new string[](n),
            new string[](n),
            new bool[](n)
        );
        uint256 k;
        for (uint256 c; c < clients.length; c++) {
            uint64 last = _lastIndex[agentId][clients[c]];
            for (uint64 i = 1; i <= last; i++) {
                Feedback storage e = _feedback[agentId][clients[c]][i];
                if (!_matches(e, f)) continue;
                r.clients[k] = clients[c];
                r.feedbackIndexes[k] = i;
                r.values[k] = e.value;
                r.valueDecimals[k] = e.valueDecimals;
                r.tag1s[k] = e.tag1;
                r.tag2s[k] = e.tag2;
                r.revokedStatuses[k] = e.isRevoked;
                k++;
            }
        }
    }

    function _countAll(uint256 agentId, address client, address[] calldata responders)
        private
        view
        returns (uint64 count)
    {
        uint64 last = _lastIndex[agentId][client];
        for (uint64 i = 1; i <= last; i++) {
            count += _countResponses(agentId, client, i, responders);
        }
    }

    function _countResponses(uint256 agentId, address client, uint64 index, address[] calldata responders)
        private
        view
        returns (uint64 count)
    {
        mapping(address => uint64) storage byResponder = _responseCount[agentId][client][index];
        if (responders.length == 0) {
            address[] storage all = _responders[agentId][client][index];
            for (uint256 k; k < all.length; k++) {
                count += byResponder[all[k]];
            }
        } else {
            for (uint256 k; k < responders.length; k++) {
                count += byResponder[responders[k]];
            }
        }
    }

    function _filter(string memory tag1, string memory tag2, bool includeRevoked)
        private
        pure
        returns (Filter memory)
    {
        return Filter({
            tag1: keccak256(bytes(tag1)),
            tag2: keccak256(bytes(tag2)),
            any1: bytes(tag1).length == 0,
            any2: bytes(tag2).length == 0,
            includeRevoked: includeRevoked
        });
    }

    function _matches(Feedback storage e, Filter memory f) private view returns (bool) {
        if (e.isRevoked && !f.includeRevoked) return false;
        if (!f.any1 && keccak256(bytes(e.tag1)) != f.tag1) return false;
        return f.any2 || keccak256(bytes(e.tag2)) == f.tag2;
    }

    function _requireIndex(uint256 agentId, address client, uint64 feedbackIndex) private view {
        require(feedbackIndex > 0, "index must be > 0");
        require(feedbackIndex <= _lastIndex[agentId][client], "index out of bounds");
    }
}
