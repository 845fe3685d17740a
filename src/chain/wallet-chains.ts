/**
 * What a browser wallet needs to add a chain (EIP-3085 `wallet_addEthereumChain`). A chain on a
 * local node (or a configured node on this machine) is reached through our own `/rpc/<chain>`
 * proxy: its port changes at each start and a browser cannot reach a loopback node of another
 * host. A configured real network gets its public RPC and explorer (viem's chain definitions),
 * never the configured RPC URL, which may carry a provider's key.
 */
import type { Chain as ViemChain } from "viem";
import { arbitrumSepolia, baseSepolia, optimismSepolia, polygonAmoy, sepolia } from "viem/chains";
import type { ProfileName } from "./profiles.ts";
import type { ChainRuntime } from "./runtime.ts";

const PUBLIC: Partial<Record<ProfileName, ViemChain>> = {
  Arbitrum_Sepolia: arbitrumSepolia,
  Base_Sepolia: baseSepolia,
  Optimism_Sepolia: optimismSepolia,
  Ethereum_Sepolia: sepolia,
  Polygon_Amoy_Testnet: polygonAmoy,
};

export interface WalletChain {
  chainId: number;
  chainIdHex: string;
  name: string;
  rpcUrl: string;
  explorerUrl: string;
  nativeCurrency: { name: string; symbol: string; decimals: number };
}

function loopback(url: string): boolean {
  try {
    const host = new URL(url).hostname;
    return host === "localhost" || host === "[::1]" || /^127\./.test(host);
  } catch {
    return true;
  }
}

export function walletChain(rt: ChainRuntime, baseUrl: string): WalletChain {
  const pub = PUBLIC[rt.profile.name];
  const real = !!pub && !rt.node && !!rt.profile.rpcUrl && !loopback(rt.profile.rpcUrl);
  return {
    chainId: rt.chainId,
    chainIdHex: `0x${rt.chainId.toString(16)}`,
    name: rt.profile.label,
    rpcUrl: real ? pub.rpcUrls.default.http[0] : `${baseUrl}/rpc/${rt.profile.name}`,
    explorerUrl: real && pub.blockExplorers
      ? pub.blockExplorers.default.url
      : rt.profile.explorerUrl,
    nativeCurrency: real
      ? { ...pub.nativeCurrency }
      : { name: "Ether", symbol: "ETH", decimals: 18 },
  };
}
