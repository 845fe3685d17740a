/**
 * The official ERC-8004 registries (erc-8004/erc-8004-contracts 2.0.0, compiled; test fixtures in
 * `../shared/fixtures/erc-8004/` beside the project) deployed as their repository does: a
 * HardhatMinimalUUPS placeholder behind an ERC1967Proxy, then `upgradeToAndCall` to the real
 * implementation with its `initialize`. Loaded from there, never copied into src/.
 */
import {
  type Abi,
  type Address,
  BaseError,
  ContractFunctionRevertedError,
  encodeErrorResult,
  encodeFunctionData,
  getAddress,
  type Hex,
  type PublicClient,
  type TransactionReceipt,
  type WalletClient,
  zeroAddress,
} from "viem";
import { waitFor } from "./poll.ts";

/** From tests/helpers/: the repository's parent holds `shared/` (CI: /work/shared beside it). */
export const FIXTURE_DIR = new URL("../../../shared/fixtures/erc-8004/", import.meta.url);

export interface Compiled {
  abi: Abi;
  bytecode: Hex;
}

function load(name: string): Compiled {
  const text = Deno.readTextFileSync(new URL(`${name}.json`, FIXTURE_DIR));
  const { abi, bytecode } = JSON.parse(text);
  return { abi, bytecode: (bytecode.startsWith("0x") ? bytecode : `0x${bytecode}`) as Hex };
}

export const OFFICIAL = {
  IdentityRegistry: load("IdentityRegistryUpgradeable"),
  ReputationRegistry: load("ReputationRegistryUpgradeable"),
  MinimalUUPS: load("HardhatMinimalUUPS"),
  Proxy: load("ERC1967Proxy"),
};

/** A transaction's receipt, polled with a bound; throws when it reverted. */
export async function mined(pub: PublicClient, hash: Hex | Promise<Hex>) {
  const h = await hash;
  const receipt: TransactionReceipt = await waitFor(
    () => pub.getTransactionReceipt({ hash: h }),
    { timeoutMs: 20_000, what: `receipt of ${h}` },
  );
  if (receipt.status !== "success") throw new Error(`transaction ${h} reverted`);
  return receipt;
}

async function deploy(
  pub: PublicClient,
  w: WalletClient,
  c: Compiled,
  args: unknown[] = [],
): Promise<Address> {
  const hash = await w.deployContract({
    abi: c.abi,
    bytecode: c.bytecode,
    args,
    account: w.account!,
    chain: w.chain,
  });
  return getAddress((await mined(pub, hash)).contractAddress!);
}

/** placeholder → proxy(placeholder, initialize(arg)) → upgradeToAndCall(impl, init). */
async function proxied(
  pub: PublicClient,
  w: WalletClient,
  impl: Compiled,
  identity: Address | null,
): Promise<Address> {
  const placeholder = await deploy(pub, w, OFFICIAL.MinimalUUPS);
  const proxy = await deploy(pub, w, OFFICIAL.Proxy, [
    placeholder,
    encodeFunctionData({
      abi: OFFICIAL.MinimalUUPS.abi,
      functionName: "initialize",
      args: [identity ?? zeroAddress],
    }),
  ]);
  const real = await deploy(pub, w, impl);
  const init = identity
    ? encodeFunctionData({ abi: impl.abi, functionName: "initialize", args: [identity] })
    : encodeFunctionData({ abi: impl.abi, functionName: "initialize", args: [] });
  await mined(
    pub,
    w.writeContract({
      address: proxy,
      abi: OFFICIAL.MinimalUUPS.abi,
      functionName: "upgradeToAndCall",
      args: [real, init],
      account: w.account!,
      chain: w.chain,
    }),
  );
  return proxy;
}

/** The official identity registry behind its proxy. */
export function deployOfficialIdentity(pub: PublicClient, w: WalletClient): Promise<Address> {
  return proxied(pub, w, OFFICIAL.IdentityRegistry, null);
}

/** The official reputation registry behind its proxy, bound to `identity` (any ERC-8004 one). */
export function deployOfficialReputation(
  pub: PublicClient,
  w: WalletClient,
  identity: Address,
): Promise<Address> {
  return proxied(pub, w, OFFICIAL.ReputationRegistry, identity);
}

/** The revert data of `require(false, text)`. */
export const reason = (text: string): Hex =>
  encodeErrorResult({
    abi: [{ type: "error", name: "Error", inputs: [{ name: "m", type: "string" }] }],
    errorName: "Error",
    args: [text],
  });

/** What a call did: its logs (emitter named, topics and data as sent) or its raw revert data. */
export type Outcome =
  | { ok: true; value?: unknown; logs?: { emitter: string; topics: readonly Hex[]; data: Hex }[] }
  | { ok: false; revert: Hex | string };

function revertOf(e: unknown): Hex | string {
  if (!(e instanceof BaseError)) throw e;
  const r = e.walk((x) => x instanceof ContractFunctionRevertedError);
  if (!(r instanceof ContractFunctionRevertedError)) throw e;
  return r.raw ?? r.reason ?? "(no data)";
}

/**
 * Runs calls against registries through the official ABI and reports outcomes in a comparable
 * form: addresses of the registries under test are replaced by their role (`identity`,
 * `reputation`), so the official deployment and ours can be compared value for value.
 */
export function differ(pub: PublicClient, roles: Record<string, string>) {
  const role = (a: string) => roles[a.toLowerCase()] ?? getAddress(a);
  const normal = (v: unknown): unknown => {
    if (typeof v === "bigint") return `${v}n`;
    if (typeof v === "string" && /^0x[0-9a-fA-F]{40}$/.test(v)) return role(v);
    if (typeof v === "string" && /^0x[0-9a-fA-F]*$/.test(v)) {
      let s = v.toLowerCase();
      for (const [a, r] of Object.entries(roles)) s = s.replaceAll(a.slice(2), `<${r}>`);
      return s;
    }
    if (Array.isArray(v)) return v.map(normal);
    if (v && typeof v === "object") {
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, normal(x)]));
    }
    return v;
  };
  const gas: Record<string, bigint[]> = {};
  return {
    gas,
    normal,
    async read(address: Address, abi: Abi, functionName: string, args: unknown[] = []) {
      try {
        const value = await pub.readContract({ address, abi, functionName, args });
        return normal({ ok: true, value }) as Outcome;
      } catch (e) {
        return normal({ ok: false, revert: revertOf(e) }) as Outcome;
      }
    },
    async write(
      w: WalletClient,
      address: Address,
      abi: Abi,
      functionName: string,
      args: unknown[] = [],
    ): Promise<Outcome> {
      const account = w.account!;
      try {
        await pub.simulateContract({ address, abi, functionName, args, account });
      } catch (e) {
        return normal({ ok: false, revert: revertOf(e) }) as Outcome;
      }
      const receipt = await mined(
        pub,
        w.writeContract({ address, abi, functionName, args, account, chain: w.chain }),
      );
      (gas[`${functionName}@${address.toLowerCase()}`] ??= []).push(receipt.gasUsed);
      const logs = receipt.logs.map((l) => ({
        emitter: l.address,
        topics: l.topics,
        data: l.data,
      }));
      return normal({ ok: true, logs }) as Outcome;
    },
  };
}
