// SPDX-License-Identifier: MIT
pragma solidity ^0.8.26;

import {ERC721} from "@openzeppelin/contracts/token/ERC721/ERC721.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";

/**
 * @title AgentIdentityRegistry
 * @notice The ERC-8004 identity registry: every agent is an ERC-721 token whose URI points at its
 * registration file, with on-chain metadata (key → bytes) and a verified agent wallet.
 *
 * @dev Follows the ERC's interface: `register` (three forms), `setAgentURI`, `getMetadata` /
 * `setMetadata`, `setAgentWallet` / `getAgentWallet` / `unsetAgentWallet`, and the events
 * `Registered`, `URIUpdated`, `MetadataSet`. `agentWallet` is a reserved metadata key: it starts
 * as the owner's address, changes only with a signature of the new wallet (EIP-712; ERC-1271 for
 * smart-contract wallets), and is cleared when the token changes hands. Ids start at 1.
 */
contract AgentIdentityRegistry is ERC721, EIP712 {
    struct MetadataEntry {
        string metadataKey;
        bytes metadataValue;
    }

    bytes32 public constant AGENT_WALLET_SET_TYPEHASH =
        keccak256("AgentWalletSet(uint256 agentId,address newWallet,address owner,uint256 deadline)");
    string private constant AGENT_WALLET_KEY = "agentWallet";

    uint256 private _lastId;
    mapping(uint256 agentId => string) private _uris;
    mapping(uint256 agentId => mapping(string key => bytes)) private _metadata;
    mapping(uint256 agentId => address) private _wallets;

    event Registered(uint256 indexed agentId, string agentURI, address indexed owner);
    event URIUpdated(uint256 indexed agentId, string newURI, address indexed updatedBy);
    event MetadataSet(
        uint256 indexed agentId, string indexed indexedMetadataKey, string metadataKey, bytes metadataValue
    );

    error NotAuthorized(uint256 agentId, address caller);
    error ReservedMetadataKey(string metadataKey);
    error SignatureExpired(uint256 deadline);
    error InvalidWalletSignature(address wallet);
    error ZeroAddress();

    constructor() ERC721("ERC-8004 Agent Identity", "AGENT") EIP712("ERC8004IdentityRegistry", "1") {}

    function register() external returns (uint256 agentId) {
        agentId = _register("");
    }

    function register(string calldata agentURI) external returns (uint256 agentId) {
        agentId = _register(agentURI);
    }

    function register(string calldata agentURI, MetadataEntry[] calldata metadata) external returns (uint256 agentId) {
        agentId = _register(agentURI);
        for (uint256 i = 0; i < metadata.length; i++) {
            _setMetadata(agentId, metadata[i].metadataKey, metadata[i].metadataValue);
        }
    }

    /// @notice Total agents registered (ids run from 1 to this).
    function totalAgents() external view returns (uint256) {
        return _lastId;
    }

    function tokenURI(uint256 agentId) public view override returns (string memory) {
        _requireOwned(agentId);
        return _uris[agentId];
    }

    function setAgentURI(uint256 agentId, string calldata newURI) external {
        _authorized(agentId);
        _uris[agentId] = newURI;
        emit URIUpdated(agentId, newURI, msg.sender);
    }

    function getMetadata(uint256 agentId, string memory metadataKey) external view returns (bytes memory) {
        _requireOwned(agentId);
        if (_isWalletKey(metadataKey)) {
            address w = _wallets[agentId];
            return w == address(0) ? bytes("") : abi.encodePacked(w);
        }
        return _metadata[agentId][metadataKey];
    }

    function setMetadata(uint256 agentId, string memory metadataKey, bytes memory metadataValue) external {
        _authorized(agentId);
        _setMetadata(agentId, metadataKey, metadataValue);
    }

    /// @notice Points the agent at `newWallet`, which proves control by signing
    /// AgentWalletSet(agentId, newWallet, owner, deadline) (EOA: ECDSA; contract: ERC-1271).
    function setAgentWallet(uint256 agentId, address newWallet, uint256 deadline, bytes calldata signature)
        external
    {
        address owner = _authorized(agentId);
        if (newWallet == address(0)) revert ZeroAddress();
        if (block.timestamp > deadline) revert SignatureExpired(deadline);
        bytes32 digest =
            _hashTypedDataV4(keccak256(abi.encode(AGENT_WALLET_SET_TYPEHASH, agentId, newWallet, owner, deadline)));
        if (!SignatureChecker.isValidSignatureNow(newWallet, digest, signature)) {
            revert InvalidWalletSignature(newWallet);
        }
        _setWallet(agentId, newWallet);
    }

    function getAgentWallet(uint256 agentId) external view returns (address) {
        _requireOwned(agentId);
        return _wallets[agentId];
    }

    function unsetAgentWallet(uint256 agentId) external {
        _authorized(agentId);
        _setWallet(agentId, address(0));
    }

    /// @notice The EIP-712 domain separator the agent wallet signs under.
    function domainSeparator() external view returns (bytes32) {
        return _domainSeparatorV4();
    }

    function _register(string memory agentURI) private returns (uint256 agentId) {
        agentId = ++_lastId;
        _safeMint(msg.sender, agentId);
        _uris[agentId] = agentURI;
        emit Registered(agentId, agentURI, msg.sender);
        _setWallet(agentId, msg.sender);
    }

    function _setMetadata(uint256 agentId, string memory key, bytes memory value) private {
        if (_isWalletKey(key)) revert ReservedMetadataKey(key);
        _metadata[agentId][key] = value;
        emit MetadataSet(agentId, key, key, value);
    }

    function _setWallet(uint256 agentId, address wallet) private {
        _wallets[agentId] = wallet;
        bytes memory value = wallet == address(0) ? bytes("") : abi.encodePacked(wallet);
        emit MetadataSet(agentId, AGENT_WALLET_KEY, AGENT_WALLET_KEY, value);
    }

    function _authorized(uint256 agentId) private view returns (address owner) {
        owner = _requireOwned(agentId);
        if (!_isAuthorized(owner, msg.sender, agentId)) revert NotAuthorized(agentId, msg.sender);
    }

    function _isWalletKey(string memory key) private pure returns (bool) {
        return keccak256(bytes(key)) == keccak256(bytes(AGENT_WALLET_KEY));
    }

    /// @dev A transfer clears the verified wallet: the new owner must prove its own.
    function _update(address to, uint256 tokenId, address auth) internal override returns (address from) {
        from = super._update(to, tokenId, auth);
        if (from != address(0) && to != address(0) && _wallets[tokenId] != address(0)) {
            _setWallet(tokenId, address(0));
        }
    }
}
