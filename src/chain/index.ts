/**
 * The chain module's face. Everything in the product that moves money goes through here; only
 * files under src/chain/ import viem.
 */
import { SingleFlight } from "./singleflight.ts";
import { type ChainObservation, observeChains } from "./observe.ts";
import {
  createPublicClient,
  encodeFunctionData,
  type Hex,
  http,
  type LocalAccount,
  type PublicClient,
  TransactionReceiptNotFoundError,
} from "viem";
import type { Db, Sql } from "../db/client.ts";
import type { Logger } from "../log.ts";
import type { ChainConfig, ContractName, ProfileConfig, ProfileName } from "./profiles.ts";
import { explorerTxUrl, isSourceChain } from "./profiles.ts";
import { cctpOps } from "./cctp.ts";
import { type ChainRuntime, startRuntime } from "./runtime.ts";
import { stopLeftoverNode } from "./local-node.ts";
import { join } from "node:path";
import { type SenderHooks, type Signer, type TxRequest, TxSender } from "./sender.ts";
import { LogWatcher } from "./watcher.ts";
import { ensureContracts } from "./deploy.ts";
import { recoverTransactions } from "./recovery.ts";
import * as wallets from "./wallets.ts";
import { TestUSDC } from "./contracts/artifacts/index.ts";
import { streamOps } from "./streams.ts";
import { gatewayOps } from "./gateway.ts";
import { channelOps } from "./channels.ts";
import { payrollOps } from "./payroll.ts";
import { agentOps } from "./agents.ts";
import { jobOps } from "./commerce.ts";
import { ChainUnavailableError, MasterKeyMismatchError } from "./errors.ts";
import { DomainError } from "../errors.ts";
import type { ReadinessCheck } from "../readiness.ts";
import type { TxRow } from "./transactions.repo.ts";
import * as txRepo from "./transactions.repo.ts";
import * as contractsRepo from "./contracts.repo.ts";
import {
  buildSiweMessage,
  newSiweNonce,
  type SiweCheck,
  type SiweRequest,
  verifySiwe,
} from "./siwe.ts";
import { checkoutOps } from "./checkout.ts";
import { type UsdcTransfer, usdcTransfers } from "./activity.ts";
import { escrowOps } from "./escrow.ts";
import { chainReadiness, type OperatorGas, operatorGas } from "./health.ts";
import { type WalletChain, walletChain } from "./wallet-chains.ts";
import { stopAuthorizationThreads } from "./authorization-threads.ts";

export type { ChainEvent, LogHandler } from "./watcher.ts";
export type { UsdcTransfer } from "./activity.ts";
export type { OperatorGas } from "./health.ts";
export type { WalletChain } from "./wallet-chains.ts";
export type { ChainObservation } from "./observe.ts";
export { onPaymentSettled, type PaymentSettledEvent } from "./events.ts";
export type { Signer, TxRequest } from "./sender.ts";
export type { TxRow } from "./transactions.repo.ts";
export type { ManagedWallet, WalletPurpose } from "./wallets.ts";
export type { ProfileName, SourceChainName } from "./profiles.ts";
export { isSourceChain, SOURCE_CHAINS } from "./profiles.ts";
export type {
  AttestedMessage,
  BurnWindow,
  CheckoutBurn,
  DecodedMessage,
  FeeTier,
  ReportedBurn,
} from "./cctp.ts";
export {
  bpsFee,
  burnNonce,
  decodeMessage,
  FINALITY_FAST,
  FINALITY_FINALIZED,
  fromBytes32,
  grossForNet,
  hookText,
  parseBps,
} from "./cctp.ts";
export type { ChunkResult } from "./payroll.ts";
export { CHUNK_SIZE } from "./payroll.ts";
export type { AuthorizationWindow, OrderInput, SignedOrder } from "./checkout.ts";
export type {
  EscrowAction,
  EscrowCall,
  EscrowChainStatus,
  EscrowOnChain,
  EscrowTerms,
} from "./escrow.ts";
export type { AuthorizationTarget, GatewayBalance, TransferAuthorization } from "./gateway.ts";
export type { ChannelConfig, ChannelState, ClaimRow, Erc3009Deposit } from "./channels.ts";

export interface ChainOptions {
  config: ChainConfig;
  masterKey: string;
  sql: Sql;
  log: Logger;
  /** Where local nodes keep state; omit in tests for throwaway nodes. */
  dataDir?: string;
  hooks?: SenderHooks;
}

export class Chain {
  readonly runtimes: Map<ProfileName, ChainRuntime>;
  #unsealing = new SingleFlight<LocalAccount>();
  readonly sender: TxSender;
  readonly watcher: LogWatcher;
  /** Bridge source chains started so far (on first use), and those starting. */
  readonly #sources = new Map<ProfileName, ChainRuntime>();
  readonly #starting = new Map<ProfileName, Promise<ChainRuntime>>();
  /** Read-only clients of configured source chains not started here (balances). */
  readonly #readers = new Map<ProfileName, PublicClient>();

  private constructor(readonly opts: ChainOptions, runtimes: ChainRuntime[]) {
    this.runtimes = new Map(runtimes.map((r) => [r.profile.name, r]));
    this.sender = new TxSender({
      sql: opts.sql,
      log: opts.log.child({ component: "tx-sender" }),
      runtime: (p) => this.runtime(p),
      account: (rt, signer) => this.#account(rt, signer),
      receiptTimeoutMs: opts.config.receiptTimeoutMs,
      hooks: opts.hooks,
    });
    this.watcher = new LogWatcher({
      sql: opts.sql,
      log: opts.log.child({ component: "log-watcher" }),
      runtimes,
      pollIntervalMs: opts.config.pollIntervalMs,
    });
  }

  /**
   * Starts or connects to every configured chain (side by side: each its own node and records)
   * and makes sure our contracts are there.
   */
  static async start(opts: ChainOptions): Promise<Chain> {
    // A wrong master key is refused before anything starts (every managed wallet's key would
    // fail to open, as a 500 on the first withdrawal).
    if ((await wallets.masterKeyOpens(opts.sql, opts.masterKey)) === false) {
      throw new MasterKeyMismatchError();
    }
    const runtimes: ChainRuntime[] = [];
    try {
      const started = await Promise.allSettled(
        opts.config.profiles.map((profile) =>
          startRuntime(profile, {
            sql: opts.sql,
            log: opts.log,
            dataDir: opts.dataDir,
            stateIntervalSeconds: opts.config.localStateIntervalSeconds,
            attesterKeys: opts.config.cctp.attesterKeys,
          })
        ),
      );
      for (const s of started) if (s.status === "fulfilled") runtimes.push(s.value);
      throwFirstFailure(started);
      const chain = new Chain(opts, runtimes);
      // One chain after the other: a local chain's deploy holds a reserved connection for its
      // lock while it uses the pool, so two at once would wedge a pool of two.
      for (const rt of runtimes) {
        await ensureContracts(rt, chain.sender, opts.sql, opts.log.child({ component: "chain" }));
      }
      // A bridge source chain's node left by a killed process: this one starts such a chain
      // only when it is used, so it stops the leftover now.
      const dataDir = opts.dataDir;
      if (dataDir) {
        await Promise.all(
          opts.config.sources.filter((s) => !s.rpcUrl).map((s) =>
            stopLeftoverNode(join(dataDir, "chains", s.name), opts.log)
          ),
        );
      }
      return chain;
    } catch (e) {
      await Promise.allSettled(runtimes.map((r) => r.node?.stop()));
      throw e;
    }
  }

  async stop(): Promise<void> {
    stopAuthorizationThreads();
    await this.watcher.stop();
    await Promise.allSettled([...this.#starting.values()]);
    await Promise.allSettled(
      [...this.runtimes.values(), ...this.#sources.values()].map((r) => r.node?.stop()),
    );
  }

  /**
   * A profile's runtime, starting a bridge source chain on first use: its local node (when it
   * has no RPC URL), our contracts there, and the link between its messenger and the testnet
   * chain's. Settlement profiles are started with the service.
   */
  async ensure(profile: ProfileName): Promise<ChainRuntime> {
    const ready = this.runtimes.get(profile) ?? this.#sources.get(profile);
    if (ready) return ready;
    if (!isSourceChain(profile)) return this.runtime(profile);
    let starting = this.#starting.get(profile);
    if (!starting) {
      starting = this.#startSource(profile);
      this.#starting.set(profile, starting);
      starting.finally(() => this.#starting.delete(profile)).catch(() => {});
    }
    return await starting;
  }

  async #startSource(profile: ProfileName): Promise<ChainRuntime> {
    const config = this.opts.config.sources.find((p) => p.name === profile) as ProfileConfig;
    const rt = await startRuntime(config, {
      sql: this.opts.sql,
      log: this.opts.log,
      dataDir: this.opts.dataDir,
      stateIntervalSeconds: this.opts.config.localStateIntervalSeconds,
      attesterKeys: this.opts.config.cctp.attesterKeys,
    });
    try {
      this.#sources.set(profile, rt);
      await ensureContracts(
        rt,
        this.sender,
        this.opts.sql,
        this.opts.log.child({ component: "chain" }),
      );
      const bridged = this.has("testnet") && !!this.runtime("testnet").contracts.TokenMessengerV2 &&
        !!rt.contracts.TokenMessengerV2;
      if (bridged) await this.cctp.link(profile, "testnet");
      else {
        this.opts.log.warn("no CCTP messenger on both ends: bridging from here is unavailable", {
          chain: profile,
        });
      }
      return rt;
    } catch (e) {
      this.#sources.delete(profile);
      await rt.node?.stop();
      throw e;
    }
  }

  /** Bridge source chains running in this process. */
  startedSources(): ProfileName[] {
    return [...this.#sources.keys()];
  }

  profiles(): ProfileName[] {
    return [...this.runtimes.keys()];
  }

  /**
   * Bridge source chains whose USDC balances can be read without starting anything: those
   * running in this process, and those configured with an RPC URL and a USDC address (read
   * through a plain client; no node, no deployment). In the order of SOURCE_CHAINS.
   */
  readableSources(): ProfileName[] {
    return this.opts.config.sources
      .filter((p) => this.#sources.has(p.name) || (!!p.rpcUrl && !!p.contracts.TestUSDC))
      .map((p) => p.name);
  }

  /** A source chain's USDC balance (readableSources), never starting the chain. */
  async sourceUsdcBalance(profile: ProfileName, address: `0x${string}`): Promise<bigint> {
    if (this.#sources.has(profile)) return await this.usdcBalance(profile, address);
    const cfg = this.profileConfig(profile);
    if (!cfg.rpcUrl || !cfg.contracts.TestUSDC) {
      throw new ChainUnavailableError(`chain profile ${profile} is not running`);
    }
    let client = this.#readers.get(profile);
    if (!client) {
      client = createPublicClient({
        transport: http(cfg.rpcUrl, { retryCount: 1, timeout: 15_000 }),
      }) as PublicClient;
      this.#readers.set(profile, client);
    }
    return await client.readContract({
      address: cfg.contracts.TestUSDC,
      abi: TestUSDC.abi,
      functionName: "balanceOf",
      args: [address],
    });
  }

  /** A settlement profile, or a bridge source chain this process has started. */
  has(profile: ProfileName): boolean {
    return this.runtimes.has(profile) || this.#sources.has(profile);
  }

  runtime(profile: ProfileName): ChainRuntime {
    const rt = this.runtimes.get(profile) ?? this.#sources.get(profile);
    if (!rt) throw new ChainUnavailableError(`chain profile ${profile} is not configured`);
    return rt;
  }

  chainId(profile: ProfileName): number {
    return this.runtime(profile).chainId;
  }

  /** The settlement profile whose chain has this id (a recorded row's `chainId`). */
  profileOf(chainId: number): ProfileName {
    const found = this.profiles().find((p) => this.chainId(p) === chainId);
    if (!found) throw new DomainError("chain_not_configured");
    return found;
  }

  contract(profile: ProfileName, name: ContractName): `0x${string}` {
    const address = this.runtime(profile).contracts[name];
    if (!address) throw new ChainUnavailableError(`${name} is not deployed on ${profile}`);
    return address;
  }

  /**
   * Whether `address` is one of the contracts this service uses on the profile's chain (the USDC
   * token, a vault, the router, …): USDC sent there as a payout is stranded, so it is no payee.
   */
  isServiceContract(profile: ProfileName, address: string): boolean {
    const a = address.toLowerCase();
    return Object.values(this.runtime(profile).contracts)
      .some((c) => typeof c === "string" && c.toLowerCase() === a);
  }

  explorerTxUrl(profile: ProfileName, hash: string): string {
    return explorerTxUrl(this.profileConfig(profile), hash);
  }

  /** A profile's configuration, whether or not its chain is running in this process. */
  profileConfig(profile: ProfileName): ProfileConfig {
    const found = this.runtimes.get(profile)?.profile ??
      this.opts.config.sources.find((p) => p.name === profile);
    if (!found) throw new ChainUnavailableError(`chain profile ${profile} is not configured`);
    return found;
  }

  // ---- wallets ----------------------------------------------------------------------------

  /**
   * A new managed wallet. It gets no gas now: the sender tops it up from the operator before it
   * first sends on a chain (and whenever it falls below the floor), so an unused wallet costs
   * nothing on any chain.
   */
  /**
   * `db`: the caller's open transaction, so a caller holding a lock writes the wallet on its own
   * connection instead of waiting for a second one from the pool (DESIGN §11).
   */
  async createWallet(
    purpose: wallets.WalletPurpose,
    opts: { db?: Db } = {},
  ): Promise<wallets.ManagedWallet> {
    return await wallets.createWallet(opts.db ?? this.opts.sql, this.opts.masterKey, purpose);
  }

  findWallet(id: string) {
    return wallets.findWallet(this.opts.sql, id);
  }

  findWalletByAddress(address: string) {
    return wallets.findWalletByAddress(this.opts.sql, address);
  }

  /** An explicit native grant from the operator (tests, operator tools); one top-up by default. */
  async grantGas(
    profile: ProfileName,
    to: `0x${string}`,
    amount = this.runtime(profile).profile.gas.topupWei,
  ): Promise<TxRow> {
    return await this.sender.send({
      profile,
      from: "operator",
      to,
      value: amount,
      intentKey: `gas:${to.toLowerCase()}:${crypto.randomUUID()}`,
    });
  }

  /** Sign a message or typed data with a managed wallet (for flows that need a signature). */
  async walletAccount(walletId: string): Promise<LocalAccount> {
    return await wallets.walletAccount(this.opts.sql, this.opts.masterKey, walletId);
  }

  // ---- transactions -------------------------------------------------------------------------

  send(req: TxRequest, wait?: { timeoutMs?: number }): Promise<TxRow> {
    return this.sender.send(req, wait);
  }

  /** The transaction an intent already has on the profile's chain, if any (failed ones too). */
  async intent(profile: ProfileName, intentKey: string): Promise<TxRow | null> {
    return await txRepo.findByIntent(this.opts.sql, this.chainId(profile), intentKey);
  }

  /** Senders of our confirmed transactions to `to` under intents starting with `intentPrefix`. */
  async sendersTo(profile: ProfileName, to: `0x${string}`, intentPrefix: string) {
    return await txRepo.sendersTo(this.opts.sql, this.chainId(profile), to, intentPrefix);
  }

  async recover(profile: ProfileName, opts?: { minAgeMs?: number }) {
    return await recoverTransactions(
      this.runtime(profile),
      this.sender,
      this.opts.sql,
      this.opts.log.child({ component: "tx-recovery" }),
      opts,
    );
  }

  // ---- USDC -----------------------------------------------------------------------------------

  async usdcBalance(profile: ProfileName, address: `0x${string}`): Promise<bigint> {
    const rt = this.runtime(profile);
    return await rt.client.readContract({
      address: this.contract(profile, "TestUSDC"),
      abi: TestUSDC.abi,
      functionName: "balanceOf",
      args: [address],
    });
  }

  async nativeBalance(profile: ProfileName, address: `0x${string}`): Promise<bigint> {
    return await this.runtime(profile).client.getBalance({ address });
  }

  async transferUsdc(req: {
    profile: ProfileName;
    from: Signer;
    to: `0x${string}`;
    amount: bigint;
    intentKey: string;
  }, wait?: { timeoutMs?: number }): Promise<TxRow> {
    return await this.sender.send({
      profile: req.profile,
      from: req.from,
      to: this.contract(req.profile, "TestUSDC"),
      data: encodeFunctionData({
        abi: TestUSDC.abi,
        functionName: "transfer",
        args: [req.to, req.amount],
      }),
      intentKey: req.intentKey,
    }, wait);
  }

  /** The faucet: the operator mints test USDC. */
  async mintUsdc(req: {
    profile: ProfileName;
    to: `0x${string}`;
    amount: bigint;
    intentKey?: string;
  }): Promise<TxRow> {
    return await this.sender.send({
      profile: req.profile,
      from: "operator",
      to: this.contract(req.profile, "TestUSDC"),
      data: encodeFunctionData({
        abi: TestUSDC.abi,
        functionName: "mint",
        args: [req.to, req.amount],
      }),
      intentKey: req.intentKey ?? `mint:${req.to.toLowerCase()}:${crypto.randomUUID()}`,
    });
  }

  /** What a browser wallet needs to add the chain (its RPC through us for local nodes). */
  walletChain(profile: ProfileName, baseUrl: string): WalletChain {
    return walletChain(this.runtime(profile), baseUrl);
  }

  /** Whether this profile runs on a local node we started or share (not a configured RPC). */
  isLocal(profile: ProfileName): boolean {
    return !!this.runtime(profile).node;
  }

  /**
   * Test funds for a payer: mints test USDC and, on a local node, gives native gas too, so a
   * fresh wallet can also take the permit fallback. Refused on a real production chain.
   */
  async faucet(
    profile: ProfileName,
    to: `0x${string}`,
    amount: bigint,
  ): Promise<{ mint: TxRow; gas: TxRow | null }> {
    const rt = this.runtime(profile);
    if (!rt.profile.testnet && !rt.node) {
      throw new ChainUnavailableError(`${profile} is a real production chain: no test USDC`);
    }
    const mint = await this.mintUsdc({ profile, to, amount });
    const gas = rt.node ? await this.grantGas(profile, to) : null;
    return { mint, gas };
  }

  /** Raw contract call data, for modules that build their own transactions. */
  encode(...args: Parameters<typeof encodeFunctionData>): Hex {
    return encodeFunctionData(...args);
  }

  /** StreamVault: create, stop, withdraw and the vault's view of a stream. */
  readonly streams = streamOps(this);

  /** CCTP v2: burn, attest (local attester), receive (mint), link local messengers. */
  readonly cctp = cctpOps(this);
  /** GatewayVault (x402 balances, payment authorizations) and the `exact` scheme on USDC. */
  readonly gateway = gatewayOps(this);
  /** x402 batch-settlement channels: ids, vouchers, deposits, claims, refunds (channels.ts). */
  readonly channels = channelOps(this);
  /** BatchPayout: the payer's permit, chunks sent without waiting, results from events. */
  readonly payroll = payrollOps(this);

  /** ERC-8004 agents: smart accounts, identity registrations, reputation feedback. */
  readonly agents = agentOps(this);

  /** ERC-8183 jobs (AgenticCommerce): create, fund, submit, complete, reject, refund. */
  readonly jobs = jobOps(this);

  /** Hosted checkout: signed orders, permits, authorizations and their relay (checkout.ts). */
  readonly checkout = checkoutOps(this);

  /** EscrowVault: create, release/confirm/dispute/refund, resolve, read (escrow.ts). */
  readonly escrow = escrowOps(this);

  /**
   * The newest transaction of an intent family (`prefix`) whose signed bytes carry `hex` (e.g. a
   * 32-byte value in its call data): which batch carried an item. Failed ones too.
   */
  async intentCarrying(profile: ProfileName, prefix: string, hex: string): Promise<TxRow | null> {
    const needle = hex.toLowerCase().replace(/^0x/, "");
    return await txRepo.findCarrying(this.opts.sql, this.chainId(profile), prefix, needle);
  }

  /** The names of a chain's contracts recorded within the last `ms` (database clock). */
  async contractsRecordedWithin(chainId: number, ms: number): Promise<string[]> {
    return await contractsRepo.recordedWithin(this.opts.sql, chainId, ms);
  }

  /** The newest confirmed transaction of an intent family (`prefix` … `suffix`), if any. */
  async confirmedIntent(
    profile: ProfileName,
    prefix: string,
    suffix = "",
  ): Promise<TxRow | null> {
    return await txRepo.findConfirmedLike(this.opts.sql, this.chainId(profile), prefix, suffix);
  }

  /**
   * The confirmed transactions of a list of intents on the profile's chain, by intent key, in
   * one query: which of a batch of operations were mined (catch-ups after a stopped process).
   */
  async confirmedIntents(profile: ProfileName, intentKeys: string[]): Promise<Map<string, TxRow>> {
    return await txRepo.findConfirmedByIntents(this.opts.sql, this.chainId(profile), intentKeys);
  }

  /**
   * Records the receipts the node already has for these intents' transactions still in flight.
   * After a restart the recovery sweep reads them only after its grace period (about 45 s from
   * start): a catch-up that asks first sees an action mined before the crash as mined (an outside
   * audit saw an escrow answer RELEASED to one request and read ACTIVE for 100 s). Returns how
   * many were recorded.
   */
  async recordMinedIntents(profile: ProfileName, intentKeys: string[]): Promise<number> {
    const open = await txRepo.findOpenByIntents(this.opts.sql, this.chainId(profile), intentKeys);
    let recorded = 0;
    for (const row of open) {
      const receipt = await this.runtime(profile).client
        .getTransactionReceipt({ hash: row.txHash as `0x${string}` })
        .catch((e) => {
          if (e instanceof TransactionReceiptNotFoundError) return null;
          throw e;
        });
      if (!receipt) continue;
      await this.sender.settle(row, receipt);
      recorded++;
    }
    return recorded;
  }

  /**
   * The transactions of an intent family (`prefix`…) still in flight (signed or broadcast): what
   * a dead process left on its way to the chain (a withdrawal not yet mined counts against the
   * balance it will spend). Those the node has a receipt for are recorded first and left out: a
   * process killed after its withdrawal was mined left it recorded in flight until chain
   * recovery's sweep (a minute on), and the balance it had already taken was counted twice.
   */
  async openIntents(profile: ProfileName, prefix: string): Promise<TxRow[]> {
    const open = await txRepo.findOpenLike(this.opts.sql, this.chainId(profile), prefix);
    if (!open.length) return open;
    if (!await this.recordMinedIntents(profile, open.map((t) => t.intentKey))) return open;
    return await txRepo.findOpenLike(this.opts.sql, this.chainId(profile), prefix);
  }

  /** The live transaction recorded for an intent (not a failed one), if any. */
  async transaction(profile: ProfileName, intentKey: string): Promise<TxRow | null> {
    const row = await txRepo.findByIntent(this.opts.sql, this.chainId(profile), intentKey);
    return row && row.status !== "failed" ? row : null;
  }

  // ---- sign-in with Ethereum ----------------------------------------------------------------

  readonly siwe = {
    nonce: () => newSiweNonce(),
    message: (r: SiweRequest) => buildSiweMessage(r),
    verify: (profile: ProfileName, check: SiweCheck) =>
      verifySiwe(this.runtime(profile).client, check),
  };

  /** The settlement chain payouts are made on: production when configured, else the first. */
  payoutProfile(): ProfileName {
    return this.has("production") ? "production" : this.profiles()[0];
  }

  // ---- USDC history ------------------------------------------------------------------------

  /** USDC transfers in and out of an address, newest first, from recent blocks. */
  async usdcTransfers(
    profile: ProfileName,
    address: `0x${string}`,
    opts: { limit?: number; blocks?: bigint } = {},
  ): Promise<UsdcTransfer[]> {
    return await usdcTransfers(this.runtime(profile), address, opts);
  }

  // ---- health -----------------------------------------------------------------------------

  /**
   * The operator's native balance against the profile's low mark: it pays every gas top-up, so
   * running dry stops managed wallets from sending. Null when no operator is configured.
   */
  async operatorGas(profile: ProfileName): Promise<OperatorGas | null> {
    return await operatorGas(this.runtime(profile));
  }

  /**
   * Heads, watcher cursors, operator balances and transactions in flight (/metrics): the
   * settlement chains and the bridge source chains running in this process.
   */
  observe(): Promise<ChainObservation[]> {
    return observeChains(this.opts.sql, [...this.runtimes.values(), ...this.#sources.values()]);
  }

  /** A bridge source chain this service is configured for (started on first use). */
  isConfiguredSource(profile: string): profile is ProfileName {
    return this.opts.config.sources.some((p) => p.name === profile);
  }

  /** A readiness check for /readyz. */
  readiness(): ReadinessCheck {
    return chainReadiness([...this.runtimes.values()]);
  }

  async #account(rt: ChainRuntime, signer: Signer): Promise<LocalAccount> {
    if (signer === "relayer") signer = rt.relayers.length ? { relayer: 0 } : "operator";
    if (typeof signer === "object" && "relayer" in signer) {
      const relayer = rt.relayers[signer.relayer];
      if (!relayer) throw new Error(`${rt.profile.name} has no relayer ${signer.relayer}`);
      return relayer;
    }
    if (signer === "operator") {
      if (!rt.operator) {
        throw new ChainUnavailableError(`${rt.profile.envPrefix}_OPERATOR_KEY is not configured`);
      }
      return rt.operator;
    }
    const id = signer.walletId;
    // Concurrent sends from one wallet unseal its key once (nothing is kept afterwards).
    return await this.#unsealing.run(
      id,
      () => wallets.walletAccount(this.opts.sql, this.opts.masterKey, id),
    );
  }
}

/**
 * Throws the first failure (in order) of promises that have all settled: unlike Promise.all,
 * nothing is still running when it throws, so the caller can stop what the others started.
 */
function throwFirstFailure(settled: PromiseSettledResult<unknown>[]): void {
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === "rejected");
  if (failed) throw failed.reason;
}
