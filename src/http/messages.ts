/**
 * The message catalog: every error text the API returns. Texts the spec fixes are copied
 * exactly; the rest are ours. Modules add their texts here, never inline.
 */
export const M = {
  // General
  notFound: "Not found.",
  routeNotFound: "No such endpoint.",
  malformedJson: "Malformed JSON body.",
  malformedJsonHint: "Send a JSON object with Content-Type: application/json.",
  bodyNotObject: "The request body must be a JSON object.",
  internal: "Internal server error.",
  databaseBusy: "The service is busy. Retry shortly.",
  databaseUnavailable: "The service is temporarily unavailable. Retry shortly.",
  databaseUnavailableHint: "The database could not be reached; nothing was done.",
  x402AttemptLapsedHint:
    "The server lost touch with its database during the call and gave the payment up: nothing " +
    "was charged. Send the same proof again.",
  x402WithdrawalLapsedHint:
    "The server lost touch with its database before sending the withdrawal and gave it up: " +
    "nothing was sent. Send the same request again.",
  databaseBusyHint:
    "The request waited too long for the database and was stopped; nothing was done.",
  methodNotAllowed: "Method not allowed.",

  // Request limits and text rules (the edge, src/http/limits.ts)
  bodyTooLarge: "Request body too large.",
  bodyTimeout: "The request body was not received in time.",
  bodyTimeoutHint: "Send the whole body without pausing.",
  unsupportedMediaType: "Content-Type must be application/json.",
  crossSiteRefused:
    "Cross-site request refused: a session cookie is accepted only from this service's own pages.",
  textNotAllowedHint: "Text must be well-formed Unicode and must not contain NUL (U+0000).",
  jsonTooDeepHint: "JSON bodies may nest arrays and objects at most 32 levels deep.",

  // Authentication (the spec's texts)
  authRequired: "Authentication required. Provide a valid API key in the Authorization header.",
  authRequiredShort: "Authentication required.",
  /** Routes that read the key from `x-api-key` only (not Authorization, no session). */
  authRequiredApiKey: "Authentication required. Provide a valid API key in the x-api-key header.",
  invalidApiKey: "Invalid API key",
  insufficientPermissions: "Insufficient permissions",
  rateLimited: "Rate limit exceeded. Please retry after 30 seconds.",
  notAuthenticated: "Not authenticated.",
  invalidSession: "Invalid session.",
  merchantNotFound: "Merchant not found.",
  dashboardUnauthorized: "Unauthorized",
  dashboardNotFound: "Not found",

  // Merchant signup, verification, login
  signupEmail: "A valid email is required.",
  signupBusinessName: "businessName is required (1 to 120 characters).",
  signupPassword: "Password must be 8 to 200 characters.",
  signupWalletProvider:
    "walletProvider must be one of: MANAGED, EXTENSION_WALLET, LINK_WALLET, HOSTED_WALLET",
  emailTaken: "An account with this email already exists.",
  codeSent: "Verification code sent. It is valid for 10 minutes.",
  verifyFields: "email and code are required.",
  noAccount: "No account found for this email.",
  alreadyVerified: "This account is already verified.",
  invalidCode: "Invalid verification code.",
  codeExpired: "Verification code has expired. Please sign up again to get a new one.",
  codeLocked: "Too many incorrect codes. Please sign up again to get a new one.",
  walletSetupFailed: "Verification succeeded but wallet setup failed. Please contact support.",
  verified: "Account verified successfully.",
  keyWarning: "Save this API key now. It is shown only once and cannot be recovered.",
  loginFields: "email and password are required.",
  badLogin: "Invalid email or password.",
  loginThrottledHint: "Too many failed logins for this email; try again after Retry-After seconds.",
  unverifiedLogin: "Please verify your email before logging in.",
  loggedOut: "Logged out.",
  dashDraftRestored:
    "What you typed before your session ended is back in the form: check it and send it again.",
  sessionEnded:
    "Your session ended (you logged out in another tab, or it expired), so that form was not sent. Log in to go back to it.",

  // Payout wallet
  walletPatchExternal:
    "Only MANAGED can be set here. To use your own wallet, link it with GET and POST /api/merchant/wallet/connect.",
  walletAlreadyManaged: "You already have a service-managed wallet.",
  walletManagedCreated: "A new service-managed wallet has been created for your payouts.",
  connectAuth: "Authentication required.",
  connectAddressMissing: "address query param required.",
  connectAddressInvalid: "address must be a valid EVM address.",
  connectFields: "address, message, signature, and walletKind are required.",
  connectKind: "walletKind must be one of: EXTENSION_WALLET, LINK_WALLET, HOSTED_WALLET",
  connectChallenge: "Missing or expired challenge — request a new one via GET first.",
  connectSignature: "Signature verification failed.",

  // Merchant wallets and withdrawals
  walletLabel: "label must be a string of at most 100 characters.",
  walletNotFound: "Wallet not found.",
  streamFieldsRequired:
    "senderSCA, receiverSCA, ratePerSecond and totalDeposited are all required.",
  streamAddress: "senderSCA and receiverSCA must be 0x addresses (40 hex characters).",
  streamRate:
    "ratePerSecond must be a decimal USDC amount with at most 6 decimal places, at least 0.000001.",
  streamDeposit:
    "totalDeposited must be a positive decimal USDC amount with at most 6 decimal places.",
  streamReceiverZero: "receiverSCA must be a 0x address other than the zero address.",
  streamReceiverContract:
    "receiverSCA is one of this service's contracts (the USDC token or a vault): it could never withdraw the stream. Name the receiver's wallet.",
  streamSameParties: "senderSCA and receiverSCA must be different wallets.",
  streamTooShort:
    "totalDeposited must be at least ratePerSecond: a stream lasts at least one second.",
  streamReference: "reference is required.",
  streamCaller: "callerSCA is required and must be a 0x address.",
  streamReceiver: "receiverSCA is required and must be a 0x address.",
  streamStatusFilter: "status must be ACTIVE, STOPPED or COMPLETED.",
  streamNotFound: "Stream not found.",
  /** The spec's text names the state; the service sets the word. */
  streamNotActive: "Stream is already STOPPED.",
  streamCompleted: "Stream is already COMPLETED.",
  streamSenderNotControlled: "senderSCA must be a wallet you control.",
  streamReceiverNotControlled: "receiverSCA must be a wallet you control.",
  streamNotReceiver: "receiverSCA is not this stream's receiver.",
  streamCallerNotControlled: "callerSCA must be a wallet you control.",
  streamInsufficientBalance: "senderSCA does not hold totalDeposited USDC.",
  streamNothingToWithdraw: "Nothing has accrued to withdraw yet.",
  withdrawAmount: "Valid amount is required.",
  withdrawAmountHint:
    'amount is a decimal string greater than 0 with at most 6 decimal places, e.g. "25.50".',
  withdrawDestination:
    "destinationAddress must be a valid EVM address other than the zero address.",
  withdrawDestinationContract:
    "destinationAddress is one of this service's contracts (the USDC token or a vault): USDC sent there could not be taken out again. Send it to a wallet.",
  withdrawWalletId: "walletId must be the id of one of your wallets (GET /api/wallets).",
  withdrawExternal:
    "Withdrawals are for managed wallets only: your payout wallet is an external wallet you control, so move its funds with that wallet.",
  withdrawInsufficient: "Insufficient USDC balance in this wallet for the withdrawal.",
  dashWithdrawn: "Withdrawal confirmed on chain.",
  dashWalletCreated: "Wallet created.",
  dashFaucetMinted: "Test USDC minted to the wallet.",

  // Escrow
  escrowReference: "reference is required: the escrow reference from escrow creation.",
  escrowCallerSCA: "callerSCA must be a valid EVM address.",
  escrowDepositor:
    "Exactly one of depositorSCA (an address) or depositorWalletId (a wallet id) is required: a wallet you control.",
  escrowBeneficiary: "beneficiarySCA must be a valid EVM address other than the zero address.",
  escrowAmount: "Valid amount is required.",
  escrowAmountHint:
    'amount is a decimal string greater than 0 with at most 6 decimal places, e.g. "25.50".',
  escrowExpiry:
    "Exactly one of expiresInSeconds (60 to 31536000) or expiresAt (an ISO 8601 time in the future, within a year) is required.",
  escrowDescription: "description must be a string of at most 500 characters.",
  escrowReason: "reason must be a string of at most 1000 characters.",
  escrowOutcome: "outcome must be released or refunded.",
  escrowStatusFilter: "status must be ACTIVE, DISPUTED, RELEASED or REFUNDED.",
  escrowNotFound: "Escrow not found.",
  escrowNotControlled: "callerSCA is not a wallet you control.",
  escrowDepositorNotControlled: "The depositor must be a wallet you control.",
  escrowNotParty: "callerSCA must be the escrow's depositor or beneficiary.",
  escrowNotDepositor: "Only the depositor can release this escrow.",
  escrowNotBeneficiary: "Only the beneficiary can confirm delivery.",
  escrowParties: "The beneficiary must differ from the depositor.",
  escrowBeneficiaryContract:
    "beneficiarySCA is one of this service's contracts (the USDC token or a vault): it could never be paid. Name the beneficiary's wallet.",
  escrowInsufficient: "Insufficient USDC balance in the depositor wallet for this escrow.",
  escrowWrongState: "Escrow is not in a state that allows this action.",
  escrowAlreadyConfirmed: "Delivery is already confirmed for this escrow.",
  escrowNotExpired: "Escrow has not expired yet — it can be refunded after expiresAt.",
  escrowCreated: "Escrow created: the amount is held by the escrow contract.",
  escrowReleased: "Escrow released to the beneficiary.",
  escrowConfirmed: "Delivery confirmed. The escrow stays ACTIVE until the depositor releases it.",
  escrowDisputed:
    "Escrow disputed. Release and confirmation are blocked until the operator resolves it.",
  escrowResolvedReleased: "Dispute resolved: the escrow was released to the beneficiary.",
  escrowResolvedRefunded: "Dispute resolved: the escrow was refunded to the depositor.",
  escrowRefunded: "Escrow refunded to the depositor.",
  operatorOnly: "Insufficient permissions",

  // x402 pay-per-call
  x402Slug:
    "slug must be 1 to 63 characters: lowercase letters, digits and hyphens, starting with a letter or digit.",
  x402UpstreamUrl: "upstreamUrl must be a valid public HTTPS URL.",
  x402Price: "price must be a USDC amount greater than 0 with up to 6 decimal places.",
  x402Methods: "methods must be a non-empty list of GET, POST, PUT, PATCH, DELETE.",
  x402Description: "description must be a string of at most 500 characters.",
  x402Method: "method must be one of GET, POST, PUT, PATCH, DELETE.",
  x402Params: "params must be a JSON object.",
  x402ProofField: "paymentProof must be a string.",
  x402AgentIdField: "agentId must be 8004:{chainId}:{tokenId}.",
  x402SlugTaken: "A listing with this slug already exists.",
  x402ListingNotFound: "Listing not found.",
  x402MethodNotAllowed: "This listing does not accept that method.",
  x402PaymentRequired: "Payment required. Send an X-402-Payment-Proof for this listing.",
  x402ProofInvalid: "Invalid payment proof.",
  x402ProofExpired: "Payment proof expired: its timestamp is more than 5 minutes old.",
  x402ProofAmount: "Payment proof amount does not match the listing price.",
  x402ProofPayee: "Payment proof does not pay this listing's seller.",
  x402ProofUsed: "Payment proof already used.",
  x402NoGatewayBalance:
    "No Gateway balance. Deposit USDC to your Gateway account before making x402 payments.",
  x402InsufficientGatewayBalance: "Insufficient Gateway balance for this payment.",
  x402UpstreamUnreachable: "Upstream API unreachable.",
  x402AgentRefused: "Agent verification failed.",
  x402SettlementFailed: "Settlement failed: nothing was charged.",
  x402ProofRequired: "proof is required: the X-402-Payment-Proof value.",
  x402WithdrawAmount: "amount must be a USDC amount greater than 0 with up to 6 decimal places.",
  x402WithdrawExceeds: "amount exceeds the withdrawable Gateway balance.",
  x402DestinationChain: "destinationChain is not a supported chain for withdrawals.",
  x402DestinationAddress: "destinationAddress must be a valid EVM address.",
  x402SellerAddress: "sellerAddress must be a valid EVM address.",
  x402PayerAddress: "address must be a valid EVM address.",
  x402DepositSource:
    "Exactly one of walletId, fromSCA and agentId is required: a wallet or agent you control.",
  x402DepositNotControlled: "The deposit source must be a wallet or agent you control.",
  x402PayerSource:
    "Exactly one of walletId and agentId is required: one of your managed wallets or agents.",
  x402PayerWalletId: "walletId must be the id of one of your managed wallets.",
  x402PayerAgentId: "agentId must be 8004:{chainId}:{tokenId} or a token id of one of your agents.",
  x402ProofSlug: "slug is required: the listing to pay.",
  x402ValidFor: "validForSeconds must be a whole number of seconds from 1 to 300.",
  x402PayerWalletNotFound: "Wallet not found: walletId must be one of your managed wallets.",
  x402PayerAgentNotFound: "Agent not found: agentId must be one of your agents.",
  x402PayerExternal:
    "This is your external payout wallet: the service holds no key for it, so sign proofs and withdraw with that wallet yourself.",
  x402DepositInsufficient: "Insufficient USDC in the wallet for this deposit.",
  x402RelayBody:
    "authorization { from, to, value, validAfter, validBefore, nonce } and signature are required: a ReceiveWithAuthorization of USDC to the gateway vault, signed by from.",
  x402RelayVault: "authorization.to must be the gateway vault: a deposit is received by the vault.",
  x402RelayMinimum: "A relayed deposit is at least 1.000000 USDC.",
  x402RelayWindow:
    "The authorization must be valid now and for at least 60 more seconds (validAfter < now < validBefore - 60).",
  x402RelaySignature:
    "signature is not authorization.from's ReceiveWithAuthorization under the USDC domain (its key's 65-byte, low-s signature; for an address with code, a smart account or an EIP-7702 delegated key, one its ERC-1271 code accepts: USDC asks the code).",
  x402RelayUsed: "This authorization was already used or cancelled.",
  x402RelayAccountUnsupported:
    "This chain's USDC takes a relayed deposit only with a key's signature (it has no receiveWithAuthorization taking a smart account's signature as bytes, as before FiatToken v2.2): the account deposits with its own transaction (approve the gateway vault, then deposit).",
  x402WithdrawNoDelay:
    "This vault has no withdrawal delay: the whole available balance is withdrawable now, so withdraw it directly.",
  x402WithdrawStartExceeds:
    "amount exceeds the available Gateway balance less the paid calls not yet settled.",
  x402RelayWithdrawBody:
    "authorization { account, value, validBefore, nonce } (and to, for a withdrawal) and signature are required: an InitiateWithdrawal or Withdraw under the gateway vault's domain, signed by account.",
  x402RelayWithdrawMinimum:
    "A relayed withdrawal is at least 1.000000 USDC, or everything the account can take now.",
  x402RelayDeadline: "authorization.validBefore must be at least 60 seconds from now.",
  x402RelayWithdrawSignature:
    "signature is not authorization.account's InitiateWithdrawal or Withdraw under the gateway vault's domain (its key's 65-byte, low-s signature, or one its ERC-1271 code accepts).",
  x402RelayUnsupported:
    "This gateway vault predates signed withdrawals: the account withdraws with its own transaction.",
  dashListingCreated: "Listing created.",
  x402FacilitatorBody: "paymentPayload and paymentRequirements objects are required.",

  // API keys
  keyType: "type must be secret or publishable.",
  keyEnvironment: "environment must be test or live.",
  keyScopes:
    "scopes must be a list of: payments, escrow, streams, payroll, x402, agents, jobs, bridge",
  keyLabel: "label must be at most 100 characters.",
  keyNotFound: "API key not found.",
  keyAlreadyRevoked: "This API key is already revoked.",
  merchantKeyRevoke: "The merchant key cannot be revoked; rotate it instead.",
  keyRevoked: "API key revoked.",

  // Consumer sessions
  consumerAddress: "Not a valid wallet address.",
  consumerNoSession: "No session.",
  consumerBadSession: "Invalid or expired session.",

  // Webhooks and idempotency
  webhookUrlInvalid: "webhookUrl must be a valid public HTTPS URL.",
  deliveryNotFound: "Webhook delivery not found.",
  deliveriesQuery: "status must be pending, delivered or undelivered; limit 1 to 500.",
  idempotencyKeyInvalid: "Idempotency-Key must be 1 to 255 printable characters.",
  idempotencyMismatch: "This Idempotency-Key was already used with a different request.",
  idempotencyMismatchHint:
    "Use a new key for a new request; reuse a key only to retry the same request.",
  idempotencyInFlight: "A request with this Idempotency-Key is still in progress.",
  idempotencyInFlightHint: "Retry after it completes to receive its response.",

  // Payments
  paymentAmount: "Valid amount is required.",
  paymentAmountHint:
    'amount is a decimal string greater than 0 with at most 6 decimal places, e.g. "12.50".',
  paymentCurrency: "currency must be USDC.",
  paymentDescription: "description must be a string of at most 500 characters.",
  paymentMetadata: "metadata must be a JSON object of at most 4000 characters.",
  paymentNoWallet:
    "Finish setting up your payout wallet first: create a managed wallet (PATCH /api/merchant/wallet) or link your own (/api/merchant/wallet/connect).",
  paymentNotFound: "Payment not found.",
  paymentNotPayable: "This payment can no longer be paid.",
  paymentPaidByOther:
    "This payment is already being paid from another wallet. Nothing was taken from yours.",
  paymentBridgeUnderWay:
    "This payment is already being paid from another chain: it is settled when that transfer arrives. Nothing was taken from your wallet.",
  paymentCursor: "cursor is not valid; use the nextCursor of a previous page.",
  paymentHistoryQuery: "status must be PENDING, SUCCESS, FAILED or EXPIRED; limit 1 to 100.",
  payerAddress: "payer must be a valid wallet address.",
  permitSignature: "signature (65-byte hex) and deadline are required.",
  txHashInvalid: "txHash must be a 32-byte hex transaction hash.",
  relayBody:
    "authorization { from, to, value, validAfter, validBefore, nonce } and signature (65-byte hex) are required.",
  authorizationAmount: "The authorization's amount does not match this payment.",
  authorizationPayee: "The authorization does not pay this payment's payee.",
  authorizationReference: "The authorization was signed for another payment.",
  authorizationExpired: "The authorization has expired. Sign again.",
  authorizationWindow: "The authorization's validity window does not fit this payment.",
  authorizationSignature: "The signature is not the payer's authorization for this payment.",
  payerBalance: "The payer's USDC balance does not cover this payment.",
  devFaucetUnavailable: "Test USDC is only given on local chains in development.",

  // Bridge (CCTP)
  bridgeSignIn: "Sign in required to bridge funds.",
  bridgeSourceUnsupported: "Unsupported source chain.",
  bridgeFields: "Missing fields: fromChain, toChain, amount, recipient",
  bridgeDestination:
    "Only bridging into the settlement chain is supported: toChain must be Settle_Testnet.",
  bridgeExternalWallet:
    "Bridging needs a service-created wallet: your account uses an external wallet. Sign in without a wallet address to get one.",
  bridgeAmount:
    "amount must be a decimal USDC amount greater than 0 with at most 6 decimal places.",
  bridgeRecipient: "recipient must be a 0x address on the destination chain.",
  bridgeRecipientContract:
    "recipient is one of this service's contracts on Settle_Testnet (the USDC token or a vault): USDC minted there could not be taken out again. Name a wallet.",
  bridgeBalance: "Your wallet's USDC balance on the source chain does not cover this amount.",
  bridgeNotFound: "Bridge transfer not found.",
  bridgeReference: "reference is required: the bridge reference from POST /api/cctp/transfer.",
  bridgePayment: "This payment cannot be paid from another chain.",
  bridgeBelowFee: "The amount does not cover the bridge fee.",
  bridgeSpeed: "transferSpeed must be standard or fast.",
  bridgeStarted: "Bridge started. Poll the status path for progress.",
  bridgeSourceChainBody: "sourceChain is required: the chain the USDC is on, e.g. Base_Sepolia.",
  bridgeRelayBody:
    "sourceChain, maxFee (base units), authorization { from, to, value, validAfter, validBefore, nonce } and signature (65-byte hex) are required.",
  bridgeSignatureUnavailable:
    "Paying with one signature is not available from this chain: send the approval and the burn from your wallet.",
  bridgeAuthorizationUsed: "This authorization was already used or cancelled. Sign again.",
  bridgeFeeChanged: "The bridge fee changed since the quote. Review the payment and sign again.",
  bridgeBurnNotFound: "No mined transaction with this hash on the source chain (yet).",
  bridgeBurnReverted: "The burn transaction reverted: nothing was burned.",
  bridgeBurnInvalid:
    "The transaction is not one USDC burn through this chain's CCTP token messenger.",
  bridgeBurnWrongPayment: "The burn's hook data does not name this payment.",
  bridgeBurnWrongRecipient:
    "The burn does not mint to this payment's payee on Settle Testnet (destination domain, recipient and caller must be the payment's).",
  bridgeBurnAmount: "The burn does not cover this payment's amount after the bridge fee.",
  bridgeBurnUsed: "This burn is already recorded for another transfer.",
  // Agentic commerce jobs (ERC-8183); the spec's texts
  jobsAuthRequired: "Authentication required. Provide a valid x-api-key or log in.",
  jobNotFound: "Job not found",
  jobClientMismatch: "clientWalletId does not resolve to this job's client.",
  jobClientNotControlled: "You do not control this job's client wallet.",
  jobProviderMismatch: "providerWalletId does not resolve to this job's provider.",
  jobProviderNotControlled: "You do not control this job's provider wallet.",
  jobEvaluatorMismatch: "evaluatorWalletId does not resolve to this job's evaluator.",
  jobEvaluatorNotControlled: "You do not control this job's evaluator wallet.",
  jobWrongStatus: "The job's status does not allow this action.",
  jobInsufficientBalance: "Insufficient USDC balance in the client wallet for this job's budget.",
  jobNotExpired: "The job contract reverted: the job has not expired yet.",
  jobId: "jobId is required: the on-chain job id (digits).",
  jobIdString: 'jobId must be a string: the on-chain job id in digits, e.g. "42".',
  jobIdFormat: "jobId must be the on-chain job id: digits, without sign or leading zeros.",
  jobWalletId: "A wallet id (UUID) is required.",
  jobClientWalletId: "clientWalletId is required: the id of one of your managed wallets.",
  jobAddress: "provider and evaluator must be valid EVM addresses other than the zero address.",
  jobBudget: "budget must be a positive decimal USDC amount with at most 6 decimal places.",
  jobExpiry: "expiresInSeconds must be a whole number from 60 to 31536000 (one year).",
  jobDescription: "description is required: a string of 1 to 1000 characters.",
  jobDeliverable:
    "deliverableData must be an ipfs:// URI or an https:// URL (at most 2048 characters).",
  jobReason: "reason must be a string of at most 500 characters.",

  // Agents (ERC-8004); the spec's texts first
  agentSearchAuth: "Authentication required for agent search/listing.",
  agentNotFound: "No agent found matching query.",
  agentName: "name is required: 1 to 100 characters.",
  agentMetadata:
    "Provide exactly one of metadataURI (an ipfs:// or https:// URI) and manifest (a JSON object).",
  agentManifest: "manifest must be a JSON object of at most 8000 characters.",
  agentMetadataUri: "metadataURI must be an ipfs:// or https:// URI of at most 2048 characters.",
  agentQuery: "scaAddress must be a 0x address; tokenId digits; name at most 100 characters.",
  agentIdQuery: "agentId is required: the agent's token id (digits).",

  // Chain
  chainTimeout: "Timed out waiting for the blockchain transaction to confirm.",
  chainTimeoutHint: "The transaction may still confirm; retry with backoff or check its hash.",
  chainReverted: "The on-chain transaction was reverted by the contract.",
  chainRejected: "The blockchain node refused the transaction.",
  chainUnavailable: "The blockchain node is not reachable.",
  chainNotConfigured: "That chain is not configured on this service.",
  resourceBusy: "Another request is still acting on this resource. Retry shortly.",

  // Payroll
  payrollRecipientsRequired: "A non-empty recipients array is required.",
  payrollTooMany: "A payroll batch takes at most 5,000 recipients.",
  payrollRecipientContract:
    "A recipient is one of this service's contracts (the USDC token or a vault): USDC paid there could not be taken out again.",
  payrollTotalTooLarge:
    "The recipients' amounts add up to more than 8589934591.999999 USDC, the most one payroll batch can pay.",
  payrollDescription: "description must be a string of at most 500 characters.",
  payrollBatchRefRequired: "batchRef query parameter is required.",
  payrollNotFound: "Payroll batch not found.",
  signRequestNotFound: "Sign request not found.",
  signRequestNotPending: "This sign request is not pending any more.",
  signTxHash: "txHash must be a 0x transaction hash (64 hex characters).",
  signTxNotFound: "No mined transaction with this txHash was found on the batch's chain.",
  signTxNotFoundHint: "Submit the hash once your wallet's transaction is mined.",
  signTxMismatch:
    "The transaction is not a successful USDC transfer of the exact amount from your linked wallet to this recipient.",
  signTxReused: "This transaction was already used for another sign request.",

  // Dashboard
  dashCsrf:
    "This form has expired (or the dashboard switched between live and test mode since it was shown), or was not sent from this site. Reload the page and try again.",
  dashWalletMissing:
    "No browser wallet was found. Install a wallet extension, or open this page in your wallet's browser.",
  dashWalletRejected: "The request was rejected in your wallet.",
  dashWalletFailed: "The wallet could not complete the request.",
  dashWalletNotPayout:
    "The connected wallet is not your payout wallet: switch to it in your wallet, then try again.",
  dashSignedAmount: "Enter an amount in USDC greater than 0, with at most 6 decimal places.",
  dashWalletLinked: "Your wallet is linked: payouts go to it from now on.",
  dashVerifiedLogIn: "Account verified. Log in with your password to continue.",
  dashSecretRolled: "A new signing secret is active; deliveries are signed with it from now on.",
  dashReplayed: "The delivery was sent again.",
  dashRequestFailed: "The request did not reach the server. Check your connection and try again.",
  dashLinkCreated: "Payment link created. Send the link or show its QR code to your customer.",
  dashPaymentsFilter:
    "Choose a status (PENDING, SUCCESS, FAILED or EXPIRED) and a chain from the lists.",
  dashAgentsTestMode:
    "Agents run on the test network: switch to test mode to deploy, fund or deposit for them.",
} as const;

export type MessageKey = keyof typeof M;

/** Catalog texts that name a field, a parameter or a limit. */
export const MF = {
  /** The dashboard's agent funding, more than the wallet holds. */
  dashAgentFundShort: (held: string, amount: string) =>
    `The wallet holds ${held} USDC: not enough to fund the agent with ${amount} USDC.`,
  /** The dashboard's agent deposit, more than its smart account holds. */
  dashAgentDepositShort: (held: string, amount: string) =>
    `The agent's smart account holds ${held} USDC: not enough to deposit ${amount} USDC. Fund the agent first.`,
  /** `field` is a body field path (`metadata.note`), a path or query parameter, or a phrase. */
  textNotAllowed: (field: string) => `${field} contains characters that are not allowed.`,
  jsonTooDeep: (field: string) => `${field} is nested too deeply.`,
  /** The spec's `Escrow is RELEASED — cannot dispute.` (state and action vary). */
  escrowWrongState: (status: string, action: string) => `Escrow is ${status} — cannot ${action}.`,
  /** The spec's `Unsupported source chain:` followed by the value. */
  bridgeSource: (value: string) => `Unsupported source chain: ${value}`,
  /** The spec's `Upstream API returned 503`. */
  x402Upstream: (status: number) => `Upstream API returned ${status}`,
  x402Withdrawn: (amount: string) => `Withdrew ${amount} USDC from the gateway.`,
  /** The dashboard's notice for a started withdrawal (amount, when it matures). */
  x402WithdrawalStarted: (amount: string, at: string) =>
    `Withdrawal of ${amount} USDC started: withdrawable from ${at}.`,
  /** A payroll recipient's malformed field, by its 0-based index. */
  payrollRecipientAddress: (i: number) =>
    `recipients[${i}].recipientSCA must be a 0x address (40 hex characters; mixed case must be a valid checksum).`,
  payrollRecipientAmount: (i: number) =>
    `recipients[${i}].amount must be a USDC amount (a string or number, at most 6 decimal places, not negative).`,
  payrollRecipientLabel: (i: number) =>
    `recipients[${i}].label must be a string of at most 200 characters.`,
  payrollRecipientObject: (i: number) => `recipients[${i}] must be an object.`,
  bodyTooLargeHint: (maxBytes: number) => `This endpoint accepts at most ${maxBytes} bytes.`,
  unsupportedMediaType: (types: readonly string[]) =>
    types.length === 1 && types[0] === "application/json"
      ? M.unsupportedMediaType
      : `Content-Type must be one of: ${types.join(", ")}.`,
} as const;
