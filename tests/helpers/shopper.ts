/**
 * A shopper paying a checkout from their own wallet on a bridge source chain, in code: what the
 * hosted page does through the browser wallet (quote → one EIP-3009 signature relayed by the
 * service, or approve + depositForBurnWithHook from the wallet and a report of the burn).
 */
import {
  createPublicClient,
  createWalletClient,
  defineChain,
  type Hex,
  http,
  type PublicClient,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";

export interface Answer {
  status: number;
  type: string;
  json: Record<string, unknown>;
}

export type Authorization = Record<string, string>;

export interface Quote {
  mode: "signature" | "wallet";
  burnAmount: string;
  fee: string;
  maxFee: string;
  transferSpeed: string;
  sourceChain: { id: string; chainId: number; chainIdHex: string; rpcUrl: string };
  payer: { address: string; usdcBalance: string; sufficient: boolean } | null;
  authorization: {
    domain: Record<string, unknown>;
    types: Record<string, { name: string; type: string }[]>;
    primaryType: string;
    message: Authorization;
  } | null;
  wallet: { needsApproval: boolean; approve: { to: Hex; data: Hex }; burn: { to: Hex; data: Hex } };
}

async function answer(res: Response): Promise<Answer> {
  const text = await res.text();
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text);
  } catch { /* not JSON */ }
  return { status: res.status, type: res.headers.get("content-type") ?? "", json };
}

export function shopper(
  at: { baseUrl: string; sourceChain: string; rpcUrl: string; chainId: number },
  privateKey: Hex,
) {
  const account = privateKeyToAccount(privateKey);
  const chain = defineChain({
    id: at.chainId,
    name: at.sourceChain,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [at.rpcUrl] } },
  });
  const wallet = createWalletClient({ account, chain, transport: http(at.rpcUrl) });
  const client = createPublicClient({ chain, transport: http(at.rpcUrl) }) as PublicClient;
  const post = async (path: string, body: unknown) =>
    await answer(
      await fetch(`${at.baseUrl}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      }),
    );
  const mined = async (hash: Hex) => {
    const r = await client.waitForTransactionReceipt({
      hash,
      pollingInterval: 50,
      timeout: 30_000,
    });
    return r;
  };

  const self = {
    account,
    address: account.address,
    client,
    async quote(reference: string, query: Record<string, string> = {}): Promise<Answer> {
      const q = new URLSearchParams({
        sourceChain: at.sourceChain,
        payer: account.address,
        ...query,
      });
      return await answer(await fetch(`${at.baseUrl}/checkout/${reference}/bridge-quote?${q}`));
    },
    /** The relay body for `reference`: the quote's authorization (edited first), signed. */
    async authorize(
      reference: string,
      edit: (m: Authorization, q: Quote) => Authorization = (m) => m,
      signer = account,
    ) {
      const r = await self.quote(reference);
      if (r.status !== 200) throw new Error(`quote ${r.status}: ${JSON.stringify(r.json)}`);
      const q = r.json as unknown as Quote;
      const typed = q.authorization!;
      const message = edit({ ...typed.message }, q);
      const signature = await signer.signTypedData(
        {
          domain: { ...typed.domain, chainId: Number(typed.domain.chainId) },
          types: typed.types,
          primaryType: typed.primaryType,
          message: {
            ...message,
            value: BigInt(message.value),
            validAfter: BigInt(message.validAfter),
            validBefore: BigInt(message.validBefore),
          },
        } as Parameters<typeof account.signTypedData>[0],
      );
      return {
        quote: q,
        body: {
          sourceChain: at.sourceChain,
          transferSpeed: q.transferSpeed,
          maxFee: q.maxFee,
          authorization: message,
          signature,
        },
      };
    },
    relay: (reference: string, body: unknown) => post(`/checkout/${reference}/bridge-relay`, body),
    report: (reference: string, txHash: string, sourceChain = at.sourceChain) =>
      post(`/checkout/${reference}/bridge-burn`, { sourceChain, txHash }),
    /** Sends a call from the wallet and waits for it (reverts included). */
    async send(call: { to: Hex; data: Hex }, opts: { gas?: bigint } = {}) {
      const hash = await wallet.sendTransaction({ ...call, gas: opts.gas });
      const r = await mined(hash);
      return { hash, status: r.status };
    },
    /** The wallet path: approve (when needed) and the burn the quote describes. */
    async burn(q: Quote): Promise<Hex> {
      if (q.wallet.needsApproval) {
        const a = await self.send(q.wallet.approve);
        if (a.status !== "success") throw new Error("approve reverted");
      }
      const b = await self.send(q.wallet.burn);
      if (b.status !== "success") throw new Error("burn reverted");
      return b.hash;
    },
  };
  return self;
}
