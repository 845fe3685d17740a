// SPDX-License-Identifier: MIT
pragma solidity ^0.8.26;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";

/// @notice What a message recipient implements (CCTP v2's IMessageHandlerV2).
interface IMessageHandlerV2 {
    function handleReceiveFinalizedMessage(
        uint32 sourceDomain,
        bytes32 sender,
        uint32 finalityThresholdExecuted,
        bytes calldata messageBody
    ) external returns (bool);

    function handleReceiveUnfinalizedMessage(
        uint32 sourceDomain,
        bytes32 sender,
        uint32 finalityThresholdExecuted,
        bytes calldata messageBody
    ) external returns (bool);
}

/**
 * @title MessageTransmitterV2
 * @notice A CCTP v2-compatible message transmitter: the same external interface, events and
 * message format as Circle's, written for our local chains.
 *
 * Message (packed): version uint32 at 0, sourceDomain uint32 at 4, destinationDomain uint32 at 8,
 * nonce bytes32 at 12, sender bytes32 at 44, recipient bytes32 at 76, destinationCaller bytes32 at 108,
 * minFinalityThreshold uint32 at 140, finalityThresholdExecuted uint32 at 144, messageBody at 148.
 * As in CCTP v2, the source emits the message with nonce and finalityThresholdExecuted zero;
 * the attester fills both in and signs keccak256(message). An attestation is the concatenation
 * of `signatureThreshold` 65-byte signatures by enabled attesters in increasing address order.
 */
contract MessageTransmitterV2 is Ownable {
    uint32 public constant version = 1;
    uint32 public constant FINALITY_THRESHOLD_FINALIZED = 2000;
    uint256 public constant maxMessageBodySize = 8192;

    uint32 public immutable localDomain;
    uint256 public signatureThreshold = 1;
    mapping(address => bool) public isEnabledAttester;
    /// @notice 1 once a nonce's message was received (CCTP v2's usedNonces).
    mapping(bytes32 => uint256) public usedNonces;

    event MessageSent(bytes message);
    event MessageReceived(
        address indexed caller,
        uint32 sourceDomain,
        bytes32 indexed nonce,
        bytes32 sender,
        uint32 indexed finalityThresholdExecuted,
        bytes messageBody
    );
    event AttesterEnabled(address indexed attester);
    event AttesterDisabled(address indexed attester);
    event SignatureThresholdUpdated(uint256 oldThreshold, uint256 newThreshold);

    error InvalidAttestationLength(uint256 length);
    error InvalidSignatureOrder();
    error InvalidAttester(address signer);
    error InvalidMessage();
    error InvalidDestinationDomain(uint32 domain);
    error InvalidDestinationCaller();
    error NonceAlreadyUsed(bytes32 nonce);
    error HandlerRejected();

    constructor(uint32 localDomain_, address attester) Ownable(msg.sender) {
        localDomain = localDomain_;
        isEnabledAttester[attester] = true;
        emit AttesterEnabled(attester);
    }

    function enableAttester(address attester) external onlyOwner {
        isEnabledAttester[attester] = true;
        emit AttesterEnabled(attester);
    }

    function disableAttester(address attester) external onlyOwner {
        isEnabledAttester[attester] = false;
        emit AttesterDisabled(attester);
    }

    function setSignatureThreshold(uint256 threshold) external onlyOwner {
        require(threshold > 0);
        emit SignatureThresholdUpdated(signatureThreshold, threshold);
        signatureThreshold = threshold;
    }

    /// @notice Emits `MessageSent` with the message the attester will sign (nonce left zero).
    function sendMessage(
        uint32 destinationDomain,
        bytes32 recipient,
        bytes32 destinationCaller,
        uint32 minFinalityThreshold,
        bytes calldata messageBody
    ) external {
        require(destinationDomain != localDomain, InvalidDestinationDomain(destinationDomain));
        require(recipient != bytes32(0), InvalidMessage());
        require(messageBody.length <= maxMessageBodySize, InvalidMessage());
        emit MessageSent(
            abi.encodePacked(
                version,
                localDomain,
                destinationDomain,
                bytes32(0),
                bytes32(uint256(uint160(msg.sender))),
                recipient,
                destinationCaller,
                minFinalityThreshold,
                uint32(0),
                messageBody
            )
        );
    }

    /// @notice Delivers an attested message to its recipient once per nonce.
    function receiveMessage(bytes calldata message, bytes calldata attestation) external returns (bool) {
        _verifyAttestation(message, attestation);
        require(message.length >= 148, InvalidMessage());
        require(uint32(bytes4(message[0:4])) == version, InvalidMessage());
        uint32 destinationDomain = uint32(bytes4(message[8:12]));
        require(destinationDomain == localDomain, InvalidDestinationDomain(destinationDomain));
        bytes32 destinationCaller = bytes32(message[108:140]);
        require(
            destinationCaller == bytes32(0) || destinationCaller == bytes32(uint256(uint160(msg.sender))),
            InvalidDestinationCaller()
        );
        bytes32 nonce = bytes32(message[12:44]);
        require(usedNonces[nonce] == 0, NonceAlreadyUsed(nonce));
        usedNonces[nonce] = 1;

        uint32 sourceDomain = uint32(bytes4(message[4:8]));
        bytes32 sender = bytes32(message[44:76]);
        address recipient = address(uint160(uint256(bytes32(message[76:108]))));
        uint32 finality = uint32(bytes4(message[144:148]));
        bytes calldata body = message[148:];
        bool ok = finality >= FINALITY_THRESHOLD_FINALIZED
            ? IMessageHandlerV2(recipient).handleReceiveFinalizedMessage(sourceDomain, sender, finality, body)
            : IMessageHandlerV2(recipient).handleReceiveUnfinalizedMessage(sourceDomain, sender, finality, body);
        require(ok, HandlerRejected());
        emit MessageReceived(msg.sender, sourceDomain, nonce, sender, finality, body);
        return true;
    }

    function _verifyAttestation(bytes calldata message, bytes calldata attestation) internal view {
        uint256 n = signatureThreshold;
        require(attestation.length == 65 * n, InvalidAttestationLength(attestation.length));
        bytes32 digest = keccak256(message);
        address last = address(0);
        for (uint256 i = 0; i < n; i++) {
            address signer = ECDSA.recover(digest, attestation[i * 65:(i + 1) * 65]);
            require(isEnabledAttester[signer], InvalidAttester(signer));
            require(signer > last, InvalidSignatureOrder());
            last = signer;
        }
    }
}
