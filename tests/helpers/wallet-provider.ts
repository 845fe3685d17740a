/**
 * An injected EIP-1193 test wallet for browser tests, backed by a viem account against local
 * nodes. The page gets `window.ethereum` (and an EIP-6963 announcement); every request runs
 * here, in the test process, through `page.exposeFunction`.
 *
 *   const wallet = await installWallet(page, {
 *     privateKey: ANVIL_KEYS[2],
 *     chains: { "0x13b2": productionRpcUrl },
 *     initialChainId: "0x13b2",          // a chain not in `chains` simulates a wrong network
 *     reject: ["personal_sign"],         // the user rejects this method (code 4001), every time
 *   });
 *   wallet.rejectNext("eth_sendTransaction"); // ... or only the next time
 *   await wallet.switchChain("0x4cef52");     // the user switches in the wallet: chainChanged
 *
 * Install before the first navigation (the script runs in every new document).
 *
 * Methods: eth_requestAccounts, eth_accounts, eth_chainId, net_version,
 * wallet_switchEthereumChain (4902 for a chain the wallet does not know), wallet_addEthereumChain
 * (adds it; switching then works; like EIP-3085 allows, it does not switch by itself),
 * personal_sign, eth_signTypedData_v4 (refused when domain.chainId is not the current chain, as
 * MetaMask does), eth_sendTransaction (signed by the account and sent to the current chain's RPC,
 * nonce, gas and fees filled by viem). Other eth_* reads go to the current chain's RPC; other
 * signing or wallet_* methods are 4200. Errors are `{ code, message }` as EIP-1193 says:
 * 4001 rejected, 4100 unauthorized account, 4200 unsupported, 4900/4901 disconnected, 4902 unknown
 * chain, -32602 invalid params, the node's own codes otherwise.
 */
import type { Page } from "playwright-core";
import { createWalletClient, defineChain, type Hex, http, isHex } from "viem";
import { privateKeyToAccount } from "viem/accounts";

export interface WalletOptions {
  privateKey: Hex;
  /** chain id (hex) → RPC URL. */
  chains: Record<string, string>;
  /** The chain the wallet starts on; one missing from `chains` is a wrong network. */
  initialChainId: string;
  /** Methods the user rejects (4001), every time. */
  reject?: string[];
  /** Already connected to the site: eth_accounts answers without eth_requestAccounts. */
  connected?: boolean;
  /** The EIP-6963 name. */
  name?: string;
}

export interface WalletRequest {
  method: string;
  params: unknown;
  /** When the page asked (Date.now() in the test process). */
  at: number;
}

export interface TestWallet {
  address: Hex;
  /** Every request the page made, in order. */
  requests: WalletRequest[];
  chainId(): string;
  /** The user rejects `method` the next `times` times (default once). */
  rejectNext(method: string, times?: number): void;
  /** The user rejects `method` every time (or stops: `reject(method, false)`). */
  reject(method: string, on?: boolean): void;
  /** The user switches network in the wallet: chainChanged reaches the page. */
  switchChain(chainIdHex: string): Promise<void>;
  /** The user disconnects the site: accountsChanged([]) reaches the page. */
  disconnect(): Promise<void>;
}

interface ProviderError {
  code: number;
  message: string;
  data?: unknown;
}

interface Answer {
  result?: unknown;
  error?: ProviderError;
  events: [string, unknown][];
  state: { chainId: string; accounts: string[] };
}

const EXPOSED = "__testWalletRequest";
const EMIT = "__testWalletEmit";

export function normaliseChainId(id: string | number | bigint): string {
  return `0x${BigInt(id).toString(16)}`;
}

const fail = (code: number, message: string, data?: unknown): ProviderError => ({
  code,
  message,
  ...(data === undefined ? {} : { data }),
});

export async function installWallet(page: Page, opts: WalletOptions): Promise<TestWallet> {
  const account = privateKeyToAccount(opts.privateKey);
  const address = account.address;
  const chains = new Map(
    Object.entries(opts.chains).map(([id, url]) => [normaliseChainId(id), url]),
  );
  let chainId = normaliseChainId(opts.initialChainId);
  let connected = opts.connected ?? false;
  const always = new Set(opts.reject ?? []);
  const once = new Map<string, number>();
  const requests: WalletRequest[] = [];

  const state = () => ({ chainId, accounts: connected ? [address] : [] });
  const rejected = (method: string) => {
    if (always.has(method)) return true;
    const n = once.get(method) ?? 0;
    if (n > 0) {
      once.set(method, n - 1);
      return true;
    }
    return false;
  };
  const sameAccount = (a: unknown) =>
    typeof a === "string" && a.toLowerCase() === address.toLowerCase();

  async function rpc(method: string, params: unknown): Promise<unknown> {
    const url = chains.get(chainId);
    if (!url) throw fail(4901, `The wallet is not connected to chain ${chainId}.`);
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params: params ?? [] }),
    });
    const body = await res.json() as { result?: unknown; error?: ProviderError };
    if (body.error) throw fail(body.error.code, body.error.message, body.error.data);
    return body.result;
  }

  async function send(tx: Record<string, string | undefined>): Promise<Hex> {
    const url = chains.get(chainId);
    if (!url) throw fail(4901, `The wallet is not connected to chain ${chainId}.`);
    const chain = defineChain({
      id: Number(BigInt(chainId)),
      name: `chain ${chainId}`,
      nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
      rpcUrls: { default: { http: [url] } },
    });
    const client = createWalletClient({ account, chain, transport: http(url) });
    const big = (v: string | undefined) => (v === undefined ? undefined : BigInt(v));
    try {
      return await client.sendTransaction(
        {
          to: tx.to as Hex | undefined,
          data: (tx.data ?? tx.input) as Hex | undefined,
          value: big(tx.value),
          gas: big(tx.gas ?? tx.gasLimit),
          nonce: tx.nonce === undefined ? undefined : Number(BigInt(tx.nonce)),
          ...(tx.maxFeePerGas
            ? {
              maxFeePerGas: big(tx.maxFeePerGas),
              maxPriorityFeePerGas: big(tx.maxPriorityFeePerGas),
            }
            : tx.gasPrice
            ? { gasPrice: big(tx.gasPrice) }
            : {}),
        } as Parameters<typeof client.sendTransaction>[0],
      );
    } catch (e) {
      const err = e as { shortMessage?: string; message?: string; details?: string };
      throw fail(-32603, err.shortMessage ?? err.message ?? "Transaction failed", err.details);
    }
  }

  async function handle(method: string, params: unknown, events: [string, unknown][]) {
    const p = Array.isArray(params) ? params : [];
    switch (method) {
      case "eth_requestAccounts":
        if (!connected) {
          connected = true;
          events.push(["accountsChanged", [address]]);
        }
        return [address];
      case "eth_accounts":
        return connected ? [address] : [];
      case "eth_chainId":
        return chainId;
      case "net_version":
        return BigInt(chainId).toString();
      case "wallet_switchEthereumChain": {
        const raw = (p[0] as { chainId?: string } | undefined)?.chainId;
        if (!raw) throw fail(-32602, "Expected a chainId.");
        const target = normaliseChainId(raw);
        if (!chains.has(target)) {
          throw fail(
            4902,
            `Unrecognized chain ID "${raw}". Try adding the chain using wallet_addEthereumChain first.`,
          );
        }
        if (target !== chainId) {
          chainId = target;
          events.push(["chainChanged", chainId]);
        }
        return null;
      }
      case "wallet_addEthereumChain": {
        const spec = p[0] as { chainId?: string; rpcUrls?: string[] } | undefined;
        if (!spec?.chainId || !spec.rpcUrls?.[0]) {
          throw fail(-32602, "Expected chainId and rpcUrls.");
        }
        const id = normaliseChainId(spec.chainId);
        if (!chains.has(id)) chains.set(id, spec.rpcUrls[0]);
        return null;
      }
      case "personal_sign": {
        const [data, from] = p as [string, string];
        if (!connected || !sameAccount(from)) throw fail(4100, "Unauthorized account.");
        if (typeof data !== "string") throw fail(-32602, "Expected a message.");
        return await account.signMessage({ message: isHex(data) ? { raw: data } : data });
      }
      case "eth_signTypedData_v4": {
        const [from, json] = p as [string, unknown];
        if (!connected || !sameAccount(from)) throw fail(4100, "Unauthorized account.");
        const typed = (typeof json === "string" ? JSON.parse(json) : json) as {
          domain: Record<string, unknown>;
          types: Record<string, { name: string; type: string }[]>;
          primaryType: string;
          message: Record<string, unknown>;
        };
        const domainChain = typed.domain?.chainId;
        if (domainChain !== undefined && normaliseChainId(domainChain as string) !== chainId) {
          throw fail(
            -32602,
            `Provided chainId "${domainChain}" must match the active chainId "${BigInt(chainId)}"`,
          );
        }
        const { EIP712Domain: _, ...types } = typed.types;
        return await account.signTypedData(
          {
            domain: typed.domain,
            types,
            primaryType: typed.primaryType,
            message: typed.message,
          } as Parameters<typeof account.signTypedData>[0],
        );
      }
      case "eth_sendTransaction": {
        const tx = (p[0] ?? {}) as Record<string, string | undefined>;
        if (!connected || (tx.from && !sameAccount(tx.from))) {
          throw fail(4100, "Unauthorized account.");
        }
        return await send(tx);
      }
      default:
        if (/^(eth_sign|personal_|wallet_)/.test(method) || !/^(eth|net|web3)_/.test(method)) {
          throw fail(4200, `The wallet does not support ${method}.`);
        }
        return await rpc(method, params);
    }
  }

  await page.exposeFunction(EXPOSED, async (method: string, params: unknown): Promise<Answer> => {
    const events: [string, unknown][] = [];
    if (method === "__state") return { result: null, events, state: state() };
    requests.push({ method, params, at: Date.now() });
    if (rejected(method)) {
      return { error: fail(4001, "User rejected the request."), events, state: state() };
    }
    try {
      const result = await handle(method, params, events);
      return { result, events, state: state() };
    } catch (e) {
      const error = typeof e === "object" && e && "code" in e
        ? e as ProviderError
        : fail(-32603, e instanceof Error ? e.message : String(e));
      return { error, events, state: state() };
    }
  });

  await page.addInitScript(injectProvider, {
    exposed: EXPOSED,
    emitName: EMIT,
    chainId,
    name: opts.name ?? "Test Wallet",
  });

  const emit = async (event: string, data: unknown) => {
    await page.evaluate(
      ([fn, ev, d]) => {
        const f = (globalThis as unknown as Record<string, (e: string, d: unknown) => void>)[fn];
        f?.(ev, d);
      },
      [EMIT, event, data] as const,
    );
  };

  return {
    address,
    requests,
    chainId: () => chainId,
    rejectNext(method, times = 1) {
      once.set(method, (once.get(method) ?? 0) + times);
    },
    reject(method, on = true) {
      if (on) always.add(method);
      else always.delete(method);
    },
    async switchChain(id) {
      const target = normaliseChainId(id);
      if (!chains.has(target)) throw new Error(`the test wallet does not know chain ${id}`);
      if (target === chainId) return;
      chainId = target;
      await emit("chainChanged", chainId);
    },
    async disconnect() {
      connected = false;
      await emit("accountsChanged", []);
    },
  };
}

/** Runs in the page (serialised by playwright): defines window.ethereum over the exposed call. */
function injectProvider(
  cfg: { exposed: string; emitName: string; chainId: string; name: string },
) {
  const g = globalThis as unknown as Record<string, unknown> & Window;
  const call = g[cfg.exposed] as (m: string, p: unknown) => Promise<{
    result?: unknown;
    error?: { code: number; message: string; data?: unknown };
    events: [string, unknown][];
    state: { chainId: string; accounts: string[] };
  }>;
  const listeners = new Map<string, Set<(data: unknown) => void>>();
  const emit = (event: string, data: unknown) => {
    for (const fn of [...(listeners.get(event) ?? [])]) {
      try {
        fn(data);
      } catch (e) {
        setTimeout(() => {
          throw e;
        });
      }
    }
  };
  const providerError = (code: number, message: string, data?: unknown) =>
    Object.assign(new Error(message), { code, data });

  const provider = {
    isMetaMask: false,
    isTestWallet: true,
    chainId: cfg.chainId as string | null,
    selectedAddress: null as string | null,
    isConnected: () => true,
    request(args: { method?: unknown; params?: unknown }) {
      if (!args || typeof args.method !== "string") {
        return Promise.reject(providerError(-32600, "Invalid request: method is required."));
      }
      return call(args.method, args.params ?? []).then((r) => {
        provider.chainId = r.state.chainId;
        provider.selectedAddress = r.state.accounts[0] ?? null;
        for (const [event, data] of r.events) emit(event, data);
        if (r.error) throw providerError(r.error.code, r.error.message, r.error.data);
        return r.result;
      });
    },
    on(event: string, fn: (data: unknown) => void) {
      if (!listeners.has(event)) listeners.set(event, new Set());
      listeners.get(event)!.add(fn);
      return provider;
    },
    removeListener(event: string, fn: (data: unknown) => void) {
      listeners.get(event)?.delete(fn);
      return provider;
    },
    off(event: string, fn: (data: unknown) => void) {
      return provider.removeListener(event, fn);
    },
  };
  Object.defineProperty(g, cfg.emitName, {
    value: (event: string, data: unknown) => {
      if (event === "chainChanged") provider.chainId = data as string;
      if (event === "accountsChanged") {
        provider.selectedAddress = (data as string[])[0] ?? null;
      }
      emit(event, data);
    },
  });
  Object.defineProperty(g, "ethereum", { value: provider, configurable: true });
  // The wallet may have changed chain on an earlier page: catch up.
  call("__state", []).then((r) => {
    provider.chainId = r.state.chainId;
    provider.selectedAddress = r.state.accounts[0] ?? null;
  }).catch(() => {});

  // EIP-6963: announce on load and whenever a page asks.
  const info = Object.freeze({
    uuid: crypto.randomUUID(),
    name: cfg.name,
    icon: "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 1 1'/%3E",
    rdns: "org.example.testwallet",
  });
  const announce = () =>
    g.dispatchEvent(
      new CustomEvent("eip6963:announceProvider", { detail: Object.freeze({ info, provider }) }),
    );
  g.addEventListener("eip6963:requestProvider", announce);
  announce();
}
