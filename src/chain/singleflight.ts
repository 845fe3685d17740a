/**
 * Concurrent calls with the same key share one promise while it is in flight; nothing is kept
 * once it settles (not a cache: the next call reads afresh). Used where a burst of sends from one
 * address asks the same question at once (its balance, its sealed key).
 */
export class SingleFlight<T> {
  #inFlight = new Map<string, Promise<T>>();

  run(key: string, fn: () => Promise<T>): Promise<T> {
    const running = this.#inFlight.get(key);
    if (running) return running;
    const p = fn().finally(() => this.#inFlight.delete(key));
    this.#inFlight.set(key, p);
    return p;
  }
}
