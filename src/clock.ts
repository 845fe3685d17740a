/** Time comes from a Clock so expiry, accrual and retry schedules are testable without sleeping. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock that only moves when told to; for tests and simulations. */
export class ManualClock implements Clock {
  #ms: number;
  constructor(start: Date | number = Date.now()) {
    this.#ms = typeof start === "number" ? start : start.getTime();
  }
  now(): Date {
    return new Date(this.#ms);
  }
  advance(ms: number): Date {
    this.#ms += ms;
    return this.now();
  }
  set(at: Date): void {
    this.#ms = at.getTime();
  }
}
