/**
 * When each key's next pass is due by the clock: the scheduler's timers, kept once for every driver.
 * The drivers only sleep until `next()` (the runtime's work-queue fiber, the memory interpreter's fake
 * clock) and run what `takeDue` answers; they decide no due time themselves.
 *
 * Rules:
 * - one due time per key, and the last decision wins, sooner or later: the pass that decided it last
 *   knows best (client-go's delaying queue keeps the sooner one instead, which here could only add a
 *   redundant pass);
 * - a pass that ends with `RequeueAfter` is due after its delay; any other end clears it;
 * - a pass that starts clears it (it decides anew when it ends), and so does the task's deletion: a
 *   deleted key has no due time. A pass whose task is gone or released sets none, and clears none
 *   either: its name may already hold a new object, whose due time is not the old pass's to drop;
 * - a backoff is stretched by `jitter`, so that tasks that failed together do not retry in lockstep.
 *   The jitter is given by the caller (the core stays pure and the simulation replays to the
 *   millisecond with none); it is applied here rather than by the caller because only the scheduler
 *   knows which delays are backoffs (a stopped pass's backoff it computes itself).
 */
import type { PassEnd, RequeueReason } from "../effects/task-effect.ts";
import { DueTimes } from "./due-times.ts";

/** Stretches a backoff delay (ms); must not shorten it, or the pass it starts would only wait again. */
export type Jitter = (delayMs: number) => number;

/** A key whose time has come, and why it was set (the pass it starts logs `timer: <reason>`). */
export interface DueKey {
  readonly key: string;
  readonly reason: RequeueReason;
}

export class PassTimers {
  /** Each key's due time, and why it was set. */
  readonly #due = new DueTimes<RequeueReason>();
  readonly #jitter: Jitter;

  constructor(jitter: Jitter = (delayMs) => delayMs) {
    this.#jitter = jitter;
  }

  /** A pass of `key` ended at `now` with `end`: due after its requeue delay, or not at all. */
  ended(key: string, end: PassEnd, now: number): void {
    if (end._tag !== "RequeueAfter") this.clear(key);
    else
      this.#set(key, now + (end.reason === "backoff" ? this.#stretch(end.delayMs) : end.delayMs), end.reason);
  }

  /** A pass of `key` stopped short at `now`: due after `delayMs`, jittered. Answers the delay set. */
  backoff(key: string, delayMs: number, now: number): number {
    const jittered = this.#stretch(delayMs);
    this.#set(key, now + jittered, "backoff");
    return jittered;
  }

  /** `key` is due at `at` (a settled task's TTL). */
  ttl(key: string, at: number): void {
    this.#set(key, at, "ttl");
  }

  /** `key` has no due time (its pass started, or its task was deleted). */
  clear(key: string): void {
    this.#due.delete(key);
  }

  /** The earliest due time, if any. */
  next(): number | undefined {
    return this.#due.next();
  }

  /** Removes and answers the keys due at or before `now`, earliest first, each once. */
  takeDue(now: number): DueKey[] {
    return this.#due.takeDue(now).map(({ key, value }) => ({ key, reason: value ?? "poll" }));
  }

  #set(key: string, at: number, reason: RequeueReason): void {
    this.#due.set(key, at, reason);
  }

  /** A backoff jittered, never shortened (whatever jitter the caller gave). */
  #stretch(delayMs: number): number {
    return Math.max(delayMs, this.#jitter(delayMs));
  }

  /** Keys with a due time. */
  get size(): number {
    return this.#due.size;
  }
}
