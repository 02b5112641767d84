/**
 * What the per-key core (core.ts) remembers beside the objects, and the rules over it. Pure and
 * synchronous: each method answers what follows (a pass to start, keys to wake); the core's drivers
 * own the queue and the clock and sleep until `nextDue` (pass-timers.ts). All of it is lost in a
 * crash, by design: the next pass starts from the object.
 *
 * Rules:
 * - one pass per key at a time; admissions of one group one at a time (a pass that may admit holds
 *   its group until it ends or moves past Admit); a pass that cannot start is deferred until freed;
 * - a handler result whose write failed is kept and handed to the next pass, never asked for again;
 * - a task's deletion frees its key at once, but an Admit or Execute call in flight holds its group
 *   until it has ended (two snapshots of one etcd must never overlap); its result is discarded;
 * - a change wakes its task (not our own write's echo) and, when what admission reads of it changed,
 *   the unfinished tasks of its group;
 * - retries follow `nextRetryState`; a stopped pass backs off; a phase's calls and defects are counted
 *   (handler-defect.ts), each kind of defect reported once per phase;
 * - one due time per key, the last decision wins (pass-timers.ts);
 * - a task whose last finalizer we removed is released (no pass acts on a cached copy of it), and a
 *   task that is gone is forgotten.
 */
import { isTerminal } from "../api/status.ts";
import { nextRetryState, noRetry, type RetryState } from "../effects/retry-state.ts";
import type { PassEnd } from "../effects/task-effect.ts";
import { compareResourceVersions } from "../kube/object.ts";
import { backoffDelayMs } from "../machine/backoff.ts";
import type { KnownResult, LifecycleConfig, PassInput, Phase } from "../machine/types.ts";
import { GroupIndex } from "./group-index.ts";
import type { HandlerDefect } from "./handler-defect.ts";
import { observe, peersOf } from "./observe.ts";
import { type Jitter, PassTimers } from "./pass-timers.ts";
import { settledUntil } from "./settled.ts";
import type { TaskFacts } from "./task-kind.ts";
import { type TriggerReason, TriggerReasons } from "./trigger-reason.ts";

/** A handler result not yet on its object (a caller may keep more beside it, e.g. the call's record). */
export interface Kept {
  readonly known: KnownResult;
}

/** The part of a running pass the scheduler knows about. */
export interface PassHold {
  readonly key: string;
  readonly uid: string;
  /** The task's admission group (`namespace/group`), if it has one. */
  readonly group: string | undefined;
  /** The admission group this pass holds, if any. */
  readonly lockedGroup: string | undefined;
}

export interface PassStart<K extends Kept> extends PassHold {
  readonly input: PassInput;
  /** The kept result handed to this pass (taken: the scheduler no longer holds it). */
  readonly kept: K | undefined;
  /** Why this pass runs. */
  readonly trigger: TriggerReason;
  /** Nothing but changes of its own object woke it (an echo of our write, unless one is new). */
  readonly onlyChanged: boolean;
}

/** A key to run, and why. */
export interface Wake {
  readonly key: string;
  readonly reason: TriggerReason;
}

export interface SchedulerOptions {
  readonly config: LifecycleConfig;
  /** Config members that have a handler. */
  readonly supported: ReadonlyArray<string>;
  /** Stretches backoff delays (the runtime's is random, runtime/backoff-jitter.ts); none by default. */
  readonly jitter?: Jitter;
}

/** A watch event for a task, or our own write of it (`own`: the object our write returned). */
export interface TaskChange {
  readonly type: "ADDED" | "MODIFIED" | "DELETED";
  readonly facts: TaskFacts;
  /** The task's key as the caller's cache holds it (`taskKeyOf(facts)` when absent): one string per task. */
  readonly key?: string;
  readonly own?: boolean;
  /**
   * The caller's clock. Given, a settled task (settled.ts) is not woken: it is due when its TTL runs
   * out (`nextDue`).
   */
  readonly now?: number;
}

export interface ChangeAnswer {
  readonly wake: ReadonlyArray<Wake>;
  /** A handler call in flight that the change orphaned (the task is being deleted): stop waiting for it. */
  readonly orphaned?: number;
}

/** The group a pass of this task holds: one that may still admit (not started, not finished, not deleting). */
const admitting = (facts: TaskFacts): boolean =>
  !isTerminal(facts.status.state) &&
  facts.status.state !== "InProgress" &&
  facts.metadata.deletionTimestamp === undefined;

export const groupKeyOf = (facts: TaskFacts): string | undefined =>
  facts.group === undefined ? undefined : `${facts.metadata.namespace}/${facts.group}`;

export const taskKeyOf = (facts: TaskFacts): string => `${facts.metadata.namespace}/${facts.metadata.name}`;

interface Call {
  readonly id: number;
  readonly key: string;
  readonly uid: string;
  readonly phase: Phase;
  readonly group: string | undefined;
  /** The call has returned and its pass goes on (writing its result): a deletion no longer orphans it. */
  returned: boolean;
}

/** A task's calls of its current phase: how many, how many threw, and which defects were reported. */
interface PhaseAttempts {
  readonly phase: Phase;
  readonly calls: number;
  readonly defects: number;
  /** Signatures of the defects reported (handler-defect.ts); as many as `defects` at most. */
  readonly reported: ReadonlySet<string>;
}

/** What is remembered of one task (by UID) between its passes; no entry when there is nothing. */
interface TaskMemory<K> {
  retry?: RetryState;
  /** Calls of the current phase so far: the handler context's `attempt`, and its defects. */
  attempts?: PhaseAttempts;
  /** A handler result not yet on its object. */
  kept?: K;
  /** We removed its last finalizer (it is gone) and the watch has not said so yet. */
  released?: true;
}

/** Fields to set on a task's entry; `undefined` clears one. */
type TaskMemoryChange<K> = { [F in keyof TaskMemory<K>]?: TaskMemory<K>[F] | undefined };

export class TaskScheduler<K extends Kept = Kept> {
  readonly #options: SchedulerOptions;
  /** One entry per task with something to remember: a deletion removes it. */
  readonly #tasks = new Map<string, TaskMemory<K>>();
  /** Keys whose pass waits for a handler call or runs after one. */
  readonly #busy = new Map<string, Call>();
  readonly #groupLocks = new Map<string, string>();
  /** Calls of deleted tasks still running, by id, holding their group until they end (16.12). */
  readonly #orphans = new Map<number, Call>();
  /** Keys whose pass was deferred (busy key or held group); they run again once freed. */
  readonly #deferred = new Set<string>();
  readonly #groups = new GroupIndex();
  readonly #reasons = new TriggerReasons();
  /** The resourceVersion each key's last pass left its object at (by its own writes, or unchanged). */
  readonly #leftAt = new Map<string, string>();
  readonly #timers: PassTimers;
  #callSerial = 0;

  constructor(options: SchedulerOptions) {
    this.#options = options;
    this.#timers = new PassTimers(options.jitter);
  }

  /** Why `key` was woken (the first reason since its last pass); noted for the pass that starts next. */
  note(key: string, reason: TriggerReason): void {
    this.#reasons.note(key, reason);
  }

  /** The earliest due time of any key (ms, the callers' clock), if any: sleep until then. */
  nextDue(): number | undefined {
    return this.#timers.next();
  }

  /** The keys due at or before `now`, earliest first, each once: run them (why is noted). */
  takeDue(now: number): string[] {
    return this.#timers.takeDue(now).map(({ key, reason }) => {
      this.#reasons.note(key, `timer: ${reason}`);
      return key;
    });
  }

  /** Keys with a due time. */
  get dueCount(): number {
    return this.#timers.size;
  }

  /**
   * Whether a pass of `key` over its object at `resourceVersion` would see nothing new, and is skipped:
   * only changes of its own object woke it, and the object is where its last pass left it. That is an
   * echo of our own write whose watch event came before the write's response (the informer could not
   * know it yet): such a pass would decode the task and decide nothing (design-traps 5).
   */
  skipsEcho(key: string, resourceVersion: string): boolean {
    if (!this.#reasons.onlyChanged(key) || this.#leftAt.get(key) !== resourceVersion) return false;
    this.#reasons.take(key);
    return true;
  }

  /**
   * Starts a pass of `key` over `facts`, or answers undefined: deferred while the key is busy or its
   * admission group is held (the key comes back in a later `wake`), or skipped for a released task.
   */
  start(
    key: string,
    facts: TaskFacts,
    peers: () => ReadonlyArray<TaskFacts>,
    now: number,
    runId: string,
  ): PassStart<K> | undefined {
    const uid = facts.metadata.uid;
    if (this.#tasks.get(uid)?.released) return undefined;
    if (this.#busy.has(key)) {
      this.#deferred.add(key);
      return undefined;
    }
    const group = groupKeyOf(facts);
    const lockedGroup = group !== undefined && admitting(facts) ? group : undefined;
    if (lockedGroup !== undefined) {
      const holder = this.#groupLocks.get(lockedGroup);
      if ((holder !== undefined && holder !== key) || this.#orphanHolds(lockedGroup)) {
        this.#deferred.add(key);
        return undefined;
      }
      this.#groupLocks.set(lockedGroup, key);
    }
    const kept = this.#tasks.get(uid)?.kept;
    this.#edit(uid, { kept: undefined });
    // The pass decides the key's next due time when it ends.
    this.#timers.clear(key);
    const input = this.inputOf(facts, peers(), now, runId, kept?.known);
    const onlyChanged = this.#reasons.onlyChanged(key);
    return { key, uid, group, lockedGroup, input, kept, trigger: this.#reasons.take(key), onlyChanged };
  }

  /** The input of a pass over `facts` at `now`, with the task's retry state; takes nothing. */
  inputOf(
    facts: TaskFacts,
    peers: ReadonlyArray<TaskFacts>,
    now: number,
    runId: string,
    known?: KnownResult,
  ): PassInput {
    const memory = this.#tasks.get(facts.metadata.uid);
    const retry = memory?.retry ?? noRetry;
    const attempts = memory?.attempts;
    return {
      task: observe(facts, this.#options.supported),
      peers: peersOf(facts, peers, this.#options.config.finalizer),
      now,
      runId,
      retries: retry.retries,
      ...(retry.retryAt === undefined ? {} : { retryAt: retry.retryAt }),
      ...(attempts === undefined || attempts.defects === 0
        ? {}
        : { handlerDefects: { phase: attempts.phase, count: attempts.defects } }),
      ...(known === undefined ? {} : { known }),
      config: this.#options.config,
    };
  }

  /**
   * The pass calls a handler phase: its key is busy until the pass ends. Admission stays serialised
   * while Admit runs; past Admit the group is free. Answers the call's id (for `returned`), the group
   * the pass still holds, and the keys to wake.
   */
  calling(
    hold: PassHold,
    phase: Phase,
  ): {
    readonly callId: number;
    readonly attempt: number;
    readonly lockedGroup: string | undefined;
    readonly wake: Wake[];
  } {
    this.#callSerial += 1;
    const callId = this.#callSerial;
    const previous = this.#tasks.get(hold.uid)?.attempts;
    const attempt = previous?.phase === phase ? previous.calls + 1 : 1;
    this.#edit(hold.uid, {
      attempts:
        previous?.phase === phase
          ? { ...previous, calls: attempt }
          : { phase, calls: 1, defects: 0, reported: new Set() },
    });
    this.#busy.set(hold.key, {
      id: callId,
      key: hold.key,
      uid: hold.uid,
      phase,
      group: hold.group,
      returned: false,
    });
    if (phase === "admit") return { callId, attempt, lockedGroup: hold.lockedGroup, wake: [] };
    return { callId, attempt, lockedGroup: undefined, wake: this.#unlock(hold.lockedGroup, hold.key) };
  }

  /**
   * A handler call returned, or threw `defect`. `current`: its pass goes on (write the result).
   * Otherwise the call was orphaned by a deletion: its result is for nobody and must be discarded; its
   * group is free now. `report`: the defect is the first of its kind (signature) in this phase of
   * this task: log it (later ones are counted, not logged again).
   */
  returned(
    hold: PassHold,
    callId: number,
    defect?: HandlerDefect,
  ): { readonly current: boolean; readonly wake: Wake[]; readonly report: boolean } {
    const call = this.#busy.get(hold.key);
    if (call !== undefined && call.id === callId) {
      call.returned = true;
      return { current: true, wake: [], report: defect !== undefined && this.#countDefect(call, defect) };
    }
    // Orphaned (or forgotten in a crash of the simulation): nobody waits for this result; a defect
    // is still reported (its task's phase is over, so it counts for nothing).
    this.#orphans.delete(callId);
    return { current: false, wake: this.#wakeDeferred(), report: defect !== undefined };
  }

  /** Counts a defect of the call's phase; answers whether its kind is new there. */
  #countDefect(call: Call, defect: HandlerDefect): boolean {
    const uid = call.uid;
    const attempts = this.#tasks.get(uid)?.attempts;
    if (attempts === undefined || attempts.phase !== call.phase) return true;
    const known = attempts.reported.has(defect.signature);
    this.#edit(uid, {
      attempts: {
        ...attempts,
        defects: attempts.defects + 1,
        reported: known ? attempts.reported : new Set([...attempts.reported, defect.signature]),
      },
    });
    return !known;
  }

  /**
   * The pass ended with `end`. `exists`: the task is still there. `resourceVersion`: the version its
   * own writes left the object at, when the pass saw everything in it (no one else's change came back
   * merged into a write's result); a later change event showing exactly that version is then an echo.
   * Answers the keys to wake.
   */
  ended(hold: PassHold, end: PassEnd, now: number, exists: boolean, resourceVersion?: string): Wake[] {
    if (exists && resourceVersion !== undefined) this.#leftAt.set(hold.key, resourceVersion);
    else this.#leftAt.delete(hold.key);
    const next = nextRetryState(this.#tasks.get(hold.uid)?.retry ?? noRetry, end, now);
    // Most tasks have nothing to remember (settled, or waiting without errors): keep no entry.
    // Nothing to retry: the phase is over (or waits for a change), so its next call is a first.
    if (next === noRetry || !exists) this.#edit(hold.uid, { retry: undefined, attempts: undefined });
    else this.#edit(hold.uid, { retry: next });
    // A pass of a task that is gone or released decides no due time: nothing is left to run, and the
    // name may already hold a new object whose due time is not this pass's to drop.
    if (exists && !this.#tasks.get(hold.uid)?.released) this.#timers.ended(hold.key, end, now);
    return this.#free(hold);
  }

  /**
   * The pass stopped short at `now` (a write failed): keep its unwritten result and back off. Answers
   * the (jittered) delay until the key is due, undefined when its task is gone or released.
   */
  stopped(
    hold: PassHold,
    kept: K | undefined,
    exists: boolean,
    now: number,
  ): { readonly delayMs: number | undefined; readonly wake: Wake[] } {
    const { config } = this.#options;
    const memory = this.#tasks.get(hold.uid);
    const previous = memory?.retry ?? noRetry;
    let delayMs: number | undefined;
    if (exists && !memory?.released) {
      this.#edit(hold.uid, {
        retry: { retries: previous.retries + 1 },
        ...(kept === undefined ? {} : { kept }),
      });
      const backoff = Math.max(config.minRequeueMs, backoffDelayMs(config, previous.retries));
      delayMs = this.#timers.backoff(hold.key, backoff, now);
    }
    this.#leftAt.delete(hold.key);
    return { delayMs, wake: this.#free(hold) };
  }

  /** The pass found its task gone. */
  gone(hold: PassHold): Wake[] {
    this.#forget(hold.uid);
    this.#leftAt.delete(hold.key);
    return this.#free(hold);
  }

  /**
   * Our write removed the task's last finalizer while it was being deleted: the object is gone even if
   * the watch has not said so; no later pass may act on the cached copy.
   */
  release(uid: string): void {
    this.#edit(uid, { released: true });
  }

  /**
   * A task changed (a watch event, or our own write's result): answers whom to wake, and a handler call
   * in flight that the task's deletion orphaned.
   */
  changed(change: TaskChange): ChangeAnswer {
    const { facts, type } = change;
    const key = change.key ?? taskKeyOf(facts);
    const uid = facts.metadata.uid;
    const group = groupKeyOf(facts);
    const wake: Wake[] = [];
    let orphaned: number | undefined;
    if (type === "DELETED" || facts.metadata.deletionTimestamp !== undefined) {
      const call = this.#busy.get(key);
      if (call !== undefined && call.uid === uid && call.phase !== "cleanup" && !call.returned) {
        orphaned = call.id;
        this.#orphan(call, wake);
      }
    }
    if (type === "DELETED") {
      this.#tasks.delete(uid);
      this.#leftAt.delete(key);
      this.#timers.clear(key);
    }
    if (type === "MODIFIED" && change.own !== true && !this.#echoes(key, facts.metadata.resourceVersion))
      this.#userChanged(uid);
    const peersMustLook = this.#groups.update(key, type === "DELETED" ? undefined : { group, facts });
    if (type !== "DELETED" && change.own !== true) {
      const at = change.now === undefined ? undefined : this.#settledDue(key, facts, change.now);
      if (at === undefined) wake.push({ key, reason: type === "ADDED" ? "object added" : "object changed" });
      else this.#timers.ttl(key, at);
    }
    if (peersMustLook && group !== undefined)
      for (const peer of this.#groups.unfinishedMembers(group))
        if (peer !== key) wake.push({ key: peer, reason: "peer changed" });
    for (const { key: woken, reason } of wake) this.#reasons.note(woken, reason);
    // A pass woken for a deleted task finds no object, and takes no reason: drop them here.
    if (type === "DELETED") this.#reasons.forget(key);
    return { wake, ...(orphaned === undefined ? {} : { orphaned }) };
  }

  /** The TTL due time of a settled task that no pass is running or waiting for; else undefined. */
  #settledDue(key: string, facts: TaskFacts, now: number): number | undefined {
    if (!this.idle(key, facts.metadata.uid)) return undefined;
    return settledUntil(this.inputOf(facts, [], now, ""));
  }

  /**
   * The tasks by admission group. A task in no group may be read without its group
   * (reconcile/settled-facts.ts): no group then loses a member without its peers being woken.
   */
  get groups(): Pick<GroupIndex, "has" | "members" | "unfinishedMembers"> {
    return this.#groups;
  }

  /** No pass of `key` runs or waits, and no result is kept for its task. */
  idle(key: string, uid: string): boolean {
    return !this.#busy.has(key) && !this.#deferred.has(key) && this.#tasks.get(uid)?.kept === undefined;
  }

  /** The results kept for later passes (a crash loses them: the simulation marks their calls). */
  unwrittenResults(): ReadonlyArray<K> {
    return [...this.#tasks.values()].flatMap((memory) => (memory.kept === undefined ? [] : [memory.kept]));
  }

  /**
   * Handler calls in flight (passes waiting for one or resumed after it, and orphaned ones), calls of
   * deleted tasks still running (holding their groups), and tasks remembered between passes.
   */
  get counts(): {
    readonly inFlightCalls: number;
    readonly orphanedCalls: number;
    readonly remembered: number;
  } {
    let remembered = 0;
    for (const memory of this.#tasks.values())
      if (memory.retry !== undefined || memory.kept !== undefined || memory.released) remembered += 1;
    return {
      inFlightCalls: this.#busy.size + this.#orphans.size,
      orphanedCalls: this.#orphans.size,
      remembered,
    };
  }

  /** The task is gone: its call (if any) keeps its group busy until it ends; its key is free now. */
  #orphan(call: Call, wake: Wake[]): void {
    this.#busy.delete(call.key);
    this.#deferred.delete(call.key);
    if (call.group !== undefined) this.#orphans.set(call.id, call);
    for (const [group, holder] of this.#groupLocks)
      if (holder === call.key) wake.push(...this.#unlock(group, call.key));
    wake.push({ key: call.key, reason: "object changed" });
  }

  #orphanHolds(group: string): boolean {
    for (const call of this.#orphans.values()) if (call.group === group) return true;
    return false;
  }

  /**
   * Someone else changed the task (a user's spec or label edit; our own writes come as `own`): a
   * handler that said `retry({ afterMs })` was waiting for the world to change, and it just did, so the
   * poll timer no longer holds the next call back. An error backoff stays: it guards against a handler
   * failing in a hot loop, whatever the edits.
   */
  #userChanged(uid: string): void {
    const retry = this.#tasks.get(uid)?.retry;
    if (retry !== undefined && retry.retries === 0 && retry.retryAt !== undefined)
      this.#edit(uid, { retry: undefined });
  }

  /**
   * A change event at or before the version our last pass of `key` left is one of our own writes whose
   * event the informer could not tell apart (it came before the write's response): no one else's edit.
   */
  #echoes(key: string, resourceVersion: string): boolean {
    const settled = this.#leftAt.get(key);
    if (settled === undefined) return false;
    const order = compareResourceVersions(resourceVersion, settled);
    return order !== undefined && order <= 0;
  }

  /** A pass found the task gone: all but its release is forgotten (the watch has yet to say so). */
  #forget(uid: string): void {
    if (this.#tasks.get(uid)?.released) this.#tasks.set(uid, { released: true });
    else this.#tasks.delete(uid);
  }

  /** Changes a task's entry; an entry left with nothing in it is dropped. */
  #edit(uid: string, change: TaskMemoryChange<K>): void {
    const fields = Object.entries({ ...this.#tasks.get(uid), ...change });
    const next = Object.fromEntries(fields.filter(([, value]) => value !== undefined)) as TaskMemory<K>;
    if (Object.keys(next).length === 0) this.#tasks.delete(uid);
    else this.#tasks.set(uid, next);
  }

  #free(hold: PassHold): Wake[] {
    this.#busy.delete(hold.key);
    return this.#unlock(hold.lockedGroup, hold.key);
  }

  /** Frees `group` if `key` holds it; answers the deferred keys that may run now. */
  #unlock(group: string | undefined, key: string): Wake[] {
    if (group !== undefined && this.#groupLocks.get(group) === key) this.#groupLocks.delete(group);
    return this.#wakeDeferred();
  }

  #wakeDeferred(): Wake[] {
    const wake: Wake[] = [];
    for (const waiting of this.#deferred) {
      if (this.#busy.has(waiting)) continue;
      this.#deferred.delete(waiting);
      this.#reasons.note(waiting, "deferred");
      wake.push({ key: waiting, reason: "deferred" });
    }
    return wake;
  }
}
