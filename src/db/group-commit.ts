/**
 * A group commit: with no write in flight an item is written at once; the items that arrive
 * while one is in flight are written together by the next write. Each caller waits for its own
 * item's answer, which the write gives it (`resolve`/`reject` on each waiter); a write that
 * throws rejects the waiters it did not answer. One writer per key (a connection pool, say):
 * writes of one key never overlap, unless `pipeline` lets a second start while one is in flight.
 */
import { setImmediate } from "node:timers";

export interface Waiter<I, O> {
  item: I;
  resolve(answer: O): void;
  reject(error: unknown): void;
}

export interface GroupCommitOptions<I, O> {
  /** At most this many items per write (default: all waiting). */
  max?: number;
  /** Items with the same key never share a write: the later one waits for the next. */
  apart?: (item: I) => string;
  /**
   * Before each write that follows another, one turn of the event loop (`setImmediate`): the I/O
   * already received (a signature's check, an upstream's answer) adds its items to that write
   * rather than to the one after. An item arriving with no write in flight is still written at
   * once. For writes whose cost is mostly per statement (x402.batched.mirror.ts).
   */
  gather?: boolean;
  /**
   * How many writes may be in flight at once (default 1). With 2, the items that arrive while a
   * write is in flight are sent by a second write without waiting for the first's answer (on one
   * connection, PostgreSQL runs it right after the first: the round trip and the event loop's
   * turn to read the first's answer no longer hold the next group back). Only for writes whose
   * groups do not depend on each other's outcome.
   */
  pipeline?: number;
  /**
   * A write of one item on its own: when a group's write throws, each waiter it did not answer
   * is written alone (at once, all of them), so one bad item fails alone rather than its group;
   * `failed` hears of the group's error first. Without it, those waiters are rejected.
   */
  alone?: {
    write: (item: I) => Promise<O>;
    failed?: (error: unknown, items: I[]) => void;
  };
}

interface Queue<I, O> {
  waiting: Waiter<I, O>[];
  /** Writers running (each writes its groups one after another). */
  writers: number;
}

/**
 * A function that queues an item under `key` and answers when its write has: `write` is given
 * each group, oldest first, and answers every waiter in it.
 */
export function groupCommit<I, O>(
  write: (group: Waiter<I, O>[]) => Promise<void>,
  opts: GroupCommitOptions<I, O> = {},
): (key: object, item: I) => Promise<O> {
  const queues = new WeakMap<object, Queue<I, O>>();

  const take = (q: Queue<I, O>): Waiter<I, O>[] => {
    const max = opts.max ?? Infinity;
    if (!opts.apart && q.waiting.length <= max) {
      const all = q.waiting;
      q.waiting = [];
      return all;
    }
    const group: Waiter<I, O>[] = [];
    const rest: Waiter<I, O>[] = [];
    const keys = new Set<string>();
    for (const w of q.waiting) {
      const k = opts.apart?.(w.item);
      if (group.length >= max || (k !== undefined && keys.has(k))) rest.push(w);
      else {
        if (k !== undefined) keys.add(k);
        group.push(w);
      }
    }
    q.waiting = rest;
    return group;
  };

  const drain = async (q: Queue<I, O>, after: boolean) => {
    q.writers++;
    try {
      while (q.waiting.length) {
        if (after && opts.gather) {
          await new Promise((r) => setImmediate(r));
          // Another writer may have taken them meanwhile.
          if (!q.waiting.length) break;
        }
        after = true;
        const group = take(q).map(answerOnce);
        try {
          await write(group);
        } catch (e) {
          const open = group.filter((w) => !w.answered);
          const alone = opts.alone;
          if (!alone) {
            for (const w of open) w.reject(e);
            continue;
          }
          alone.failed?.(e, group.map((w) => w.item));
          await Promise.all(open.map((w) => alone.write(w.item).then(w.resolve, w.reject)));
        }
      }
    } finally {
      q.writers--;
    }
  };

  /** The waiter, remembering whether the write answered it. */
  const answerOnce = (w: Waiter<I, O>): Waiter<I, O> & { answered: boolean } => {
    const tracked = {
      item: w.item,
      answered: false,
      resolve: (o: O) => {
        tracked.answered = true;
        w.resolve(o);
      },
      reject: (e: unknown) => {
        tracked.answered = true;
        w.reject(e);
      },
    };
    return tracked;
  };

  return (key, item) => {
    let q = queues.get(key);
    if (!q) queues.set(key, q = { waiting: [], writers: 0 });
    const done = Promise.withResolvers<O>();
    q.waiting.push({ item, resolve: done.resolve, reject: done.reject });
    // A second writer starts as a follow-up of the first (it gathers first, with `gather`).
    if (q.writers < (opts.pipeline ?? 1)) void drain(q, q.writers > 0);
    return done.promise;
  };
}
