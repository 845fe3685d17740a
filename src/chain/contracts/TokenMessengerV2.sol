// SPDX-License-Identifier: MIT
pragma solidity ^0.8.26;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {MessageTransmitterV2} from "./MessageTransmitterV2.sol";

/// @notice The local USDC's minter surface (real USDC's FiatToken mint/burn).
interface IMintBurnToken {
    function mint(address to, uint256 amount) external;
    function burn(uint256 amount) external;
}

/**
 * @title TokenMessengerV2
 * @notice A CCTP v2-compatible token messenger for our local chains: `depositForBurn` and
 * `depositForBurnWithHook` with Circle's signatures and `DepositForBurn` event; it burns the
 * local USDC and sends a burn message through the local MessageTransmitterV2. On the other side
 * it mints for a message from a linked remote messenger about the linked remote token.
 *
 * Burn message body (packed): version uint32 at 0, burnToken bytes32 at 4, mintRecipient bytes32 at 36,
 * amount uint256 at 68, messageSender bytes32 at 100, maxFee uint256 at 132, feeExecuted uint256 at 164,
 * expirationBlock uint256 at 196, hookData at 228. The hook data is carried, not executed.
 * It is also its own token minter (Circle splits that into TokenMinterV2).
 */
contract TokenMessengerV2 is Ownable {
    using SafeERC20 for IERC20;

    uint32 public constant messageBodyVersion = 1;

    MessageTransmitterV2 public immutable localMessageTransmitter;
    address public immutable localToken;
    mapping(uint32 => bytes32) public remoteTokenMessengers;
    /// @notice The USDC address on each remote domain whose burns mint `localToken` here.
    mapping(uint32 => bytes32) public remoteTokens;

    event DepositForBurn(
        address indexed burnToken,
        uint256 amount,
        address indexed depositor,
        bytes32 mintRecipient,
        uint32 destinationDomain,
        bytes32 destinationTokenMessenger,
        bytes32 destinationCaller,
        uint256 maxFee,
        uint32 indexed minFinalityThreshold,
        bytes hookData
    );
    event MintAndWithdraw(address indexed mintRecipient, uint256 amount, address indexed mintToken, uint256 feeCollected);
    event RemoteLinked(uint32 domain, bytes32 tokenMessenger, bytes32 token);

    error InvalidAmount();
    error InvalidMintRecipient();
    error UnsupportedBurnToken(address token);
    error NoRemoteTokenMessenger(uint32 domain);
    error InvalidFee();
    error EmptyHookData();
    error NotLocalMessageTransmitter();
    error UnknownRemoteSender(uint32 domain, bytes32 sender);
    error InvalidMessageBody();
    error MessageExpired(uint256 expirationBlock);

    constructor(address messageTransmitter, address token) Ownable(msg.sender) {
        localMessageTransmitter = MessageTransmitterV2(messageTransmitter);
        localToken = token;
    }

    /// @notice Trusts `tokenMessenger` on `domain` and maps its `token` to our local token.
    function linkRemote(uint32 domain, bytes32 tokenMessenger, bytes32 token) external onlyOwner {
        remoteTokenMessengers[domain] = tokenMessenger;
        remoteTokens[domain] = token;
        emit RemoteLinked(domain, tokenMessenger, token);
    }

    function depositForBurn(
        uint256 amount,
        uint32 destinationDomain,
        bytes32 mintRecipient,
        address burnToken,
        bytes32 destinationCaller,
        uint256 maxFee,
        uint32 minFinalityThreshold
    ) external {
        _depositForBurn(amount, destinationDomain, mintRecipient, burnToken, destinationCaller, maxFee, minFinalityThreshold, "");
    }

    function depositForBurnWithHook(
        uint256 amount,
        uint32 destinationDomain,
        bytes32 mintRecipient,
        address burnToken,
        bytes32 destinationCaller,
        uint256 maxFee,
        uint32 minFinalityThreshold,
        bytes calldata hookData
    ) external {
        require(hookData.length > 0, EmptyHookData());
        _depositForBurn(amount, destinationDomain, mintRecipient, burnToken, destinationCaller, maxFee, minFinalityThreshold, hookData);
    }

    function _depositForBurn(
        uint256 amount,
        uint32 destinationDomain,
        bytes32 mintRecipient,
        address burnToken,
        bytes32 destinationCaller,
        uint256 maxFee,
        uint32 minFinalityThreshold,
        bytes memory hookData
    ) internal {
        require(amount > 0, InvalidAmount());
        require(mintRecipient != bytes32(0), InvalidMintRecipient());
        require(burnToken == localToken, UnsupportedBurnToken(burnToken));
        require(maxFee < amount, InvalidFee());
        bytes32 destinationMessenger = remoteTokenMessengers[destinationDomain];
        require(destinationMessenger != bytes32(0), NoRemoteTokenMessenger(destinationDomain));

        IERC20(burnToken).safeTransferFrom(msg.sender, address(this), amount);
        IMintBurnToken(burnToken).burn(amount);

        bytes memory body = abi.encodePacked(
            messageBodyVersion,
            bytes32(uint256(uint160(burnToken))),
            mintRecipient,
            amount,
            bytes32(uint256(uint160(msg.sender))),
            maxFee,
            uint256(0),
            uint256(0),
            hookData
        );
        localMessageTransmitter.sendMessage(
            destinationDomain, destinationMessenger, destinationCaller, minFinalityThreshold, body
        );
        emit DepositForBurn(
            burnToken,
            amount,
            msg.sender,
            mintRecipient,
            destinationDomain,
            destinationMessenger,
            destinationCaller,
            maxFee,
            minFinalityThreshold,
            hookData
        );
    }

    function handleReceiveFinalizedMessage(
        uint32 remoteDomain,
        bytes32 sender,
        uint32,
        bytes calldata messageBody
    ) external returns (bool) {
        return _mintFor(remoteDomain, sender, messageBody);
    }

    function handleReceiveUnfinalizedMessage(
        uint32 remoteDomain,
        bytes32 sender,
        uint32,
        bytes calldata messageBody
    ) external returns (bool) {
        return _mintFor(remoteDomain, sender, messageBody);
    }

    function _mintFor(uint32 remoteDomain, bytes32 sender, bytes calldata body) internal returns (bool) {
        require(msg.sender == address(localMessageTransmitter), NotLocalMessageTransmitter());
        require(
            sender != bytes32(0) && remoteTokenMessengers[remoteDomain] == sender,
            UnknownRemoteSender(remoteDomain, sender)
        );
        require(body.length >= 228 && uint32(bytes4(body[0:4])) == messageBodyVersion, InvalidMessageBody());
        require(bytes32(body[4:36]) == remoteTokens[remoteDomain], InvalidMessageBody());
        address recipient = address(uint160(uint256(bytes32(body[36:68]))));
        uint256 amount = uint256(bytes32(body[68:100]));
        uint256 fee = uint256(bytes32(body[164:196]));
        uint256 expirationBlock = uint256(bytes32(body[196:228]));
        require(expirationBlock == 0 || block.number < expirationBlock, MessageExpired(expirationBlock));
        require(fee < amount, InvalidFee());
        IMintBurnToken(localToken).mint(recipient, amount - fee);
        if (fee > 0) IMintBurnToken(localToken).mint(owner(), fee);
        emit MintAndWithdraw(recipient, amount - fee, localToken, fee);
        return true;
    }
}
