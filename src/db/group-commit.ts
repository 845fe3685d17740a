/**
 * A group commit: with no write in flight an item is written at once; the items that arrive
 * while one is in flight are written together by the next write. Each caller waits for its own
 * item's answer, which the write gives it (`resolve`/`reject` on each waiter); a write that
 * throws rejects the waiters it did not answer. One writer per key (a connection pool, say):
 * writes of one key never overlap.
 */
export interface Waiter<I, O> {
  item: I;
  resolve(answer: O): void;
  reject(error: unknown): void;
}

export interface GroupCommitOptions<I> {
  /** At most this many items per write (default: all waiting). */
  max?: number;
  /** Items with the same key never share a write: the later one waits for the next. */
  apart?: (item: I) => string;
}

interface Queue<I, O> {
  waiting: Waiter<I, O>[];
  writing: boolean;
}

/**
 * A function that queues an item under `key` and answers when its write has: `write` is given
 * each group, oldest first, and answers every waiter in it.
 */
export function groupCommit<I, O>(
  write: (group: Waiter<I, O>[]) => Promise<void>,
  opts: GroupCommitOptions<I> = {},
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

  const drain = async (q: Queue<I, O>) => {
    q.writing = true;
    try {
      while (q.waiting.length) {
        const group = take(q);
        try {
          await write(group);
        } catch (e) {
          // Settled promises ignore a second answer: only the unanswered are rejected.
          for (const w of group) w.reject(e);
        }
      }
    } finally {
      q.writing = false;
    }
  };

  return (key, item) => {
    let q = queues.get(key);
    if (!q) queues.set(key, q = { waiting: [], writing: false });
    const done = Promise.withResolvers<O>();
    q.waiting.push({ item, resolve: done.resolve, reject: done.reject });
    if (!q.writing) void drain(q);
    return done.promise;
  };
}
