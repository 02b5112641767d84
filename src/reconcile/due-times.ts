/**
 * One due time per key, and the keys whose time has come: the store of the core's timed passes
 * (requeue, backoff, TTL). Setting a key's time replaces the one it had, sooner or later: the last
 * decision wins.
 *
 * A binary min-heap of (time, key) with lazy deletion: replacing or cancelling a key's time only
 * updates the map, and stale heap entries are skipped when they surface (and dropped in one rebuild
 * when they outnumber the live ones). One sleeping fiber serves every key, instead of one fiber and
 * one Node timer per key, whose heap grew with the number of waiting tasks (bench/PROFILE.md).
 *
 * Hand-written: Effect has no mutable priority queue, and this is forty lines.
 */
/** A key whose time came, with the value its time was set with. */
export interface DueEntry<V> {
  readonly key: string;
  readonly value: V | undefined;
}

interface Entry<V> extends DueEntry<V> {
  readonly at: number;
}

/**
 * `V`: what the caller keeps beside each due time (the core: why it was set). Kept in the heap's
 * entry, which the map also points to, so a key costs one map entry and one object, and an entry is
 * live exactly when the map still points to it.
 */
export class DueTimes<V = never> {
  readonly #due = new Map<string, Entry<V>>();
  #heap: Entry<V>[] = [];

  get size(): number {
    return this.#due.size;
  }

  /** Sets (or replaces) the due time of `key`, and the value kept with it. */
  set(key: string, at: number, value?: V): void {
    const entry = { at, key, value };
    this.#due.set(key, entry);
    this.#push(entry);
    if (this.#heap.length > 2 * this.#due.size + 64) this.#rebuild();
  }

  delete(key: string): void {
    this.#due.delete(key);
  }

  /** The earliest due time, if any. */
  next(): number | undefined {
    this.#dropStale();
    return this.#heap[0]?.at;
  }

  /** Removes and returns the keys due at or before `now`, earliest first, each with its value. */
  takeDue(now: number): DueEntry<V>[] {
    const due: DueEntry<V>[] = [];
    for (;;) {
      this.#dropStale();
      const top = this.#heap[0];
      if (top === undefined || top.at > now) return due;
      this.#pop();
      this.#due.delete(top.key);
      due.push(top);
    }
  }

  /** Pops heap entries that no longer match their key's due time. */
  #dropStale(): void {
    for (let top = this.#heap[0]; top !== undefined && this.#due.get(top.key) !== top; top = this.#heap[0]) {
      this.#pop();
    }
  }

  #rebuild(): void {
    this.#heap = [];
    for (const entry of this.#due.values()) this.#push(entry);
  }

  #push(entry: Entry<V>): void {
    const heap = this.#heap;
    heap.push(entry);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const above = heap[parent];
      if (above === undefined || above.at <= entry.at) break;
      heap[i] = above;
      i = parent;
    }
    heap[i] = entry;
  }

  #pop(): void {
    const heap = this.#heap;
    const last = heap.pop();
    if (last === undefined || heap.length === 0) return;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let smallest = i;
      let smallestAt = last.at;
      const l = heap[left];
      if (l !== undefined && l.at < smallestAt) {
        smallest = left;
        smallestAt = l.at;
      }
      const r = heap[right];
      if (r !== undefined && r.at < smallestAt) smallest = right;
      if (smallest === i) break;
      const child = heap[smallest];
      if (child === undefined) break;
      heap[i] = child;
      i = smallest;
    }
    heap[i] = last;
  }
}
