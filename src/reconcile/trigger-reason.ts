/**
 * Why a pass runs, as a closed set (kube-rs' ReconcileReason): every pass logs it, so "why did this
 * run?" always has an answer. The first reason noted for a waiting key is the one reported.
 */
import type { RequeueReason } from "../effects/task-effect.ts";

export type TriggerReason =
  | "object added"
  | "object changed"
  | "peer changed"
  | "related object changed"
  | "resync"
  | "deferred"
  | `timer: ${RequeueReason}`;

export class TriggerReasons {
  readonly #waiting = new Map<string, TriggerReason>();
  readonly #timers = new Map<string, RequeueReason>();

  /** A key was added to the queue for `reason`. */
  note(key: string, reason: TriggerReason): void {
    if (!this.#waiting.has(key)) this.#waiting.set(key, reason);
  }

  /** A timer was set for `key`; if it fires, this is why. */
  timer(key: string, reason: RequeueReason): void {
    this.#timers.set(key, reason);
  }

  /** The reason of the pass that starts now. */
  take(key: string): TriggerReason {
    const reason = this.#waiting.get(key);
    this.#waiting.delete(key);
    if (reason !== undefined) return reason;
    const timer = this.#timers.get(key);
    this.#timers.delete(key);
    return timer === undefined ? "resync" : `timer: ${timer}`;
  }
}
