// SPDX-License-Identifier: MIT
pragma solidity ^0.8.26;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {IERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/IERC20Permit.sol";
import {ERC3009} from "@openzeppelin/contracts/token/ERC20/extensions/draft-ERC3009.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";
import {Nonces} from "@openzeppelin/contracts/utils/Nonces.sol";
import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";

/**
 * @title TestUSDC
 * @notice A test stand-in for USDC: 6 decimals, name "USD Coin", symbol "USDC", EIP-712 domain
 * version "2", EIP-2612 permit and EIP-3009 authorizations with random bytes32 nonces, exactly
 * the surface our services use on real USDC. The owner (the operator) mints for the faucet.
 *
 * @dev OpenZeppelin's ERC20Permit hard-codes the EIP-712 version "1" in its constructor, which
 * cannot coexist with the version "2" real USDC signs under (the EIP712 base constructor may be
 * called only once). So `permit` is OZ ERC20Permit's body over OZ EIP712, ECDSA and Nonces.
 */
contract TestUSDC is ERC3009, IERC20Permit, Nonces, Ownable {
    bytes32 private constant PERMIT_TYPEHASH =
        keccak256("Permit(address owner,address spender,uint256 value,uint256 nonce,uint256 deadline)");

    /// @dev Permit deadline has expired (same error as OZ ERC20Permit).
    error ERC2612ExpiredSignature(uint256 deadline);

    /// @dev Mismatched signature (same error as OZ ERC20Permit).
    error ERC2612InvalidSigner(address signer, address owner);

    constructor() ERC20("USD Coin", "USDC") EIP712("USD Coin", "2") Ownable(msg.sender) {}

    function decimals() public pure override returns (uint8) {
        return 6;
    }

    /// @notice The EIP-712 domain version, as real USDC exposes it.
    function version() external view returns (string memory) {
        return _EIP712Version();
    }

    /// @notice Contracts that may mint and burn besides the owner: a CCTP token messenger.
    mapping(address => bool) public isMinter;

    event MinterConfigured(address indexed minter, bool allowed);

    /// @dev The caller is neither the owner nor a configured minter.
    error NotMinter(address caller);

    /// @notice Lets `minter` mint and burn (as real USDC's master minter configures CCTP's).
    function configureMinter(address minter, bool allowed) external onlyOwner {
        isMinter[minter] = allowed;
        emit MinterConfigured(minter, allowed);
    }

    /// @notice Mints test USDC: the operator (owner) for the faucet, or a configured minter.
    function mint(address to, uint256 amount) external {
        // Anyone else gets Ownable's error, as before minters existed.
        require(msg.sender == owner() || isMinter[msg.sender], OwnableUnauthorizedAccount(msg.sender));
        _mint(to, amount);
    }

    /// @notice Burns the caller's own tokens; only a configured minter (real USDC's rule).
    function burn(uint256 amount) external {
        require(isMinter[msg.sender], NotMinter(msg.sender));
        _burn(msg.sender, amount);
    }

    /// @inheritdoc IERC20Permit
    function permit(
        address owner,
        address spender,
        uint256 value,
        uint256 deadline,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) public virtual {
        if (block.timestamp > deadline) {
            revert ERC2612ExpiredSignature(deadline);
        }
        bytes32 structHash = keccak256(abi.encode(PERMIT_TYPEHASH, owner, spender, value, _useNonce(owner), deadline));
        address signer = ECDSA.recover(_hashTypedDataV4(structHash), v, r, s);
        if (signer != owner) {
            revert ERC2612InvalidSigner(signer, owner);
        }
        _approve(owner, spender, value);
    }

    /// @inheritdoc IERC20Permit
    function nonces(address owner) public view virtual override(IERC20Permit, Nonces) returns (uint256) {
        return super.nonces(owner);
    }

    /// @inheritdoc IERC20Permit
    // solhint-disable-next-line func-name-mixedcase
    function DOMAIN_SEPARATOR() external view returns (bytes32) {
        return _domainSeparatorV4();
    }

    // The `bytes signature` overloads real USDC (v2.2) has; they also accept ERC-1271 signers
    // (smart accounts). OZ ships them only with keyed sequential nonces
    // (ERC20TransferAuthorization), so these mirror that file over the random-nonce ERC3009.
    // Real USDC v2.2 checks the `v, r, s` overloads the same way (it packs them into `r ‖ s ‖ v`
    // and asks the signer's code when it has some), so a smart account's 65-byte signature is
    // accepted through either; OZ's ERC3009 recovers a key only, so they are overridden here.

    /// @notice {transferWithAuthorization}: an EOA's ECDSA signature, or an ERC-1271 account's.
    function transferWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) public virtual override {
        transferWithAuthorization(from, to, value, validAfter, validBefore, nonce, abi.encodePacked(r, s, v));
    }

    /// @notice {receiveWithAuthorization}: an EOA's ECDSA signature, or an ERC-1271 account's.
    function receiveWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) public virtual override {
        receiveWithAuthorization(from, to, value, validAfter, validBefore, nonce, abi.encodePacked(r, s, v));
    }

    /// @notice {cancelAuthorization}: an EOA's ECDSA signature, or an ERC-1271 account's.
    function cancelAuthorization(address authorizer, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)
        public
        virtual
        override
    {
        cancelAuthorization(authorizer, nonce, abi.encodePacked(r, s, v));
    }

    /// @notice {transferWithAuthorization} with a packed or ERC-1271 signature.
    function transferWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes memory signature
    ) public virtual {
        bytes32 hash = _hashTypedDataV4(
            keccak256(abi.encode(TRANSFER_WITH_AUTHORIZATION_TYPEHASH, from, to, value, validAfter, validBefore, nonce))
        );
        require(SignatureChecker.isValidSignatureNow(from, hash, signature), ERC3009InvalidSignature());
        _transferWithAuthorization(from, to, value, validAfter, validBefore, nonce);
    }

    /// @notice {receiveWithAuthorization} with a packed or ERC-1271 signature; `to` must be the caller.
    function receiveWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes memory signature
    ) public virtual {
        bytes32 hash = _hashTypedDataV4(
            keccak256(abi.encode(RECEIVE_WITH_AUTHORIZATION_TYPEHASH, from, to, value, validAfter, validBefore, nonce))
        );
        require(SignatureChecker.isValidSignatureNow(from, hash, signature), ERC3009InvalidSignature());
        require(to == _msgSender(), ERC20InvalidReceiver(to));
        _transferWithAuthorization(from, to, value, validAfter, validBefore, nonce);
    }

    /// @notice {cancelAuthorization} with a packed or ERC-1271 signature.
    function cancelAuthorization(address authorizer, bytes32 nonce, bytes memory signature) public virtual {
        bytes32 hash = _hashTypedDataV4(keccak256(abi.encode(CANCEL_AUTHORIZATION_TYPEHASH, authorizer, nonce)));
        require(SignatureChecker.isValidSignatureNow(authorizer, hash, signature), ERC3009InvalidSignature());
        _cancelAuthorization(authorizer, nonce);
    }
}
