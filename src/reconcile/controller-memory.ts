/**
 * What a controller remembers beside the objects, and the runtime rules over it. The cluster
 * controller (src/runtime/controller.ts) and the simulated one (src/interpreters/memory/controller.ts)
 * both keep their memory here, so the simulation checks the very rules the cluster runs:
 *
 * - one key is in one pass at a time: a pass for a busy key is deferred until the busy pass ends;
 * - admissions of one group are serialised: a pass that may admit holds its group until it ends or
 *   moves past Admit, and a pass of another task of that group is deferred meanwhile;
 * - a handler result whose write failed is kept and handed to the next pass (which replays it), never
 *   asked for again; a deletion cancels a call in flight (Admit or Execute) and frees its key;
 * - retry bookkeeping follows `nextRetryState`; an aborted pass backs off like a transient error;
 * - a task that is gone is forgotten.
 *
 * Every method is synchronous and answers with what the caller must do next (start a pass, run keys
 * again): the callers own the queue and the clock. All of it is lost in a crash, by design: the next
 * pass starts from the object.
 */
import { isTerminal } from "../api/status.ts";
import { nextRetryState, noRetry, type RetryState } from "../effects/retry-state.ts";
import type { PassEnd } from "../effects/task-effect.ts";
import { backoffDelayMs } from "../machine/backoff.ts";
import type { KnownResult, LifecycleConfig, PassInput, Phase } from "../machine/types.ts";
import { observe, peersOf } from "./observe.ts";
import type { TaskFacts } from "./task-kind.ts";

/** A handler result not yet on its object (a caller may keep more beside it, e.g. the call's record). */
export interface Kept {
  readonly known: KnownResult;
}

/** The part of a running pass the memory knows about. */
export interface PassHold {
  readonly key: string;
  readonly uid: string;
  /** The admission group this pass holds, if any. */
  readonly lockedGroup: string | undefined;
}

export interface PassStart<K extends Kept> extends PassHold {
  readonly input: PassInput;
  /** The kept result handed to this pass (taken: the memory no longer holds it). */
  readonly kept: K | undefined;
}

export interface ControllerMemoryOptions {
  readonly config: LifecycleConfig;
  /** Config members that have a handler. */
  readonly supported: ReadonlyArray<string>;
}

/**
 * What peers' admission reads of a task: its state and whether it is being deleted. One string per
 * combination, shared by all tasks (kept per task to spot changes; a string per task would cost a copy each).
 */
const peerSignatures = new Map<string, string>();
const peerSignature = (facts: TaskFacts): string => {
  const deleting = facts.metadata.deletionTimestamp !== undefined;
  const text = `${facts.status.state ?? "-"}|${deleting ? "deleting" : ""}`;
  const known = peerSignatures.get(text);
  if (known !== undefined) return known;
  peerSignatures.set(text, text);
  return text;
};

/** The group a pass of this task holds: one that may still admit (not started, not finished, not deleting). */
const admissionGroupOf = (facts: TaskFacts): string | undefined => {
  const state = facts.status.state;
  const admitting =
    !isTerminal(state) && state !== "InProgress" && facts.metadata.deletionTimestamp === undefined;
  return admitting && facts.group !== undefined ? `${facts.metadata.namespace}/${facts.group}` : undefined;
};

export class ControllerMemory<K extends Kept = Kept> {
  readonly #options: ControllerMemoryOptions;
  readonly #retry = new Map<string, RetryState>();
  readonly #outbox = new Map<string, K>();
  /** Keys whose pass waits for a handler call or runs after one, with the call's task and phase. */
  readonly #busy = new Map<string, { readonly uid: string; readonly phase: Phase }>();
  readonly #groupLocks = new Map<string, string>();
  /** Keys whose pass was deferred (busy key or held group); they run again once freed. */
  readonly #deferred = new Set<string>();
  readonly #seenByPeers = new Map<string, string>();

  constructor(options: ControllerMemoryOptions) {
    this.#options = options;
  }

  /**
   * Starts a pass of `key` over `facts`, or defers it (undefined) while the key is busy or another
   * pass holds its admission group; a deferred key comes back in the `ready` keys of a later answer.
   */
  start(
    key: string,
    facts: TaskFacts,
    peers: () => ReadonlyArray<TaskFacts>,
    now: number,
    runId: string,
  ): PassStart<K> | undefined {
    if (this.#busy.has(key)) {
      this.#deferred.add(key);
      return undefined;
    }
    const lockedGroup = admissionGroupOf(facts);
    if (lockedGroup !== undefined) {
      const holder = this.#groupLocks.get(lockedGroup);
      if (holder !== undefined && holder !== key) {
        this.#deferred.add(key);
        return undefined;
      }
      this.#groupLocks.set(lockedGroup, key);
    }
    const uid = facts.metadata.uid;
    const kept = this.#outbox.get(uid);
    this.#outbox.delete(uid);
    const input = this.inputOf(facts, peers(), now, runId, kept?.known);
    return { key, uid, lockedGroup, input, kept };
  }

  /** The input of a pass over `facts` at `now`, with the task's retry state; takes nothing. */
  inputOf(
    facts: TaskFacts,
    peers: ReadonlyArray<TaskFacts>,
    now: number,
    runId: string,
    known?: KnownResult,
  ): PassInput {
    const retry = this.#retry.get(facts.metadata.uid) ?? noRetry;
    return {
      task: observe(facts, this.#options.supported),
      peers: peersOf(facts, peers),
      now,
      runId,
      retries: retry.retries,
      ...(retry.retryAt === undefined ? {} : { retryAt: retry.retryAt }),
      ...(known === undefined ? {} : { known }),
      config: this.#options.config,
    };
  }

  /**
   * The pass calls a handler phase: its key is busy until the pass ends. Admission stays serialised
   * while Admit runs; past Admit the group is free. Answers the group the pass still holds.
   */
  calling(
    hold: PassHold,
    phase: Phase,
  ): { readonly lockedGroup: string | undefined; readonly ready: string[] } {
    this.#busy.set(hold.key, { uid: hold.uid, phase });
    if (phase === "admit") return { lockedGroup: hold.lockedGroup, ready: [] };
    return { lockedGroup: undefined, ready: this.#unlock(hold.lockedGroup, hold.key) };
  }

  /**
   * The pass ended with `end`. `exists`: the task is still there (a pass can end after its deletion
   * was seen, and must then leave nothing behind). Answers the keys to run again.
   */
  ended(hold: PassHold, end: PassEnd, now: number, exists: boolean): string[] {
    const next = nextRetryState(this.#retry.get(hold.uid) ?? noRetry, end, now);
    // Most tasks have nothing to remember (settled, or waiting without errors): keep no entry.
    if (next === noRetry || !exists) this.#retry.delete(hold.uid);
    else this.#retry.set(hold.uid, next);
    return this.#free(hold);
  }

  /** The pass was cut short (a write failed): keep its unwritten result and back off. */
  aborted(
    hold: PassHold,
    kept: K | undefined,
    exists: boolean,
  ): { readonly delayMs: number; readonly ready: string[] } {
    const { config } = this.#options;
    const previous = this.#retry.get(hold.uid) ?? noRetry;
    if (exists) {
      if (kept !== undefined) this.#outbox.set(hold.uid, kept);
      this.#retry.set(hold.uid, { retries: previous.retries + 1 });
    }
    const delayMs = Math.max(config.minRequeueMs, backoffDelayMs(config, previous.retries));
    return { delayMs, ready: this.#free(hold) };
  }

  /** The pass found its task gone. */
  gone(hold: PassHold): string[] {
    this.forget(hold.uid);
    return this.#free(hold);
  }

  /**
   * The task was deleted (or is being deleted): an Admit or Execute call in flight for it is for nobody
   * now, and its pass is over. Answers whether a call was cancelled (the caller stops it and runs the
   * key again), and the other keys to run again.
   */
  cancel(key: string, uid: string): { readonly cancelled: boolean; readonly ready: string[] } {
    const call = this.#busy.get(key);
    if (call === undefined || call.uid !== uid || call.phase === "cleanup")
      return { cancelled: false, ready: [] };
    this.#busy.delete(key);
    this.#deferred.delete(key);
    const ready: string[] = [];
    for (const [group, holder] of this.#groupLocks)
      if (holder === key) ready.push(...this.#unlock(group, key));
    return { cancelled: true, ready };
  }

  /** A task is gone for good: nothing of it may stay (a long-running controller sees millions come and go). */
  forget(uid: string): void {
    this.#retry.delete(uid);
    this.#outbox.delete(uid);
    this.#seenByPeers.delete(uid);
  }

  /**
   * A watch event for a task: whether what its peers' admission reads of it (state, deleting) changed,
   * so that they must run again.
   */
  peersMustLook(type: "ADDED" | "MODIFIED" | "DELETED", facts: TaskFacts): boolean {
    const uid = facts.metadata.uid;
    if (type === "DELETED") {
      this.#seenByPeers.delete(uid);
      return true;
    }
    const signature = peerSignature(facts);
    const changed = type === "ADDED" || this.#seenByPeers.get(uid) !== signature;
    this.#seenByPeers.set(uid, signature);
    return changed;
  }

  isBusy(key: string): boolean {
    return this.#busy.has(key);
  }

  isDeferred(key: string): boolean {
    return this.#deferred.has(key);
  }

  /** Whether a result is kept for this task. */
  keeps(uid: string): boolean {
    return this.#outbox.has(uid);
  }

  /** Per-task entries kept (retry state and unwritten results). */
  get remembered(): number {
    return this.#retry.size + this.#outbox.size;
  }

  /** Handler calls in flight or passes resumed after one. */
  get busyCount(): number {
    return this.#busy.size;
  }

  #free(hold: PassHold): string[] {
    this.#busy.delete(hold.key);
    return this.#unlock(hold.lockedGroup, hold.key);
  }

  /** Frees `group` if `key` holds it; answers the deferred keys that may run now. */
  #unlock(group: string | undefined, key: string): string[] {
    if (group !== undefined && this.#groupLocks.get(group) === key) this.#groupLocks.delete(group);
    const ready: string[] = [];
    for (const waiting of this.#deferred) {
      if (this.#busy.has(waiting)) continue;
      this.#deferred.delete(waiting);
      ready.push(waiting);
    }
    return ready;
  }
}
