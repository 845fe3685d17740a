/**
 * The transaction sender: the single path by which the service signs and sends transactions.
 *
 * 1. An intent key names the operation; a second call with it finds the first transaction
 *    instead of signing another ("no money moves twice").
 * 2. Nonces are serialised per sender address across processes by a PostgreSQL advisory lock
 *    (and within a process by a mutex, so waiting holds at most one connection per address).
 * 3. Under the lock: nonce = max(node's pending count, highest nonce we have in flight + 1);
 *    sign; write the signed transaction to chain_transactions; broadcast; release.
 *    A node that refuses the transaction outright frees the nonce (row → failed). A broadcast
 *    that fails transiently keeps the row `signed`: the same bytes are re-broadcast by the
 *    waiter or by the recovery job, so the nonce is never left as a gap.
 * 4. The receipt is awaited outside the lock, polling with a bound (viem's waitFor… can hang on
 *    an automining anvil). Timeout → 408, revert → 502.
 * 5. Before a managed wallet signs anything, its native balance is checked against the profile's
 *    gas floor; below it the operator sends a top-up first, itself an intent keyed by the wallet
 *    and the nonce the wallet is about to use (`gas:<address>:<nonce>`), so one need is met once
 *    however many requests, retries or processes meet it.
 */
import {
  BaseError,
  decodeErrorResult,
  type Hex,
  HttpRequestError,
  type LocalAccount,
  TimeoutError,
  TransactionReceiptNotFoundError,
} from "viem";
import { type Sql, withoutBackstops } from "../db/client.ts";
import type { Logger } from "../log.ts";
import type { ChainRuntime } from "./runtime.ts";
import * as repo from "./transactions.repo.ts";
import { ChainRejectedError, ChainRevertError, ChainTimeoutError } from "./errors.ts";
import type { ProfileName } from "./profiles.ts";
import * as ARTIFACTS from "./contracts/artifacts/index.ts";
import { type LaneEntry, NonceLane } from "./nonce-lane.ts";
import { relayerIndex } from "./relayers.ts";
import { ReceiptWatcher } from "./receipts.ts";
import { signEip1559 } from "./tx-signing.ts";

/**
 * Who signs: the profile's operator key, a managed wallet by id, or `"relayer"`: one of the
 * profile's relayer hot wallets (chosen per intent; the operator when the pool is empty), for
 * work anyone may submit (gasless relays). `{ relayer: i }` names one of the pool.
 */
export type Signer = "operator" | "relayer" | { walletId: string } | { relayer: number };

export interface TxRequest {
  profile: ProfileName;
  from: Signer;
  /** null deploys a contract (data = bytecode + constructor arguments). */
  to: `0x${string}` | null;
  data?: Hex;
  value?: bigint;
  /** Unique per chain: the same key never produces a second transaction. */
  intentKey: string;
  gas?: bigint;
}

export interface SenderHooks {
  /** Called after the signed transaction is recorded, before broadcast. */
  afterRecord?: (row: repo.TxRow) => void | Promise<void>;
  /** Called after a successful broadcast, before its bookkeeping. */
  afterBroadcast?: (row: repo.TxRow) => void | Promise<void>;
  /** Called once a waiter has recorded a successful receipt, before it returns (crash tests). */
  afterReceipt?: (row: repo.TxRow) => void | Promise<void>;
}

export interface SenderOptions {
  sql: Sql;
  log: Logger;
  runtime: (profile: ProfileName) => ChainRuntime;
  account: (runtime: ChainRuntime, signer: Signer) => Promise<LocalAccount>;
  receiptTimeoutMs: number;
  receiptPollMs?: number;
  hooks?: SenderHooks;
}

export type BroadcastOutcome = "accepted" | "transient" | { rejected: string };

const LOCK_NAMESPACE = 5042;

interface MinedReceipt {
  row: repo.TxRow;
  receipt: {
    status: "success" | "reverted";
    blockNumber: bigint;
    gasUsed: bigint;
    contractAddress?: string | null;
  };
  done: PromiseWithResolvers<repo.TxRow>;
}

/** The receipt watcher's pace on a local node of ours (an `eth_blockNumber` per poll). */
const LOCAL_RECEIPT_POLL_MS = 10;
/** How long a local node's `eth_sendRawTransactionSync` is waited for before a plain send. */
const SYNC_WAIT_MS = 1_000;
/** When that request is given up (anvil's own bound is 30 s). */
const SYNC_ABORT_MS = 35_000;

/** Fee estimates are reused for a second: they move per block, not per transaction. */
const FEE_TTL_MS = 1000;

export class TxSender {
  #lanes = new Map<string, NonceLane>();
  #writingMined = false;
  /** One receipt watcher per chain: every waiter of the process shares its polling. */
  #watchers = new Map<number, ReceiptWatcher>();
  /** When this process recorded its transactions (by hash), for the watcher's history check. */
  #sentAt = new Map<string, number>();
  #mined: MinedReceipt[] = [];
  #feeCache = new Map<
    number,
    { at: number; fees: Promise<{ maxFeePerGas: bigint; maxPriorityFeePerGas: bigint }> }
  >();
  constructor(readonly opts: SenderOptions) {}

  /** Submit and wait for the receipt. Throws ChainTimeoutError (408) / ChainRevertError (502). */
  async send(req: TxRequest, wait: { timeoutMs?: number } = {}): Promise<repo.TxRow> {
    const row = await this.submit(req);
    return await this.wait(req.profile, row, wait.timeoutMs);
  }

  /** Sign, record and broadcast; or return the transaction this intent already has. */
  async submit(req: TxRequest): Promise<repo.TxRow> {
    const rt = this.opts.runtime(req.profile);
    const signer = this.#signerFor(rt, req);
    // The signer's account is looked up beside the intent (one round trip, not two); it is
    // dropped unused when the intent already has its transaction.
    const accountLookup = this.opts.account(rt, signer);
    // A managed wallet's gas balance is read beside the intent too (this caller's own read).
    const gasRead = signer === "operator"
      ? null
      : accountLookup.then((a) => this.#gasBalance(rt, a.address));
    // Either may end unawaited (an intent already sent, a failed lookup): never an unhandled
    // rejection. Awaiting them below still throws their errors.
    accountLookup.catch(() => {});
    gasRead?.catch(() => {});
    const existing = await repo.findByIntent(this.opts.sql, rt.chainId, req.intentKey);
    if (existing && existing.status !== "failed") return existing;
    const account = await accountLookup;
    if (gasRead) await this.ensureGas(rt, account.address, await gasRead);
    const from = account.address.toLowerCase();
    const value = req.value ?? 0n;
    const data = req.data ?? "0x";
    const gas = req.gas ?? await this.#estimateGas(rt, account.address, req.to, data, value);
    const fees = await this.#fees(rt);
    // A transaction whose gas may cost more than the floor (a settlement batch of 500 payments,
    // say) needs more than the floor's top-up: the wallet is topped up to what its gas may cost,
    // else the node refuses it for funds. Gas only: the value it sends is the wallet's own, never
    // the operator's.
    const cost = gas * fees.maxFeePerGas;
    if (gasRead && cost > rt.profile.gas.floorWei) {
      await this.ensureGas(rt, account.address, undefined, cost);
    }
    const key = `${rt.chainId}:${from}`;
    let lane = this.#lanes.get(key);
    if (!lane) {
      lane = new NonceLane((batch) => this.#flush(rt, from, batch), () => this.#lanes.delete(key));
      this.#lanes.set(key, lane);
    }
    return await lane.push({ req, account, value, data, gas, fees });
  }

  /** A relay goes to one of the profile's relayer hot wallets, chosen by its intent key. */
  #signerFor(rt: ChainRuntime, req: TxRequest): Signer {
    if (req.from !== "relayer") return req.from;
    const n = rt.relayers?.length ?? 0;
    return n === 0 ? "operator" : { relayer: relayerIndex(req.intentKey, n) };
  }

  /**
   * One batch of one address's queue, under the address's advisory lock: drop intents that
   * already have a transaction, take the next nonces, sign, record every row in one statement,
   * then broadcast in nonce order. A nonce is broadcast only after every lower one was accepted,
   * so a refusal never leaves a gap: the refused intent fails and the rest of the batch, never
   * sent, is withdrawn and signed again on the next pass with the nonces moved down.
   */
  async #flush(rt: ChainRuntime, from: string, batch: LaneEntry[]): Promise<LaneEntry[]> {
    return await this.#withAdvisoryLock(rt.chainId, from, async (db) => {
      // The intents' rows and the address's nonces, read at once (one round trip on the
      // lock's connection, the node asked meanwhile): the nonces go unused when every intent
      // already has its transaction.
      const [live, count, open] = await Promise.all([
        repo.findLiveByIntents(db, rt.chainId, [
          ...new Set(batch.map((e) => e.item.req.intentKey)),
        ]),
        rt.client.getTransactionCount({ address: from as `0x${string}`, blockTag: "pending" }),
        repo.maxOpenNonce(db, rt.chainId, from),
      ]);
      const todo: LaneEntry[] = [];
      const leaders = new Map<string, LaneEntry>();
      for (const e of batch) {
        const key = e.item.req.intentKey;
        const row = live.get(key);
        const leader = leaders.get(key);
        if (row) e.resolve(row);
        else if (leader) leader.followers.push(e);
        else {
          leaders.set(key, e);
          todo.push(e);
        }
      }
      if (!todo.length) return [];

      const pending = BigInt(count);
      const first = open !== null && open + 1n > pending ? open + 1n : pending;
      const signed: repo.NewTx[] = [];
      for (const [i, e] of todo.entries()) {
        const { req, account, value, data, gas, fees } = e.item;
        const nonce = first + BigInt(i);
        const { raw, txHash } = await signEip1559(account, {
          chainId: rt.chainId,
          nonce,
          to: req.to,
          data,
          value,
          gas,
          maxFeePerGas: fees.maxFeePerGas,
          maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
        });
        signed.push({
          chainId: rt.chainId,
          intentKey: req.intentKey,
          fromAddress: from,
          toAddress: req.to?.toLowerCase() ?? null,
          nonce,
          value,
          data,
          gas,
          maxFeePerGas: fees.maxFeePerGas,
          maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
          rawTx: raw,
          txHash,
        });
      }
      const at = Date.now();
      for (const t of signed) this.#sentAt.set(t.txHash, at);
      while (this.#sentAt.size > 10_000) this.#sentAt.delete(this.#sentAt.keys().next().value!);
      const inserted = new Map(
        (await repo.insertSignedBatch(db, signed)).map((r) => [r.intentKey, r]),
      );
      // An intent recorded meanwhile under another address (never under this lock): its row
      // is the answer, and the nonces after it must move down, so this pass stops there.
      let cut = todo.findIndex((e) => !inserted.has(e.item.req.intentKey));
      if (cut >= 0) {
        const gone = todo[cut];
        const winner = await repo.findByIntent(db, rt.chainId, gone.item.req.intentKey);
        if (winner && winner.status !== "failed") gone.resolve(winner);
        else gone.reject(new Error(`intent ${gone.item.req.intentKey} could not be recorded`));
      } else cut = todo.length;
      for (const e of todo.slice(0, cut)) {
        await this.opts.hooks?.afterRecord?.(inserted.get(e.item.req.intentKey)!);
      }

      // The batch goes out in nonce order, each after the node answered for the one before. Sent
      // all at once, a nonce could arrive before its predecessor; anvil (1.7) then sometimes left
      // it in its pool unmined for good once the gap closed (seen under load: "in the pool",
      // node nonce = its nonce, no receipt). A refused one is taken at once by a zero-value
      // self-transfer when a later nonce of the batch may be mined, so no refusal leaves a gap.
      const rows = todo.slice(0, cut).map((e) => inserted.get(e.item.req.intentKey)!);
      const outcomes = await this.#broadcastInOrder(rt, rows);
      const accepted: string[] = [];
      const answers: Array<[LaneEntry, repo.TxRow]> = [];
      try {
        for (const [i, row] of rows.entries()) {
          const e = todo[i];
          const outcome = outcomes[i];
          if (typeof outcome === "object") {
            await repo.markFailed(db, row.id, outcome.rejected);
            e.reject(new ChainRejectedError(outcome.rejected));
            const later = outcomes.slice(i + 1).some((o) => typeof o !== "object");
            if (later && !/already used/.test(outcome.rejected)) {
              await this.#fillNonce(db, rt, e.item.account, row);
            }
            continue;
          }
          if (outcome === "accepted") {
            await this.opts.hooks?.afterBroadcast?.(row);
            accepted.push(row.id);
            answers.push([e, { ...row, status: "broadcast" }]);
          } else answers.push([e, row]); // transient: the waiter and recovery re-broadcast it
        }
      } finally {
        // The waiters go first (their receipts are being mined); the mark never undoes a
        // receipt recorded meanwhile (it moves only `signed` and `broadcast` rows).
        for (const [e, row] of answers) e.resolve(row);
        await repo.markBroadcastMany(db, accepted);
      }
      const requeue = todo.slice(cut + 1);
      const unsent = requeue.map((e) => inserted.get(e.item.req.intentKey)).filter((r) => !!r);
      await repo.withdrawUnsent(db, unsent.map((r) => r.id), "re-queued behind a skipped intent");
      return requeue;
    });
  }

  /**
   * Tops up a managed wallet's native gas from the operator when it is below the profile's floor
   * (local and remote chains alike), or below `needWei` (what the transaction about to be sent
   * may cost, when more than the floor): by the top-up amount, or by the need when it is more. A
   * top-up to it already in flight is awaited rather than doubled; otherwise the top-up's intent
   * is `gas:<address>:<next nonce of the wallet>`, so concurrent senders and a retry after a crash
   * find the same transaction. Returns the top-up sent or awaited, if any.
   */
  async ensureGas(
    rt: ChainRuntime,
    address: `0x${string}`,
    /** The caller's own read of the balance (`#gasBalance`), when it has one. */
    balance?: bigint | null,
    needWei = 0n,
  ): Promise<repo.TxRow | null> {
    const { floorWei: floor, topupWei: topup } = rt.profile.gas;
    if (floor === 0n || !rt.operator) return null;
    const floorWei = needWei > floor ? needWei : floor;
    const topupWei = needWei > topup ? needWei : topup;
    // Read afresh by every caller: a balance shared from a read that began before a top-up was
    // mined would make a late caller send a second top-up.
    if ((balance ?? await rt.client.getBalance({ address })) >= floorWei) return null;
    const to = address.toLowerCase() as `0x${string}`;
    const open = await repo.openGasTopup(this.opts.sql, rt.chainId, to);
    if (open) {
      const done = await this.wait(rt.profile.name, open);
      if (await rt.client.getBalance({ address }) >= floorWei) return done;
    }
    const [count, inFlight] = await Promise.all([
      rt.client.getTransactionCount({ address, blockTag: "pending" }),
      repo.maxOpenNonce(this.opts.sql, rt.chainId, to),
    ]);
    // Read again after the nonce: a top-up mined since the first read (so no longer open) may
    // already have let the wallet spend that nonce, and keying a new top-up by the next one would
    // fund the same need twice. A wallet only sends after its top-up is mined, so a nonce read
    // before this balance is covered by it.
    if (!open && await rt.client.getBalance({ address }) >= floorWei) return null;
    const pending = BigInt(count);
    const nonce = inFlight !== null && inFlight + 1n > pending ? inFlight + 1n : pending;
    this.opts.log.info("gas top-up", { chainId: rt.chainId, to, nonce: String(nonce) });
    return await this.send({
      profile: rt.profile.name,
      from: "operator",
      to,
      value: topupWei,
      // A need above the floor is its own: the floor's top-up for the same nonce may be mined
      // already and not be enough.
      intentKey: needWei > floor ? `gas:${to}:${nonce}:cost` : `gas:${to}:${nonce}`,
    });
  }

  /**
   * Sends the recorded bytes. Idempotent: the node answering "already known" counts as accepted.
   * A refusal that can never succeed is reported as rejected; anything else is transient.
   */
  async broadcast(
    rt: ChainRuntime,
    row: repo.TxRow,
    { attempts = 1 } = {},
  ): Promise<BroadcastOutcome> {
    let last = "";
    for (let i = 0; i < attempts; i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 50 * 4 ** (i - 1)));
      try {
        await rt.client.sendRawTransaction({ serializedTransaction: row.rawTx as Hex });
        return "accepted";
      } catch (e) {
        const kind = classifyBroadcastError(e);
        last = errorText(e);
        if (kind === "known") return "accepted";
        if (kind === "nonce-used") {
          // Our own bytes may have been mined already; otherwise the nonce went elsewhere.
          if (await this.#receipt(rt, row.txHash as Hex)) return "accepted";
          return { rejected: `nonce ${row.nonce} already used: ${last}` };
        }
        if (kind === "permanent") return { rejected: last };
      }
    }
    await repo.noteBroadcastAttempt(this.opts.sql, row.id, last).catch(() => {});
    this.opts.log.warn("broadcast failed; will retry", { txHash: row.txHash, error: last });
    return "transient";
  }

  /** The wallet's balance as `ensureGas` first reads it; null when no floor applies. */
  async #gasBalance(rt: ChainRuntime, address: `0x${string}`): Promise<bigint | null> {
    if (rt.profile.gas.floorWei === 0n || !rt.operator) return null;
    return await rt.client.getBalance({ address });
  }

  /**
   * A batch's transactions in nonce order, in one JSON-RPC batch request (the node takes a batch's
   * calls in order, and one request lets it mine them together). Any that the batch did not get
   * accepted, or all of them when the request itself failed, go again one by one in order, each
   * after the node answered for the one before, through `broadcast` (its retries and its reading
   * of the node's refusal).
   */
  async #broadcastInOrder(rt: ChainRuntime, rows: repo.TxRow[]): Promise<BroadcastOutcome[]> {
    const outcomes: (BroadcastOutcome | null)[] = rows.map(() => null);
    // A local node of ours mines on arrival: it is sent `eth_sendRawTransactionSync`, which
    // answers with the receipt once mined (one request instead of a send and a receipt lookup),
    // and the receipts go to the chain's watcher for the waiters. One not answered within
    // SYNC_WAIT_MS (the node's automining turned off, or a refused nonce holding the later ones
    // back) is sent again below as any other, so a refusal is handled as ever.
    const local = !!rt.node;
    if (rows.length > 1 || local) {
      try {
        // The client's own endpoint (the node, or whatever stands in front of it).
        const url = (rt.client.transport as { url?: string }).url ?? rt.rpcUrl;
        const request = fetch(url, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(rows.map((row, id) => ({
            jsonrpc: "2.0",
            id,
            method: local ? "eth_sendRawTransactionSync" : "eth_sendRawTransaction",
            params: [row.rawTx],
          }))),
          signal: AbortSignal.timeout(local ? SYNC_ABORT_MS : 15_000),
        }).then((res) => res.json());
        const watcher = local ? this.#watcher(rt) : null;
        const deliver = (answers: unknown) => {
          if (!watcher || !Array.isArray(answers)) return;
          for (const a of answers) {
            const row = Number.isInteger(a?.id) ? rows[a.id] : undefined;
            if (row && a.result) watcher.deliver(row.txHash, a.result);
          }
        };
        let timer: ReturnType<typeof setTimeout> | undefined;
        const answers = local
          ? await Promise.race([
            request,
            new Promise<null>((r) => timer = setTimeout(() => r(null), SYNC_WAIT_MS)),
          ]).finally(() => clearTimeout(timer))
          : await request;
        if (answers === null) request.then(deliver).catch(() => {});
        else deliver(answers);
        if (Array.isArray(answers)) {
          for (const a of answers) {
            if (Number.isInteger(a?.id) && a.id >= 0 && a.id < rows.length && a.result) {
              outcomes[a.id] = "accepted";
            }
          }
        }
      } catch {
        // The request failed as a whole: every row goes again below, one by one.
      }
    }
    const out: BroadcastOutcome[] = [];
    for (const [i, row] of rows.entries()) {
      out.push(outcomes[i] ?? await this.broadcast(rt, row, { attempts: 3 }));
    }
    return out;
  }

  /**
   * Waits for the receipt through the chain's receipt watcher (receipts.ts: one poll of new
   * blocks per chain, whatever the number of waiters), re-broadcasting a not-yet-accepted
   * transaction, until the bound.
   */
  async wait(profile: ProfileName, row: repo.TxRow, timeoutMs?: number): Promise<repo.TxRow> {
    if (row.status === "confirmed") return row;
    if (row.status === "reverted") throw new ChainRevertError("reverted", row.txHash);
    const rt = this.opts.runtime(profile);
    const deadline = Date.now() + (timeoutMs ?? this.opts.receiptTimeoutMs);
    let status = row.status;
    let lastBroadcast = Date.now();
    let lastUnstick = Date.now();
    const local = this.#sentAt.get(row.txHash);
    const watcher = this.#watcher(rt);
    const watch = watcher.watch(
      row.txHash,
      local !== undefined ? { local } : { db: row.createdAt },
    );
    // A local node mines on arrival: the receipt of a transaction it accepted is already there,
    // asked for by hash at once (the loop, poked, follows if it is not yet).
    if (rt.node && status === "broadcast") watcher.lookup(row.txHash);
    try {
      while (true) {
        const left = deadline - Date.now();
        // Woken at least every second without a receipt: to re-broadcast a `signed` row, and to
        // look for a transaction anvil's pool stranded (see `unstick`).
        const receipt = await watch.next(Math.min(1000, left));
        if (receipt) {
          const done = await this.settle(row, receipt);
          if (done.status === "reverted") throw new ChainRevertError("reverted", row.txHash);
          await this.opts.hooks?.afterReceipt?.(done);
          return receipt.logs ? { ...done, logs: receipt.logs } : done;
        }
        if (status === "signed" && Date.now() - lastBroadcast >= 1000) {
          lastBroadcast = Date.now();
          const outcome = await this.broadcast(rt, row);
          if (outcome === "accepted") {
            await repo.markBroadcast(this.opts.sql, row.id);
            status = "broadcast";
          } else if (typeof outcome === "object") {
            await repo.markFailed(this.opts.sql, row.id, outcome.rejected);
            throw new ChainRejectedError(outcome.rejected);
          }
        }
        if (status === "broadcast" && Date.now() - lastUnstick >= 1000) {
          lastUnstick = Date.now();
          await this.unstick(rt, row).catch((e) =>
            this.opts.log.warn("could not check the node's pool", {
              txHash: row.txHash,
              error: errorText(e),
            })
          );
        }
        if (Date.now() >= deadline) {
          const observed = await this.#observe(rt, row, status);
          this.opts.log.warn("no receipt within the bound", { txHash: row.txHash, observed });
          throw new ChainTimeoutError(row.txHash, observed);
        }
      }
    } finally {
      watch.release();
      this.#sentAt.delete(row.txHash);
    }
  }

  /**
   * Anvil's pool can strand a transaction for good: it works out what a transaction waits for
   * (`nonce - 1` of its sender, unless that nonce is the account's on-chain one) from the state it
   * reads before taking the pool's lock. When the block mining `nonce - 1` is committed and pruned
   * from the pool in between, the transaction is filed as waiting for a predecessor that will never
   * come again: it sits in the pool's queued part with the account's nonce equal to its own, and
   * the address sends nothing more (every later nonce queues behind it). Seen with sends from one
   * address that overlap the mining of the one before (two processes, a waiter's or recovery's
   * re-broadcast beside a new batch), more often on a loaded machine.
   *
   * This finds exactly that state (the node is anvil, its next nonce for the sender is this row's,
   * and its pool holds the row's transaction as queued) and repairs it under the address's lock:
   * the sender's pooled transactions are taken out (`anvil_removePoolTransactions`) and the same
   * signed bytes sent again in nonce order, which files them afresh against the current nonce.
   * Nothing is signed anew, so no intent gets a second transaction. Returns whether it repaired.
   */
  async unstick(rt: ChainRuntime, row: repo.TxRow): Promise<boolean> {
    if (!await this.#isAnvil(rt)) return false;
    const from = row.fromAddress as `0x${string}`;
    const stranded = async () => {
      const latest = BigInt(
        await rt.client.getTransactionCount({ address: from, blockTag: "latest" }),
      );
      if (latest !== row.nonce) return null;
      const pool = await this.#poolOf(rt, from);
      return pool.queued.some((t) => t.nonce === latest) ? pool : null;
    };
    if (!await stranded()) return false;
    return await this.#withAdvisoryLock(rt.chainId, from, async (db) => {
      const pool = await stranded();
      if (!pool) return false;
      // What goes back: the bytes of every transaction of the sender in the pool (ours or not),
      // and our own open rows from the stranded nonce on (one whose bytes the node would not
      // give back is not lost), one per nonce, the pool's where both have one.
      const pooled = [...pool.ready, ...pool.queued];
      const raws = new Map<bigint, string>();
      for (const r of await repo.listOpenFrom(db, rt.chainId, row.fromAddress, row.nonce)) {
        raws.set(r.nonce, r.rawTx);
      }
      const fromPool = await Promise.all(
        pooled.map((t) => this.#rpc(rt, "eth_getRawTransactionByHash", [t.hash])),
      );
      pooled.forEach((t, i) => {
        if (typeof fromPool[i] === "string") raws.set(t.nonce, fromPool[i] as string);
      });
      await this.#rpc(rt, "anvil_removePoolTransactions", [from]);
      // One JSON-RPC batch: anvil takes a batch's calls one after the other, in order.
      await this.#rpcBatch(
        rt,
        [...raws].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, raw]) => ({
          method: "eth_sendRawTransaction",
          params: [raw],
        })),
      );
      this.opts.log.warn("anvil's pool stranded a transaction; its sender's pool sent again", {
        txHash: row.txHash,
        from,
        nonce: String(row.nonce),
        resent: raws.size,
      });
      return true;
    });
  }

  #anvil = new WeakMap<object, Promise<boolean>>();

  #isAnvil(rt: ChainRuntime): Promise<boolean> {
    let known = this.#anvil.get(rt.client);
    if (!known) {
      known = this.#rpc(rt, "web3_clientVersion", []).then(
        (v) => typeof v === "string" && /^anvil\//i.test(v),
        () => false,
      );
      this.#anvil.set(rt.client, known);
    }
    return known;
  }

  /** The sender's transactions in the node's pool: ready ones and queued (waiting) ones. */
  async #poolOf(rt: ChainRuntime, from: string) {
    type Pooled = Record<string, Record<string, { hash: string }>>;
    const content = await this.#rpc(rt, "txpool_content", []) as {
      pending?: Pooled;
      queued?: Pooled;
    };
    const of = (part?: Pooled) =>
      Object.entries(part ?? {})
        .filter(([address]) => address.toLowerCase() === from.toLowerCase())
        .flatMap(([, byNonce]) =>
          Object.entries(byNonce).map(([nonce, tx]) => ({ nonce: BigInt(nonce), hash: tx.hash }))
        );
    return { ready: of(content.pending), queued: of(content.queued) };
  }

  async #rpc(rt: ChainRuntime, method: string, params: unknown[]): Promise<unknown> {
    // deno-lint-ignore no-explicit-any
    return await rt.client.request({ method, params } as any);
  }

  async #rpcBatch(rt: ChainRuntime, calls: { method: string; params: unknown[] }[]) {
    if (!calls.length) return;
    const url = (rt.client.transport as { url?: string }).url ?? rt.rpcUrl;
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(calls.map((c, id) => ({ jsonrpc: "2.0", id, ...c }))),
      signal: AbortSignal.timeout(15_000),
    });
    await res.text();
  }

  #watcher(rt: ChainRuntime): ReceiptWatcher {
    let w = this.#watchers.get(rt.chainId);
    if (!w || w.client !== rt.client) {
      // One poll per chain whatever the number of waiters, so a local node (mining on arrival)
      // is asked often; a remote one at the configured pace.
      const pollMs = this.opts.receiptPollMs ?? (rt.node ? LOCAL_RECEIPT_POLL_MS : 100);
      w = new ReceiptWatcher(rt.client, pollMs, this.opts.log);
      this.#watchers.set(rt.chainId, w);
    }
    return w;
  }

  /** What the node knows of a transaction that has no receipt yet, for the timeout's log line. */
  async #observe(rt: ChainRuntime, row: repo.TxRow, status: string): Promise<string> {
    const from = row.fromAddress as `0x${string}`;
    const read = <T>(p: Promise<T>) =>
      Promise.race([
        p.then(String, (e) => `error ${errorText(e).slice(0, 80)}`),
        new Promise<string>((r) => setTimeout(() => r("no answer in 2 s"), 2000)),
      ]);
    const [tx, latest, pending] = await Promise.all([
      read(
        rt.client.getTransaction({ hash: row.txHash as Hex }).then((t) =>
          t.blockNumber === null ? "in the pool" : `in block ${t.blockNumber}`
        ),
      ),
      read(rt.client.getTransactionCount({ address: from, blockTag: "latest" })),
      read(rt.client.getTransactionCount({ address: from, blockTag: "pending" })),
    ]);
    return `nonce ${row.nonce} (${status}) from ${from}: ${tx}; node nonce latest ${latest}, ` +
      `pending ${pending}`;
  }

  /**
   * Records a receipt on the row. Written at once when no write is running; receipts that arrive
   * while one is (a pipelined burst) are written together in one statement right after it.
   */
  settle(row: repo.TxRow, receipt: MinedReceipt["receipt"]): Promise<repo.TxRow> {
    const done = Promise.withResolvers<repo.TxRow>();
    this.#mined.push({ row, receipt, done });
    if (!this.#writingMined) this.#flushMined();
    return done.promise;
  }

  async #flushMined() {
    this.#writingMined = true;
    while (this.#mined.length) await this.#writeMined(this.#mined.splice(0));
    this.#writingMined = false;
  }

  async #writeMined(batch: MinedReceipt[]) {
    try {
      const rows = new Map(
        (await repo.markMinedMany(
          this.opts.sql,
          batch.map(({ row, receipt }) => ({
            id: row.id,
            status: receipt.status === "success" ? "confirmed" : "reverted",
            blockNumber: receipt.blockNumber,
            gasUsed: receipt.gasUsed,
            contractAddress: receipt.contractAddress?.toLowerCase() ?? null,
          })),
        )).map((r) => [r.id, r]),
      );
      for (const { row, done } of batch) {
        const mined = rows.get(row.id);
        done.resolve(mined ? { ...row, ...mined } : row);
      }
    } catch (e) {
      for (const { done } of batch) done.reject(e);
    }
  }

  #fees(rt: ChainRuntime) {
    const hit = this.#feeCache.get(rt.chainId);
    if (hit && Date.now() - hit.at < FEE_TTL_MS) return hit.fees;
    const fees = rt.client.estimateFeesPerGas();
    this.#feeCache.set(rt.chainId, { at: Date.now(), fees });
    fees.catch(() => this.#feeCache.delete(rt.chainId));
    return fees;
  }

  async #receipt(rt: ChainRuntime, hash: Hex) {
    try {
      return await rt.client.getTransactionReceipt({ hash });
    } catch (e) {
      if (e instanceof TransactionReceiptNotFoundError) return null;
      throw e;
    }
  }

  async #estimateGas(
    rt: ChainRuntime,
    from: `0x${string}`,
    to: `0x${string}` | null,
    data: Hex,
    value: bigint,
  ): Promise<bigint> {
    try {
      const est = await rt.client.estimateGas({ account: from, to: to ?? undefined, data, value });
      return est + est / 5n; // 20% headroom
    } catch (e) {
      if (isTransient(e)) throw e;
      if (e instanceof BaseError && /insufficient funds/i.test(errorText(e))) {
        throw new ChainRejectedError(`insufficient funds for gas in ${from}`);
      }
      throw new ChainRevertError(revertReason(e));
    }
  }

  /**
   * Takes a refused transaction's nonce with a zero-value self-transfer (recorded like any
   * other, intent `nonce-fill:<address>:<nonce>:<refused row>`), at fees above the refused one's.
   */
  async #fillNonce(db: Sql, rt: ChainRuntime, account: LocalAccount, refused: repo.TxRow) {
    const fees = await this.#fees(rt);
    const bump = (x: bigint, old: string) => {
      const floor = BigInt(old) + BigInt(old) / 5n + 1n;
      return x > floor ? x : floor;
    };
    const maxFeePerGas = bump(fees.maxFeePerGas, refused.maxFeePerGas);
    const maxPriorityFeePerGas = bump(fees.maxPriorityFeePerGas, refused.maxPriorityFeePerGas);
    const { raw, txHash } = await signEip1559(account, {
      chainId: rt.chainId,
      nonce: refused.nonce,
      to: account.address,
      value: 0n,
      gas: 21_000n,
      maxFeePerGas,
      maxPriorityFeePerGas,
    });
    const [row] = await repo.insertSignedBatch(db, [{
      chainId: rt.chainId,
      intentKey: `nonce-fill:${refused.fromAddress}:${refused.nonce}:${refused.id}`,
      fromAddress: refused.fromAddress,
      toAddress: account.address.toLowerCase(),
      nonce: refused.nonce,
      value: 0n,
      data: "0x",
      gas: 21_000n,
      maxFeePerGas,
      maxPriorityFeePerGas,
      rawTx: raw,
      txHash,
    }]);
    const outcome = await this.broadcast(rt, row, { attempts: 3 });
    if (typeof outcome === "object") {
      await repo.markFailed(db, row.id, outcome.rejected);
      this.opts.log.error("could not fill a refused nonce; later ones wait for recovery", {
        from: refused.fromAddress,
        nonce: String(refused.nonce),
        error: outcome.rejected,
      });
    } else if (outcome === "accepted") await repo.markBroadcastMany(db, [row.id]);
  }

  /** A session advisory lock on a reserved connection (one batch of one address at a time). */
  async #withAdvisoryLock<T>(
    chainId: number,
    address: string,
    fn: (db: Sql) => Promise<T>,
  ): Promise<T> {
    const key = `${chainId}:${address}`;
    const conn = await this.opts.sql.reserve();
    try {
      // Taking turns with another process's batch is meant to wait (no transaction is open).
      return await withoutBackstops(conn, async () => {
        await conn`select pg_advisory_lock(${LOCK_NAMESPACE}, hashtext(${key}))`;
        try {
          return await fn(conn as unknown as Sql);
        } finally {
          await conn`select pg_advisory_unlock(${LOCK_NAMESPACE}, hashtext(${key}))`;
        }
      });
    } finally {
      conn.release();
    }
  }
}

type BroadcastErrorKind = "known" | "nonce-used" | "permanent" | "transient";

export function classifyBroadcastError(e: unknown): BroadcastErrorKind {
  const text = errorText(e);
  if (/already known|already imported|known transaction|already exists/i.test(text)) {
    return "known";
  }
  if (/nonce too low|nonce has already been used|old nonce/i.test(text)) return "nonce-used";
  if (isTransient(e)) return "transient";
  if (
    /insufficient funds|intrinsic gas|gas limit|underpriced|fee cap|invalid (sender|signature|transaction|chain)|chain ?id|exceeds/i
      .test(text)
  ) {
    return "permanent";
  }
  return "transient";
}

function isTransient(e: unknown): boolean {
  if (!(e instanceof BaseError)) return true;
  return !!e.walk((x) => x instanceof HttpRequestError || x instanceof TimeoutError);
}

export function errorText(e: unknown): string {
  if (e instanceof BaseError) {
    return [e.shortMessage, e.details].filter(Boolean).join(": ").slice(0, 500);
  }
  return e instanceof Error ? e.message.slice(0, 500) : String(e).slice(0, 500);
}

function revertReason(e: unknown): string {
  const data = revertData(e);
  if (data) {
    for (const artifact of Object.values(ARTIFACTS)) {
      try {
        const d = decodeErrorResult({ abi: artifact.abi, data });
        const args = (d.args ?? []).map((a) => String(a)).join(", ");
        return `${d.errorName}(${args})`;
      } catch { /* not this contract's error */ }
    }
  }
  if (e instanceof BaseError) {
    const inner = e.walk() as BaseError & { reason?: string };
    return inner.reason ?? e.shortMessage;
  }
  return String(e);
}

/** The raw revert data of a failed call, wherever in the error chain the node put it. */
function revertData(e: unknown): Hex | undefined {
  if (e instanceof BaseError) {
    const withData = e.walk((x) => typeof (x as { data?: unknown }).data === "string") as
      | { data?: string }
      | null;
    if (withData?.data && /^0x[0-9a-f]{8,}$/i.test(withData.data)) return withData.data as Hex;
  }
  const m = /custom error (0x[0-9a-f]{8}):?\s*([0-9a-f]*)/i.exec(errorText(e));
  return m ? (`${m[1]}${m[2]}` as Hex) : undefined;
}
