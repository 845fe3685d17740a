/**
 * Circle's batched x402 payment, built the way @circle-fin/x402-batching's BatchEvmScheme builds
 * it (EIP-712 TransferWithAuthorization under the "GatewayWalletBatched" domain of our vault,
 * validAfter 10 minutes back, sent as a v2 `PAYMENT-SIGNATURE`), with terms a test may change.
 */
import { getAddress, type Hex, type LocalAccount, toHex } from "viem";
import { TRANSFER_WITH_AUTHORIZATION_TYPES } from "../../src/chain/gateway.ts";
import type { TestService } from "./service.ts";
import { X402_PROFILE } from "./x402.ts";

export async function batchedPayment(
  svc: TestService,
  account: LocalAccount,
  resource: string,
  t: { from?: string; to: string; value: bigint; nonce?: Hex; validFor?: bigint },
): Promise<string> {
  const domain = svc.deps.chain.gateway.domain(X402_PROFILE, "batched");
  const now = BigInt(Math.floor(svc.clock.now().getTime() / 1000));
  const authorization = {
    from: getAddress(t.from ?? account.address),
    to: getAddress(t.to),
    value: t.value,
    validAfter: now - 600n,
    validBefore: now + (t.validFor ?? 7n * 86400n + 100n),
    nonce: t.nonce ?? toHex(crypto.getRandomValues(new Uint8Array(32))),
  };
  const signature = await account.signTypedData({
    domain,
    types: TRANSFER_WITH_AUTHORIZATION_TYPES,
    primaryType: "TransferWithAuthorization",
    message: authorization,
  });
  const accepted = {
    scheme: "exact",
    network: `eip155:${domain.chainId}`,
    amount: t.value.toString(),
    payTo: getAddress(t.to),
    maxTimeoutSeconds: 3600,
    extra: {
      name: "GatewayWalletBatched",
      version: "1",
      verifyingContract: domain.verifyingContract,
    },
  };
  const payload = {
    x402Version: 2,
    payload: {
      authorization: {
        ...authorization,
        value: authorization.value.toString(),
        validAfter: authorization.validAfter.toString(),
        validBefore: authorization.validBefore.toString(),
      },
      signature,
    },
    resource: { url: resource },
    accepted,
  };
  return btoa(JSON.stringify(payload));
}
