/** A payer with a browser-wallet's powers, in code: a viem account on the local chain. */
import { type Chain, createPublicClient, createWalletClient, type Hex, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import type { TestService } from "./service.ts";
import type { ProfileName } from "../../src/chain/profiles.ts";
import { waitFor } from "./poll.ts";

export function payer(svc: TestService, privateKey: Hex, profile: ProfileName = "production") {
  const rt = svc.deps.chain.runtime(profile);
  const p = payerAt(
    { baseUrl: svc.baseUrl, viemChain: rt.viemChain, rpcUrl: rt.rpcUrl },
    privateKey,
  );
  return {
    ...p,
    async fund(usdc: bigint) {
      await svc.deps.chain.mintUsdc({
        profile,
        to: p.address.toLowerCase() as `0x${string}`,
        amount: usdc,
      });
    },
  };
}

/** The same payer against a service in another process: its base URL and the chain's RPC. */
export function payerAt(
  at: { baseUrl: string; viemChain: Chain; rpcUrl: string },
  privateKey: Hex,
) {
  const svc = { baseUrl: at.baseUrl };
  const account = privateKeyToAccount(privateKey);
  const wallet = createWalletClient({ account, chain: at.viemChain, transport: http(at.rpcUrl) });
  const client = createPublicClient({ chain: at.viemChain, transport: http(at.rpcUrl) });
  return {
    account,
    address: account.address,
    /**
     * The checkout endpoints' path up to sending: pay-data → sign the permit (for `value`, by
     * default the amount asked) → the router call data.
     */
    async prepare(
      reference: string,
      opts: { value?: bigint } = {},
    ): Promise<{ to: Hex; data: Hex }> {
      const pd = await fetch(
        `${svc.baseUrl}/checkout/${reference}/pay-data?payer=${account.address}`,
      );
      const payData = await pd.json();
      if (pd.status !== 200) throw new Error(`pay-data ${pd.status}: ${JSON.stringify(payData)}`);
      const typed = payData.permit;
      const signature = await account.signTypedData({
        domain: { ...typed.domain, chainId: Number(typed.domain.chainId) },
        types: typed.types,
        primaryType: typed.primaryType,
        message: {
          ...typed.message,
          value: opts.value ?? BigInt(typed.message.value),
          nonce: BigInt(typed.message.nonce),
          deadline: BigInt(typed.message.deadline),
        },
      });
      const cd = await fetch(`${svc.baseUrl}/checkout/${reference}/calldata`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          payer: account.address,
          signature,
          deadline: typed.message.deadline,
        }),
      });
      const call = await cd.json();
      if (cd.status !== 200) throw new Error(`calldata ${cd.status}: ${JSON.stringify(call)}`);
      return { to: call.to, data: call.data };
    },
    /**
     * Gasless: the EIP-3009 authorization the page would sign (from pay-data), with `change`
     * applied to the message before signing, as the JSON body of `POST …/relay`.
     */
    async authorize(
      reference: string,
      change: (m: Record<string, string>) => Record<string, string> = (m) => m,
    ): Promise<{ authorization: Record<string, string>; signature: Hex }> {
      const pd = await fetch(
        `${svc.baseUrl}/checkout/${reference}/pay-data?payer=${account.address}`,
      );
      const payData = await pd.json();
      if (pd.status !== 200) throw new Error(`pay-data ${pd.status}: ${JSON.stringify(payData)}`);
      const typed = payData.authorization;
      const message = change({ ...typed.message });
      const signature = await account.signTypedData({
        domain: { ...typed.domain, chainId: Number(typed.domain.chainId) },
        types: typed.types,
        primaryType: typed.primaryType,
        message: {
          ...message,
          value: BigInt(message.value),
          validAfter: BigInt(message.validAfter),
          validBefore: BigInt(message.validBefore),
        },
      });
      return { authorization: message, signature };
    },
    /** POST the signed authorization to the relay; the answer as status and JSON. */
    async relay(
      reference: string,
      body: unknown,
    ): Promise<{ status: number; json: Record<string, string> }> {
      const res = await fetch(`${svc.baseUrl}/checkout/${reference}/relay`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      return { status: res.status, json: await res.json() };
    },
    /** prepare + send: one permit signature, one transaction (returned once mined). */
    async pay(reference: string): Promise<{ hash: Hex; data: Hex; to: Hex }> {
      const call = await this.prepare(reference);
      return { hash: await this.send(call.to, call.data), ...call };
    },
    /**
     * Sends and returns once the transaction is mined (reverted or not), as a wallet's user
     * waits before the next payment. Two sends in a row without that wait meet anvil's pool
     * race (scripts/anvil-pool-race.ts): the second may be filed behind a nonce already mined
     * and never be mined at all.
     */
    async send(to: Hex, data: Hex): Promise<Hex> {
      const hash = await wallet.sendTransaction({ to, data, gas: 300_000n });
      await this.receipt(hash);
      return hash;
    },
    async receipt(hash: Hex) {
      return await waitFor(() => client.getTransactionReceipt({ hash }).catch(() => null), {
        what: `receipt ${hash}`,
      });
    },
  };
}
