// SPDX-License-Identifier: MIT
pragma solidity ^0.8.26;

import {ERC721} from "@openzeppelin/contracts/token/ERC721/ERC721.sol";
import {ERC721URIStorage} from "@openzeppelin/contracts/token/ERC721/extensions/ERC721URIStorage.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";

/**
 * @title AgentIdentityRegistry
 * @notice The ERC-8004 identity registry: every agent is an ERC-721 token whose URI points at its
 * registration file, with on-chain metadata (key → bytes) and a verified agent wallet.
 *
 * @dev The interface and the semantics of the reference `IdentityRegistryUpgradeable` 2.0.0
 * (erc-8004/erc-8004-contracts), so either reputation registry pairs with it: ids start at 0;
 * `agentWallet` is a reserved metadata key holding the packed wallet, set to the owner on
 * registration, changed only with the new wallet's EIP-712 AgentWalletSet signature (ECDSA, then
 * ERC-1271) whose deadline is at most 5 minutes ahead, and cleared when the token changes hands;
 * reads of an unknown id give empty values (`getMetadata`, `getAgentWallet`); the same events, in
 * the same order, and the same revert reasons. Not upgradeable and without an owner: the proxy,
 * `initialize` and Ownable surface of the reference is left out on purpose (docs/decisions.md).
 */
contract AgentIdentityRegistry is ERC721URIStorage, EIP712 {
    struct MetadataEntry {
        string metadataKey;
        bytes metadataValue;
    }

    bytes32 private constant AGENT_WALLET_SET_TYPEHASH =
        keccak256("AgentWalletSet(uint256 agentId,address newWallet,address owner,uint256 deadline)");
    uint256 private constant MAX_DEADLINE_DELAY = 5 minutes;
    bytes32 private constant RESERVED_AGENT_WALLET_KEY_HASH = keccak256("agentWallet");

    uint256 private _lastId;
    mapping(uint256 agentId => mapping(string metadataKey => bytes metadataValue)) private _metadata;

    event Registered(uint256 indexed agentId, string agentURI, address indexed owner);
    event MetadataSet(
        uint256 indexed agentId, string indexed indexedMetadataKey, string metadataKey, bytes metadataValue
    );
    event URIUpdated(uint256 indexed agentId, string newURI, address indexed updatedBy);

    constructor() ERC721("AgentIdentity", "AGENT") EIP712("ERC8004IdentityRegistry", "1") {}

    function register() external returns (uint256 agentId) {
        agentId = _lastId++;
        _safeMint(msg.sender, agentId);
        emit Registered(agentId, "", msg.sender);
        _setWallet(agentId, abi.encodePacked(msg.sender));
    }

    function register(string memory agentURI) external returns (uint256 agentId) {
        agentId = _registerWithURI(agentURI);
    }

    function register(string memory agentURI, MetadataEntry[] memory metadata) external returns (uint256 agentId) {
        agentId = _registerWithURI(agentURI);
        for (uint256 i; i < metadata.length; i++) {
            _setMetadata(agentId, metadata[i].metadataKey, metadata[i].metadataValue);
        }
    }

    /// @notice Empty for an unknown agent or key.
    function getMetadata(uint256 agentId, string memory metadataKey) external view returns (bytes memory) {
        return _metadata[agentId][metadataKey];
    }

    function setMetadata(uint256 agentId, string memory metadataKey, bytes memory metadataValue) external {
        _requireAuthorized(agentId);
        _setMetadata(agentId, metadataKey, metadataValue);
    }

    function setAgentURI(uint256 agentId, string calldata newURI) external {
        _requireAuthorized(agentId);
        _setTokenURI(agentId, newURI);
        emit URIUpdated(agentId, newURI, msg.sender);
    }

    /// @notice The verified wallet; address(0) for an unknown agent or one without a wallet.
    function getAgentWallet(uint256 agentId) external view returns (address) {
        return address(bytes20(_metadata[agentId]["agentWallet"]));
    }

    /// @notice Points the agent at `newWallet`, which proves control by signing
    /// AgentWalletSet(agentId, newWallet, owner, deadline); the deadline is at most 5 minutes ahead.
    function setAgentWallet(uint256 agentId, address newWallet, uint256 deadline, bytes calldata signature)
        external
    {
        address owner = _requireAuthorized(agentId);
        require(newWallet != address(0), "bad wallet");
        require(block.timestamp <= deadline, "expired");
        require(deadline <= block.timestamp + MAX_DEADLINE_DELAY, "deadline too far");
        bytes32 digest =
            _hashTypedDataV4(keccak256(abi.encode(AGENT_WALLET_SET_TYPEHASH, agentId, newWallet, owner, deadline)));
        // ECDSA first (an EOA, also one with delegated code), then ERC-1271 (a smart account).
        (address recovered, ECDSA.RecoverError err,) = ECDSA.tryRecover(digest, signature);
        require(
            (err == ECDSA.RecoverError.NoError && recovered == newWallet)
                || SignatureChecker.isValidERC1271SignatureNow(newWallet, digest, signature),
            "invalid wallet sig"
        );
        _setWallet(agentId, abi.encodePacked(newWallet));
    }

    function unsetAgentWallet(uint256 agentId) external {
        _requireAuthorized(agentId);
        _setWallet(agentId, "");
    }

    /// @notice Whether `spender` owns the agent or is approved for it; reverts for an unknown agent.
    function isAuthorizedOrOwner(address spender, uint256 agentId) external view returns (bool) {
        return _isAuthorized(_requireOwned(agentId), spender, agentId);
    }

    function getVersion() external pure returns (string memory) {
        return "2.0.0";
    }

    function _registerWithURI(string memory agentURI) private returns (uint256 agentId) {
        agentId = _lastId++;
        _safeMint(msg.sender, agentId);
        _setTokenURI(agentId, agentURI);
        emit Registered(agentId, agentURI, msg.sender);
        _setWallet(agentId, abi.encodePacked(msg.sender));
    }

    function _setMetadata(uint256 agentId, string memory key, bytes memory value) private {
        require(keccak256(bytes(key)) != RESERVED_AGENT_WALLET_KEY_HASH, "reserved key");
        _metadata[agentId][key] = value;
        emit MetadataSet(agentId, key, key, value);
    }

    function _setWallet(uint256 agentId, bytes memory packed) private {
        _metadata[agentId]["agentWallet"] = packed;
        emit MetadataSet(agentId, "agentWallet", "agentWallet", packed);
    }

    function _requireAuthorized(uint256 agentId) private view returns (address owner) {
        owner = _requireOwned(agentId);
        require(_isAuthorized(owner, msg.sender, agentId), "Not authorized");
    }

    /// @dev Any transfer (to oneself too) clears the verified wallet: a new owner proves its own.
    function _update(address to, uint256 tokenId, address auth) internal override returns (address) {
        if (_ownerOf(tokenId) != address(0) && to != address(0)) _setWallet(tokenId, "");
        return super._update(to, tokenId, auth);
    }
}
