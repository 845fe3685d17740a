/**
 * Transactions that stay safe when PostgreSQL ends their session under them (the
 * `idle_in_transaction_session_timeout` backstop, a restart, a network cut).
 *
 * postgres.js 3.4.9 does not cope with that on its own (porsager/postgres#1155, #1208): the
 * callback of `sql.begin` keeps running after `begin` rejected, and its next statement is written
 * to the dead connection, which throws an uncatchable TypeError that takes the process down; or,
 * once the pool reconnected that connection for a queued query, the statement runs there, outside
 * any transaction, as do the COMMIT or ROLLBACK `begin` sends when the callback settles (possibly
 * into another caller's transaction).
 *
 * So every transaction's callback receives a guarded handle: once its connection is known gone
 * (a statement of it failed with a connection error, or `begin` rejected with one), every further
 * statement through the handle never runs and never settles, and the callback's own end is never
 * passed on to `begin`, so no COMMIT or ROLLBACK is sent. The abandoned callback is left waiting
 * on promises nothing references, and is collected. The caller of `begin` has its error at once.
 */
import type postgres from "postgres";

const GONE = new Set([
  "CONNECTION_CLOSED",
  "CONNECTION_DESTROYED",
  "CONNECTION_ENDED",
  "25P03", // idle_in_transaction_session_timeout
  "57P01", // admin_shutdown
  "57P02", // crash_shutdown
  "EPIPE", // the socket's own errors: the server closed it
  "ECONNRESET",
]);

/** An error that means the session is gone (not a refused statement in a live session). */
export function connectionGone(e: unknown): boolean {
  return e instanceof Error && GONE.has((e as { code?: string }).code ?? "");
}

interface TxState {
  gone: boolean;
  /** The connection error that showed it gone. */
  error?: unknown;
  /**
   * Shown gone by the connection's close alone (a reserved handle): a statement that was in
   * flight and fails with the session's own error afterwards gives the handle that error instead.
   */
  byClose?: boolean;
}

/** A promise that never settles, new each time (a shared one would keep every waiter alive). */
function never<T>(): Promise<T> {
  return new Promise<T>(() => {});
}

// deno-lint-ignore no-explicit-any
type AnyFn = (...args: any[]) => any;

/** `sql` with `begin` guarded as above; everything else is the pool itself. */
// deno-lint-ignore no-explicit-any
export function guardTransactions<S extends postgres.Sql<any>>(sql: S): S {
  const begin = sql.begin.bind(sql) as AnyFn;
  const guarded = async (...args: unknown[]) => {
    const fn = args.pop() as AnyFn;
    const state: TxState = { gone: false };
    const body = async (tx: unknown) => {
      let result;
      try {
        result = await fn(guardHandle(tx as AnyFn, state));
      } catch (e) {
        if (connectionGone(e)) state.gone = true;
        if (state.gone) return await never();
        throw e;
      }
      if (state.gone) return await never();
      return result;
    };
    try {
      return await begin(...args, body);
    } catch (e) {
      if (connectionGone(e)) state.gone = true;
      throw e;
    }
  };
  const reserve = sql.reserve.bind(sql) as AnyFn;
  const guardedReserve = async () => guardReserved(await reserve());
  return new Proxy(sql, {
    get(target, prop, receiver) {
      if (prop === "begin") return guarded;
      if (prop === "reserve") return guardedReserve;
      return Reflect.get(target, prop, receiver);
    },
  });
}

/**
 * A reserved connection (`sql.reserve()`: a session advisory lock's, for migrations, contract
 * deployment and the transaction sender) guarded the same way, for the same postgres.js defect
 * (porsager/postgres#1208): once a statement of it failed with a connection error, its session is
 * gone and postgres.js has put the connection back among its closed ones. A further statement
 * written to it would throw the uncatchable TypeError, and `release()` would put the dead
 * connection among the open ones for the pool's next query. So every further statement rejects
 * at once with that first error (the callers' `finally` blocks, an unlock, a reset, run on and
 * fail as they would on a lost session), and `release()` does nothing: the pool reconnects the
 * connection from its closed ones when it needs it.
 *
 * A session that ends while the connection is idle (between two statements: the sender's batch
 * waiting on a node, say) fails no statement. So the pool's connection behind the handle is
 * learnt from the handle's first statement that runs (postgres.js hands it to a query's
 * `onexecute`, as its own `begin` uses it), and its close, which postgres.js reports to the
 * connection's `onclose` whether or not a statement was in flight, marks the handle gone with
 * postgres.js's CONNECTION_CLOSED error.
 */
function guardReserved(conn: AnyFn): AnyFn {
  const state: TxState = { gone: false };
  let pooled: PooledConnection | undefined;
  const closed = (e: unknown) => {
    if (state.gone) return;
    state.gone = true;
    state.error = e;
    state.byClose = true;
  };
  const learn = (c: PooledConnection) => {
    if (!pooled) {
      pooled = c;
      c.onclose = closed;
    }
    return true; // as if no `onexecute` were given: the connection takes the next statement
  };
  const run = <T>(q: T) => watch(onExecute(q, learn), state);
  const refused = () => {
    const p = Promise.reject(state.error) as Promise<never> & { execute?: () => unknown };
    p.catch(() => {}); // rejected for whoever awaits it; not unhandled if nobody does
    p.execute = () => p;
    return p;
  };
  return new Proxy(conn, {
    apply(target, thisArg, args) {
      if (state.gone) return refused();
      return run(Reflect.apply(target, thisArg, args));
    },
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (prop === "unsafe" || prop === "file") {
        return (...args: unknown[]) =>
          state.gone ? refused() : run((value as AnyFn).apply(target, args));
      }
      if (prop === "release") {
        return () => {
          if (state.gone) return;
          if (pooled?.onclose === closed) pooled.onclose = null;
          (value as AnyFn).apply(target, []);
        };
      }
      return value;
    },
  });
}

/** What this module uses of postgres.js's pooled connection (src/connection.js, 3.4.9). */
interface PooledConnection {
  /** Called once when the connection closes, with postgres.js's CONNECTION_CLOSED error. */
  onclose?: ((e: unknown) => void) | null;
}

/**
 * Has `learn` hear which pooled connection runs the query: postgres.js calls a query's
 * `options.onexecute` with it when the query is written. It does not for a statement it describes
 * first (one with parameters, new on that connection): a later statement of the handle teaches it
 * then. A query with its own `onexecute` is left as it is.
 */
function onExecute<T>(q: T, learn: (c: PooledConnection) => boolean): T {
  const options = (q as { options?: { onexecute?: unknown } })?.options;
  if (options && typeof options === "object" && options.onexecute === undefined) {
    options.onexecute = learn;
  }
  return q;
}

function guardHandle(tx: AnyFn, state: TxState): AnyFn {
  return new Proxy(tx, {
    apply(target, thisArg, args) {
      if (state.gone) return never();
      return watch(Reflect.apply(target, thisArg, args), state);
    },
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (prop === "unsafe" || prop === "file") {
        return (...args: unknown[]) =>
          state.gone ? never() : watch((value as AnyFn).apply(target, args), state);
      }
      if (prop === "savepoint") {
        throw new Error("savepoints are not guarded; add them to src/db/transactions.ts first");
      }
      return value;
    },
  });
}

/**
 * Marks the transaction gone as soon as a statement of it fails with a connection error, before
 * whoever awaits the statement runs. Only an awaited statement runs (postgres.js executes a query
 * on `then`), so a fragment interpolated into another statement is left alone.
 */
function watch<T>(q: T, state: TxState): T {
  if (typeof (q as { then?: unknown })?.then !== "function") return q;
  const then = (q as { then: AnyFn }).then;
  Object.defineProperty(q, "then", {
    configurable: true,
    writable: true,
    value: (onFulfilled?: AnyFn, onRejected?: AnyFn) =>
      then.call(q, onFulfilled, (e: unknown) => {
        if (connectionGone(e) && (!state.gone || state.byClose)) {
          state.gone = true;
          state.error = e;
          state.byClose = false;
        }
        if (onRejected) return onRejected(e);
        throw e;
      }),
  });
  return q;
}
