// SPDX-License-Identifier: MIT
pragma solidity ^0.8.26;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {IERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/IERC20Permit.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {MessageHashUtils} from "@openzeppelin/contracts/utils/cryptography/MessageHashUtils.sol";
import {IERC3009} from "@openzeppelin/contracts/interfaces/draft-IERC3009.sol";

/// @dev EIP-3009's receive with the signature as bytes (FiatToken v2.2, and TestUSDC): a packed
/// signature, or an ERC-1271 account's, which the token checks with the account.
interface IReceiveWithSignature {
    function receiveWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes memory signature
    ) external;
}

/**
 * @title GatewayVault
 * @notice x402 gateway balances. Buyers deposit USDC; an EIP-712 `TransferWithAuthorization`
 * signed by a payer (EOA or ERC-1271 smart account) moves `value` of its gateway balance to the
 * payee, once per (payer, nonce), inside [validAfter, validBefore). Authorizations are submitted
 * only by the operator and the settlers it names (the service's relayers): the payer's signature
 * says what may move, the submitter decides when. A payer therefore cannot spend, ahead of a
 * settlement, what it promised to charges the service accepted and has not settled yet (its own
 * authorization to an address of its own, submitted directly, would take the balance from under
 * them): its only way out is a withdrawal, which waits `withdrawalDelay`.
 *
 * Each account has an `available` balance and a `withdrawing` one. `initiateWithdrawal` moves
 * available to withdrawing, which becomes withdrawable `withdrawalDelay` seconds later; payment
 * authorizations spend available first and then withdrawing, so a payer cannot pull funds out
 * from under an authorization it already signed while the delay runs. With a zero delay (the
 * local deployment) the available balance is withdrawable at once.
 *
 * Authorizations are accepted under two EIP-712 domains: this contract's own ("GatewayVault",
 * "1") and Circle Gateway's batched one ("GatewayWalletBatched", "1", this address), which
 * Circle's unmodified x402 batching client signs for the `verifyingContract` the 402 names.
 * A submitter that knows which one an authorization was signed under says so
 * ({transferWithAuthorizationsByDomain}): one signature check instead of up to two.
 *
 * A withdrawal can also be signed rather than sent: `InitiateWithdrawal` and `Withdraw`, under this
 * vault's own domain, submitted by anyone (the service's relayers), so a payer holding no gas can
 * take its balance out. They do what the account's own calls do, with nonces of their own: a
 * withdrawal never spends a payment authorization's nonce, which would fail its settlement.
 */
contract GatewayVault is EIP712 {
    using SafeERC20 for IERC20;

    bytes32 public constant TRANSFER_WITH_AUTHORIZATION_TYPEHASH = keccak256(
        "TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"
    );

    bytes32 public constant INITIATE_WITHDRAWAL_TYPEHASH =
        keccak256("InitiateWithdrawal(address account,uint256 value,uint256 validBefore,bytes32 nonce)");
    bytes32 public constant WITHDRAW_TYPEHASH =
        keccak256("Withdraw(address account,address to,uint256 value,uint256 validBefore,bytes32 nonce)");

    /// @notice One payment authorization, for {transferWithAuthorizations}.
    struct Authorization {
        address from;
        address to;
        uint256 value;
        uint256 validAfter;
        uint256 validBefore;
        bytes32 nonce;
        bytes signature;
    }

    struct Balance {
        uint256 available;
        uint256 withdrawing;
        uint64 withdrawableAt;
    }

    IERC20 public immutable usdc;
    uint256 public immutable withdrawalDelay;
    /// @notice Names the settlers; may submit authorizations itself.
    address public immutable operator;
    /// @notice Who may submit payment authorizations besides the operator.
    mapping(address account => bool) public isSettler;

    bytes32 private constant EIP712_DOMAIN_TYPEHASH = keccak256(
        "EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"
    );
    bytes32 private immutable _batchedDomainSeparator;
    uint256 private immutable _batchedChainId;

    /// @dev Which EIP-712 domain a signature is checked under: this vault's, then Circle's batched
    /// one (EITHER), or only the one named.
    uint8 private constant EITHER_DOMAIN = 0;
    uint8 private constant VAULT_DOMAIN = 1;
    uint8 private constant BATCHED_DOMAIN = 2;

    mapping(address account => Balance) private _balances;
    mapping(address authorizer => mapping(bytes32 nonce => bool)) private _usedNonces;
    mapping(address account => mapping(bytes32 nonce => bool)) private _usedWithdrawalNonces;

    event Deposited(address indexed account, address indexed from, uint256 value);
    event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce);
    event PaymentTransferred(address indexed from, address indexed to, uint256 value, bytes32 indexed nonce);
    /// @notice One authorization of a batch that did not go through (the rest did).
    event AuthorizationFailed(address indexed authorizer, bytes32 indexed nonce, bytes reason);
    event WithdrawalInitiated(address indexed account, uint256 value, uint64 withdrawableAt);
    event Withdrawn(address indexed account, address indexed to, uint256 value);
    event WithdrawalAuthorizationUsed(address indexed account, bytes32 indexed nonce);
    event SettlerSet(address indexed account, bool allowed);

    error ZeroAddress();
    error ZeroAmount();
    error AuthorizationNotYetValid(uint256 validAfter);
    error AuthorizationExpired(uint256 validBefore);
    error AuthorizationAlreadyUsed(address authorizer, bytes32 nonce);
    error InvalidSignature();
    error InsufficientBalance(uint256 balance, uint256 needed);
    error NotWithdrawable(uint256 withdrawable, uint256 needed);
    /// @dev The permit reverted and the existing allowance does not cover the amount.
    error PermitFailed(bytes reason);
    error NotOperator(address caller);
    error NotSettler(address caller);

    constructor(address usdc_, uint256 withdrawalDelay_, address operator_, address[] memory settlers_)
        EIP712("GatewayVault", "1")
    {
        if (usdc_ == address(0) || operator_ == address(0)) revert ZeroAddress();
        operator = operator_;
        for (uint256 i = 0; i < settlers_.length; i++) {
            _setSettler(settlers_[i], true);
        }
        usdc = IERC20(usdc_);
        withdrawalDelay = withdrawalDelay_;
        _batchedChainId = block.chainid;
        _batchedDomainSeparator = _buildBatchedDomainSeparator();
    }

    // ---- deposits ---------------------------------------------------------------------------

    /// @notice Deposits from the caller (after `approve`) into `account`'s gateway balance.
    function depositFor(address account, uint256 value) external {
        _credit(account, msg.sender, value);
        usdc.safeTransferFrom(msg.sender, address(this), value);
    }

    /// @notice Deposits from the caller into its own gateway balance.
    function deposit(uint256 value) external {
        _credit(msg.sender, msg.sender, value);
        usdc.safeTransferFrom(msg.sender, address(this), value);
    }

    /// @notice Deposits `owner`'s USDC with its EIP-2612 permit (spender = this vault); anyone may submit.
    function depositWithPermit(address owner, uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s)
        external
    {
        _credit(owner, owner, value);
        try IERC20Permit(address(usdc)).permit(owner, address(this), value, deadline, v, r, s) {
            // allowance set
        } catch (bytes memory reason) {
            if (usdc.allowance(owner, address(this)) < value) revert PermitFailed(reason);
        }
        usdc.safeTransferFrom(owner, address(this), value);
    }

    /// @notice Deposits with `from`'s EIP-3009 ReceiveWithAuthorization (to = this vault); anyone may submit.
    function depositWithAuthorization(
        address from,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external {
        _credit(from, from, value);
        IERC3009(address(usdc)).receiveWithAuthorization(
            from, address(this), value, validAfter, validBefore, nonce, v, r, s
        );
    }

    /// @notice {depositWithAuthorization} with the signature as bytes: a smart account's (ERC-1271),
    /// for a token that takes them (FiatToken v2.2's overload); anyone may submit.
    function depositWithAuthorization(
        address from,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes calldata signature
    ) external {
        _credit(from, from, value);
        IReceiveWithSignature(address(usdc)).receiveWithAuthorization(
            from, address(this), value, validAfter, validBefore, nonce, signature
        );
    }

    // ---- settlers ---------------------------------------------------------------------------

    /// @notice The operator allows (or stops) `accounts` submitting payment authorizations.
    function setSettlers(address[] calldata accounts, bool allowed) external {
        if (msg.sender != operator) revert NotOperator(msg.sender);
        for (uint256 i = 0; i < accounts.length; i++) {
            _setSettler(accounts[i], allowed);
        }
    }

    function _setSettler(address account, bool allowed) private {
        if (account == address(0)) revert ZeroAddress();
        isSettler[account] = allowed;
        emit SettlerSet(account, allowed);
    }

    modifier onlySettler() {
        if (msg.sender != operator && !isSettler[msg.sender]) revert NotSettler(msg.sender);
        _;
    }

    // ---- payments ---------------------------------------------------------------------------

    /// @notice Moves `value` of `from`'s gateway balance to `to`, as `from` signed it, once.
    function transferWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes calldata signature
    ) public onlySettler {
        bytes4 refused = _tryTransfer(EITHER_DOMAIN, from, to, value, validAfter, validBefore, nonce, signature);
        if (refused == bytes4(0)) return;
        if (refused == ZeroAddress.selector) revert ZeroAddress();
        if (refused == ZeroAmount.selector) revert ZeroAmount();
        if (refused == AuthorizationNotYetValid.selector) revert AuthorizationNotYetValid(validAfter);
        if (refused == AuthorizationExpired.selector) revert AuthorizationExpired(validBefore);
        if (refused == AuthorizationAlreadyUsed.selector) revert AuthorizationAlreadyUsed(from, nonce);
        if (refused == InvalidSignature.selector) revert InvalidSignature();
        Balance storage b = _balances[from];
        revert InsufficientBalance(b.available + b.withdrawing, value);
    }

    /// @notice Settles many authorizations in one transaction; each one that fails (used nonce,
    /// window, signature, balance) is skipped with {AuthorizationFailed} and the others go through.
    function transferWithAuthorizations(Authorization[] calldata auths)
        external
        onlySettler
        returns (bool[] memory ok)
    {
        ok = new bool[](auths.length);
        for (uint256 i = 0; i < auths.length; i++) {
            ok[i] = _tryEach(EITHER_DOMAIN, auths[i]);
        }
    }

    /// @notice As {transferWithAuthorizations}, each authorization checked under the one EIP-712
    /// domain it was signed under: `vaultSigned` under this vault's, `batchedSigned` under Circle's
    /// batched one. One signature check each instead of up to two (an authorization of the
    /// batched domain failed this vault's first), and only {PaymentTransferred} for each that goes
    /// through: it names the payer and the nonce that {AuthorizationUsed} would repeat.
    function transferWithAuthorizationsByDomain(
        Authorization[] calldata vaultSigned,
        Authorization[] calldata batchedSigned
    ) external onlySettler {
        for (uint256 i = 0; i < vaultSigned.length; i++) {
            _tryEach(VAULT_DOMAIN, vaultSigned[i]);
        }
        for (uint256 i = 0; i < batchedSigned.length; i++) {
            _tryEach(BATCHED_DOMAIN, batchedSigned[i]);
        }
    }

    /// @dev One authorization of a batch: moved, or skipped with {AuthorizationFailed}.
    function _tryEach(uint8 domain, Authorization calldata a) private returns (bool) {
        bytes4 refused = _tryTransfer(domain, a.from, a.to, a.value, a.validAfter, a.validBefore, a.nonce, a.signature);
        if (refused == bytes4(0)) return true;
        emit AuthorizationFailed(a.from, a.nonce, abi.encodePacked(refused));
        return false;
    }

    /// @notice The EIP-712 domain separator of Circle's batched option ("GatewayWalletBatched", "1").
    function batchedDomainSeparator() public view returns (bytes32) {
        return block.chainid == _batchedChainId ? _batchedDomainSeparator : _buildBatchedDomainSeparator();
    }

    /// @dev The transfer, or the selector of the error that refuses it (nothing changed then).
    function _tryTransfer(
        uint8 domain,
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes calldata signature
    ) private returns (bytes4) {
        if (to == address(0)) return ZeroAddress.selector;
        if (value == 0) return ZeroAmount.selector;
        if (block.timestamp < validAfter) return AuthorizationNotYetValid.selector;
        if (block.timestamp >= validBefore) return AuthorizationExpired.selector;
        if (_usedNonces[from][nonce]) return AuthorizationAlreadyUsed.selector;
        bytes32 structHash =
            keccak256(abi.encode(TRANSFER_WITH_AUTHORIZATION_TYPEHASH, from, to, value, validAfter, validBefore, nonce));
        if (!_signedUnder(domain, from, structHash, signature)) return InvalidSignature.selector;
        return _move(domain == EITHER_DOMAIN, from, to, value, nonce);
    }

    /// @dev Whether `from` signed the authorization `structHash` under `domain`.
    function _signedUnder(uint8 domain, address from, bytes32 structHash, bytes calldata signature)
        private
        view
        returns (bool)
    {
        if (domain != BATCHED_DOMAIN && _signedBy(from, _hashTypedDataV4(structHash), signature)) return true;
        return domain != VAULT_DOMAIN
            && _signedBy(from, MessageHashUtils.toTypedDataHash(batchedDomainSeparator(), structHash), signature);
    }

    /// @dev `from`'s key signed `digest` (ECDSA, low s), whatever code `from` holds now; or, for an
    /// account with code, it answers ERC-1271 for it. The key first: an EOA that later delegates
    /// its code (EIP-7702) cannot make a payment it signed invalid through that code, which would
    /// fail a settlement of charges already served on it (OpenZeppelin's SignatureChecker asks an
    /// address with code only through ERC-1271).
    function _signedBy(address from, bytes32 digest, bytes calldata signature) private view returns (bool) {
        (address recovered, ECDSA.RecoverError err,) = ECDSA.tryRecoverCalldata(digest, signature);
        if (err == ECDSA.RecoverError.NoError && recovered == from) return true;
        return from.code.length != 0 && SignatureChecker.isValidERC1271SignatureNowCalldata(from, digest, signature);
    }

    /// @dev A verified authorization's transfer, or InsufficientBalance's selector.
    function _move(bool announceUse, address from, address to, uint256 value, bytes32 nonce)
        private
        returns (bytes4)
    {
        Balance storage b = _balances[from];
        uint256 total = b.available + b.withdrawing;
        if (total < value) return InsufficientBalance.selector;
        _usedNonces[from][nonce] = true;
        if (announceUse) emit AuthorizationUsed(from, nonce);
        uint256 fromAvailable = _min(b.available, value);
        b.available -= fromAvailable;
        b.withdrawing -= value - fromAvailable;
        _balances[to].available += value;
        emit PaymentTransferred(from, to, value, nonce);
        return bytes4(0);
    }

    function _buildBatchedDomainSeparator() private view returns (bytes32) {
        return keccak256(
            abi.encode(
                EIP712_DOMAIN_TYPEHASH, keccak256("GatewayWalletBatched"), keccak256("1"), block.chainid, address(this)
            )
        );
    }

    /// @notice Whether `authorizer` already used `nonce`.
    function authorizationState(address authorizer, bytes32 nonce) external view returns (bool) {
        return _usedNonces[authorizer][nonce];
    }

    // ---- withdrawals ------------------------------------------------------------------------

    /// @notice Starts the withdrawal delay for `value` of the caller's available balance.
    function initiateWithdrawal(uint256 value) external {
        _initiateWithdrawal(msg.sender, value);
    }

    /// @notice Pays `value` of the caller's withdrawable balance to `to`.
    function withdraw(uint256 value, address to) external {
        _withdraw(msg.sender, value, to);
    }

    /// @notice {initiateWithdrawal} for `account`, which signed `InitiateWithdrawal` under this
    /// vault's domain (its key, or ERC-1271 for an account with code); anyone may submit.
    function initiateWithdrawalWithAuthorization(
        address account,
        uint256 value,
        uint256 validBefore,
        bytes32 nonce,
        bytes calldata signature
    ) external {
        _useWithdrawalAuthorization(
            account,
            keccak256(abi.encode(INITIATE_WITHDRAWAL_TYPEHASH, account, value, validBefore, nonce)),
            validBefore,
            nonce,
            signature
        );
        _initiateWithdrawal(account, value);
    }

    /// @notice {withdraw} of `account`'s balance to `to`, which `account` signed (`Withdraw`, under
    /// this vault's domain); anyone may submit.
    function withdrawWithAuthorization(
        address account,
        address to,
        uint256 value,
        uint256 validBefore,
        bytes32 nonce,
        bytes calldata signature
    ) external {
        _useWithdrawalAuthorization(
            account,
            keccak256(abi.encode(WITHDRAW_TYPEHASH, account, to, value, validBefore, nonce)),
            validBefore,
            nonce,
            signature
        );
        _withdraw(account, value, to);
    }

    /// @notice Whether `account` already used `nonce` for a signed withdrawal.
    function withdrawalAuthorizationState(address account, bytes32 nonce) external view returns (bool) {
        return _usedWithdrawalNonces[account][nonce];
    }

    function _useWithdrawalAuthorization(
        address account,
        bytes32 structHash,
        uint256 validBefore,
        bytes32 nonce,
        bytes calldata signature
    ) private {
        if (block.timestamp >= validBefore) revert AuthorizationExpired(validBefore);
        if (_usedWithdrawalNonces[account][nonce]) revert AuthorizationAlreadyUsed(account, nonce);
        if (!_signedBy(account, _hashTypedDataV4(structHash), signature)) revert InvalidSignature();
        _usedWithdrawalNonces[account][nonce] = true;
        emit WithdrawalAuthorizationUsed(account, nonce);
    }

    function _initiateWithdrawal(address account, uint256 value) private {
        if (value == 0) revert ZeroAmount();
        Balance storage b = _balances[account];
        if (b.available < value) revert InsufficientBalance(b.available, value);
        b.available -= value;
        b.withdrawing += value;
        b.withdrawableAt = uint64(block.timestamp + withdrawalDelay);
        emit WithdrawalInitiated(account, value, b.withdrawableAt);
    }

    function _withdraw(address account, uint256 value, address to) private {
        if (to == address(0)) revert ZeroAddress();
        if (value == 0) revert ZeroAmount();
        uint256 can = withdrawable(account);
        if (can < value) revert NotWithdrawable(can, value);
        Balance storage b = _balances[account];
        uint256 fromWithdrawing = b.withdrawableAt <= block.timestamp ? _min(b.withdrawing, value) : 0;
        b.withdrawing -= fromWithdrawing;
        b.available -= value - fromWithdrawing;
        usdc.safeTransfer(to, value);
        emit Withdrawn(account, to, value);
    }

    /// @notice What `account` can withdraw now.
    function withdrawable(address account) public view returns (uint256) {
        Balance storage b = _balances[account];
        uint256 matured = b.withdrawableAt <= block.timestamp ? b.withdrawing : 0;
        return matured + (withdrawalDelay == 0 ? b.available : 0);
    }

    function balanceOf(address account) external view returns (Balance memory) {
        return _balances[account];
    }

    /// @notice available + withdrawing.
    function totalBalance(address account) external view returns (uint256) {
        Balance storage b = _balances[account];
        return b.available + b.withdrawing;
    }

    function DOMAIN_SEPARATOR() external view returns (bytes32) {
        return _domainSeparatorV4();
    }

    // ---- internals ----------------------------------------------------------------------------

    function _credit(address account, address from, uint256 value) private {
        if (account == address(0)) revert ZeroAddress();
        if (value == 0) revert ZeroAmount();
        _balances[account].available += value;
        emit Deposited(account, from, value);
    }

    function _min(uint256 a, uint256 b) private pure returns (uint256) {
        return a < b ? a : b;
    }
}
