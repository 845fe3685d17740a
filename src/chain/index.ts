/**
 * The chain module's face. Everything in the product that moves money goes through here; only
 * files under src/chain/ import viem.
 */
import { encodeFunctionData, type Hex, type LocalAccount } from "viem";
import type { Sql } from "../db/client.ts";
import type { Logger } from "../log.ts";
import type { ChainConfig, ContractName, ProfileName } from "./profiles.ts";
import { explorerTxUrl } from "./profiles.ts";
import { type ChainRuntime, startRuntime } from "./runtime.ts";
import { type SenderHooks, type Signer, type TxRequest, TxSender } from "./sender.ts";
import { LogWatcher } from "./watcher.ts";
import { ensureContracts } from "./deploy.ts";
import { recoverTransactions } from "./recovery.ts";
import * as wallets from "./wallets.ts";
import { TestUSDC } from "./contracts/artifacts/index.ts";
import { streamOps } from "./streams.ts";
import { ChainUnavailableError } from "./errors.ts";
import type { ReadinessCheck } from "../readiness.ts";
import type { TxRow } from "./transactions.repo.ts";
import * as txRepo from "./transactions.repo.ts";
import {
  buildSiweMessage,
  newSiweNonce,
  type SiweCheck,
  type SiweRequest,
  verifySiwe,
} from "./siwe.ts";
import {
  authorizationSignedBy,
  authorizationTypedData,
  type AuthorizationWindow,
  inspectPayment,
  type OrderInput,
  payWithAuthorizationData,
  payWithPermitData,
  permitTypedData,
  receiptStatus,
  type SignedOrder,
  signOrder,
} from "./checkout.ts";

import { type UsdcTransfer, usdcTransfers } from "./activity.ts";
import {
  chainTime,
  createEscrowData,
  type EscrowAction,
  escrowActionData,
  type EscrowTerms,
  readEscrow,
  resolveData,
} from "./escrow.ts";
import { chainReadiness, type OperatorGas, operatorGas } from "./health.ts";

export type { ChainEvent, LogHandler } from "./watcher.ts";
export type { UsdcTransfer } from "./activity.ts";
export type { OperatorGas } from "./health.ts";
export { onPaymentSettled, type PaymentSettledEvent } from "./events.ts";
export type { Signer, TxRequest } from "./sender.ts";
export type { TxRow } from "./transactions.repo.ts";
export type { ManagedWallet, WalletPurpose } from "./wallets.ts";
export type { ProfileName } from "./profiles.ts";
export type { AuthorizationWindow, OrderInput, SignedOrder } from "./checkout.ts";
export type { EscrowAction, EscrowChainStatus, EscrowOnChain, EscrowTerms } from "./escrow.ts";

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
  readonly sender: TxSender;
  readonly watcher: LogWatcher;

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

  /** Starts or connects to every configured chain and makes sure our contracts are there. */
  static async start(opts: ChainOptions): Promise<Chain> {
    const runtimes: ChainRuntime[] = [];
    try {
      for (const profile of opts.config.profiles) {
        runtimes.push(
          await startRuntime(profile, {
            sql: opts.sql,
            log: opts.log,
            dataDir: opts.dataDir,
            stateIntervalSeconds: opts.config.localStateIntervalSeconds,
          }),
        );
      }
      const chain = new Chain(opts, runtimes);
      for (const rt of runtimes) {
        await ensureContracts(rt, chain.sender, opts.sql, opts.log.child({ component: "chain" }));
      }
      return chain;
    } catch (e) {
      await Promise.allSettled(runtimes.map((r) => r.node?.stop()));
      throw e;
    }
  }

  async stop(): Promise<void> {
    await this.watcher.stop();
    await Promise.allSettled([...this.runtimes.values()].map((r) => r.node?.stop()));
  }

  profiles(): ProfileName[] {
    return [...this.runtimes.keys()];
  }

  has(profile: ProfileName): boolean {
    return this.runtimes.has(profile);
  }

  runtime(profile: ProfileName): ChainRuntime {
    const rt = this.runtimes.get(profile);
    if (!rt) throw new ChainUnavailableError(`chain profile ${profile} is not configured`);
    return rt;
  }

  chainId(profile: ProfileName): number {
    return this.runtime(profile).chainId;
  }

  contract(profile: ProfileName, name: ContractName): `0x${string}` {
    const address = this.runtime(profile).contracts[name];
    if (!address) throw new ChainUnavailableError(`${name} is not deployed on ${profile}`);
    return address;
  }

  explorerTxUrl(profile: ProfileName, hash: string): string {
    return explorerTxUrl(this.runtime(profile).profile, hash);
  }

  // ---- wallets ----------------------------------------------------------------------------

  /**
   * A new managed wallet. It gets no gas now: the sender tops it up from the operator before it
   * first sends on a chain (and whenever it falls below the floor), so an unused wallet costs
   * nothing on any chain.
   */
  async createWallet(purpose: wallets.WalletPurpose): Promise<wallets.ManagedWallet> {
    return await wallets.createWallet(this.opts.sql, this.opts.masterKey, purpose);
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

  // ---- hosted checkout ------------------------------------------------------------------------

  readonly checkout = {
    /** The service's signature over a payment order: what makes it payable on chain. */
    order: (profile: ProfileName, input: OrderInput): Promise<SignedOrder> =>
      signOrder(this.runtime(profile), input),
    permit: (profile: ProfileName, p: { owner: `0x${string}`; value: bigint; deadline: bigint }) =>
      permitTypedData(this.runtime(profile), p),
    calldata: (signed: SignedOrder, deadline: bigint, permitSignature: `0x${string}`) =>
      payWithPermitData(signed, deadline, permitSignature),
    receipt: (profile: ProfileName, hash: `0x${string}`) =>
      receiptStatus(this.runtime(profile), hash),
    inspect: (profile: ProfileName, hash: `0x${string}`) =>
      inspectPayment(this.runtime(profile), hash),
    routerAddress: (profile: ProfileName) => this.contract(profile, "PaymentRouter"),
    /** The EIP-3009 ReceiveWithAuthorization a payer signs for a gasless payment of `order`. */
    authorization: (profile: ProfileName, order: OrderInput, w: AuthorizationWindow) =>
      authorizationTypedData(this.runtime(profile), order, w),
    /** Whether `signature` is `w.from`'s authorization for exactly this order. */
    authorizedBy: (
      profile: ProfileName,
      order: OrderInput,
      w: AuthorizationWindow,
      signature: `0x${string}`,
    ) => authorizationSignedBy(this.runtime(profile), order, w, signature),
    /**
     * Relays the payer's authorization from the operator: signs the order, records and
     * broadcasts once per `intentKey` (a second call, concurrent or later, gets the same
     * transaction). Does not wait for the receipt; the log watcher settles the payment.
     */
    relay: async (
      profile: ProfileName,
      req: {
        order: OrderInput;
        auth: AuthorizationWindow;
        signature: `0x${string}`;
        intentKey: string;
      },
    ): Promise<TxRow> => {
      const rt = this.runtime(profile);
      const done = await this.transaction(profile, req.intentKey);
      if (done) return done;
      const signed = await signOrder(rt, req.order);
      try {
        return await this.sender.submit({
          profile,
          from: "operator",
          to: this.contract(profile, "PaymentRouter"),
          data: payWithAuthorizationData(signed, req.auth, req.signature),
          intentKey: req.intentKey,
        });
      } catch (e) {
        // A concurrent relay of the same intent may have been mined while this one estimated
        // gas (which then reverts with AlreadySettled): that one is the answer.
        const winner = await this.transaction(profile, req.intentKey);
        if (winner) return winner;
        throw e;
      }
    },
  };

  // ---- escrow (EscrowVault) --------------------------------------------------------------

  readonly escrow = {
    /**
     * Funds a new escrow: the depositor's managed wallet signs an EIP-3009 authorization bound
     * to every term, the operator relays it (the depositor needs no gas). Waits for the receipt.
     */
    create: async (
      profile: ProfileName,
      req: { depositorWalletId: string; terms: EscrowTerms; intentKey: string },
    ): Promise<TxRow> => {
      const rt = this.runtime(profile);
      const done = await this.transaction(profile, req.intentKey);
      if (done) return await this.sender.wait(profile, done);
      const account = await this.walletAccount(req.depositorWalletId);
      const data = await createEscrowData(rt, account, req.terms, {
        validAfter: 0n,
        validBefore: req.terms.expiresAt,
      });
      return await this.sender.send({
        profile,
        from: "operator",
        to: this.contract(profile, "EscrowVault"),
        data,
        intentKey: req.intentKey,
      });
    },
    /** A party's transaction from its managed wallet (refund: from the operator). */
    act: async (
      profile: ProfileName,
      req: {
        action: EscrowAction;
        reference: string;
        walletId?: string;
        reason?: string;
        intentKey: string;
      },
    ): Promise<TxRow> =>
      await this.sender.send({
        profile,
        from: req.walletId ? { walletId: req.walletId } : "operator",
        to: this.contract(profile, "EscrowVault"),
        data: escrowActionData(req.action, req.reference, req.reason),
        intentKey: req.intentKey,
      }),
    /** The arbiter (the chain's operator) settles a dispute. */
    resolve: async (
      profile: ProfileName,
      req: { reference: string; released: boolean; intentKey: string },
    ): Promise<TxRow> =>
      await this.sender.send({
        profile,
        from: "operator",
        to: this.contract(profile, "EscrowVault"),
        data: resolveData(req.reference, req.released),
        intentKey: req.intentKey,
      }),
    read: (profile: ProfileName, reference: string) => readEscrow(this.runtime(profile), reference),
    /** The latest block's timestamp: the vault's clock for expiry. */
    time: (profile: ProfileName) => chainTime(this.runtime(profile)),
  };

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

  /** A readiness check for /readyz. */
  readiness(): ReadinessCheck {
    return chainReadiness([...this.runtimes.values()]);
  }

  async #account(rt: ChainRuntime, signer: Signer): Promise<LocalAccount> {
    if (signer === "operator") {
      if (!rt.operator) {
        throw new ChainUnavailableError(`${rt.profile.envPrefix}_OPERATOR_KEY is not configured`);
      }
      return rt.operator;
    }
    return await wallets.walletAccount(this.opts.sql, this.opts.masterKey, signer.walletId);
  }
}
