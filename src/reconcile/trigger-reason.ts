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
  /** Waiting keys woken by nothing but changes of their own object (an echo of our write may be one). */
  readonly #onlyChanged = new Set<string>();

  /** A key was added to the queue for `reason`. */
  note(key: string, reason: TriggerReason): void {
    const first = !this.#waiting.has(key);
    if (first) this.#waiting.set(key, reason);
    // "deferred" re-runs whatever woke the key while it was busy: it adds nothing new.
    if (reason === "object changed" && first) this.#onlyChanged.add(key);
    else if (reason !== "object changed" && reason !== "deferred") this.#onlyChanged.delete(key);
  }

  /** Whether everything that woke `key` since its last pass was a change of its own object. */
  onlyChanged(key: string): boolean {
    return this.#onlyChanged.has(key);
  }

  /** `key`'s object is gone: no pass takes what was noted for it (a new object starts afresh). */
  forget(key: string): void {
    this.#waiting.delete(key);
    this.#onlyChanged.delete(key);
  }

  /** The reason of the pass that starts now. */
  take(key: string): TriggerReason {
    const reason = this.#waiting.get(key);
    this.forget(key);
    // Every wake notes its reason (a due key's when the scheduler hands it out); a pass with none
    // noted only re-derives the task's state, as a resync does.
    return reason ?? "resync";
  }
}
