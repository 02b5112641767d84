/** A clock that moves only when told to: simulations are exact and repeatable. */
export class FakeClock {
  #now: number;

  constructor(start: number) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  set(ms: number): void {
    if (ms < this.#now) throw new RangeError(`the clock cannot go back from ${this.#now} to ${ms}`);
    this.#now = ms;
  }
}
