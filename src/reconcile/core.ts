/**
 * The per-key core: every decision a controller makes beside the machine, as one Elm-style update.
 * `step(input)` takes what happened — a watched change, a key's turn in the queue, a driver's answer to
 * a request, a handler's return, a related object's change, a resync — and answers the commands that
 * follow: perform a request, call or abort a handler, wake a key, look at the due times again, store a
 * written object, log. The drivers (the cluster runtime, the memory interpreter, simulate()) perform
 * commands and feed their answers back; they decide nothing, so every rule below runs in the
 * simulation exactly as on a cluster. Its state is one record per key and one per admission group, and
 * the due times; a crash loses all of it, by design: the next pass starts from the object.
 *
 * Rules:
 * - one pass per key at a time; admissions of one group one at a time (a pass that may admit holds
 *   its group until it ends or calls past Admit); a turn that cannot start is deferred until freed;
 * - a handler result whose write failed is kept and handed to the next pass, never asked for again;
 * - a task's deletion frees its key at once, but an Admit or Execute call in flight holds its group
 *   until it has returned (two snapshots of one etcd must never overlap); its result is discarded;
 * - a change wakes its task and, when what admission reads of it changed, the unfinished tasks of its
 *   group; someone else's change ends a poll wait (not an error backoff);
 * - retries follow `nextRetryState`; a stopped pass backs off (jittered); a phase's calls and defects
 *   are counted (handler-defect.ts), each kind of defect reported once per phase;
 * - one due time per key, the last decision wins; a starting pass or a deletion clears it, and a pass
 *   of a task that is gone or released sets none;
 * - a turn whose object is where the key's last pass left it, woken only by changes of that object, is
 *   an echo of our own write: skipped before decoding (docs/design-notes.md §5);
 * - a change's decode is handed to the pass it wakes, kept through deferred turns (a newer copy is
 *   decoded again);
 * - a settled task (settled.ts) gets its TTL due time, not a machine run;
 * - a write's result is the pass's object from then on; one that carries someone else's change makes
 *   the next event of that version run a pass; our removal of a deleting task's last finalizer
 *   releases the task (no later pass acts on the driver's stale copy);
 * - a handler's return resumes its pass over the driver's newest copy of the task (same UID).
 * The lifecycle properties (test/property/checks.ts, "work saved") fail when one of these is broken.
 */
import { isTerminal } from "../api/status.ts";
import { nextRetryState, noRetry, type RetryState } from "../effects/retry-state.ts";
import { type PassEnd, type RequeueReason, TaskEffect } from "../effects/task-effect.ts";
import { compareResourceVersions } from "../kube/object.ts";
import { backoffDelayMs } from "../machine/backoff.ts";
import type { KnownResult, LifecycleConfig, PassInput, Phase, PhaseOutcome } from "../machine/types.ts";
import { DueTimes } from "./due-times.ts";
import { factsAfterWrite } from "./facts-after-write.ts";
import { carriesForeignChange, type TaskObject } from "./foreign-change.ts";
import { defectOutcome, type HandlerDefect, type HandlerReply } from "./handler-defect.ts";
import { cancelOf, observe, peersOf } from "./observe.ts";
import { oversizedOf, tooLargeReason } from "./oversized-task.ts";
import { Answer, answer, type PassRequest, type Step, start } from "./pass.ts";
import { settledUntil } from "./settled.ts";
import { settledFacts } from "./settled-facts.ts";
import { readFacts, readTask, type TaskFacts, type TaskKind } from "./task-kind.ts";

export type { TaskObject } from "./foreign-change.ts";

/** Why a pass runs, a closed set (kube-rs' ReconcileReason); the first noted for a waiting key counts. */
export type TriggerReason =
  | "object added"
  | "object changed"
  | "peer changed"
  | "related object changed"
  | "resync"
  | "deferred"
  | `timer: ${RequeueReason}`;

/** Stretches a backoff delay (ms); must not shorten it, or the pass it starts would only wait again. */
export type Jitter = (delayMs: number) => number;

export interface CoreOptions<Task> {
  readonly kind: TaskKind<Task>;
  readonly config: LifecycleConfig;
  /** Config members that have a handler. */
  readonly supported: ReadonlyArray<string>;
  /** Stretches backoff delays (the runtime's is random, runtime/backoff-jitter.ts); none by default. */
  readonly jitter?: Jitter;
  /** The driver's copy of a task (its cache, read-your-writes), undefined when it has none. */
  readonly read: (key: string) => TaskObject | undefined;
  /** The reconcile ID of a pass started at `now` (the `serial`th pass of this core). */
  readonly runIdOf?: (now: number, serial: number) => string;
}

/** What happened. */
export type CoreInput<Task = unknown> =
  /** A watched change of a task (`object`: as the driver's cache holds it after the change). */
  | {
      readonly _tag: "Changed";
      readonly type: "ADDED" | "MODIFIED" | "DELETED";
      readonly key: string;
      readonly object: TaskObject;
      readonly now: number;
    }
  /** A key's turn in the driver's queue. */
  | { readonly _tag: "Turn"; readonly key: string; readonly now: number }
  /** The answer to a `Perform` of `pass`; `written`: the object a successful write returned. */
  | {
      readonly _tag: "Answered";
      readonly pass: PassView<Task>;
      readonly answer: Answer;
      readonly now: number;
      readonly written?: TaskObject;
    }
  /** A handler call (`Call`) of `pass` returned, or threw. */
  | {
      readonly _tag: "Returned";
      readonly pass: PassView<Task>;
      readonly callId: number;
      readonly reply: HandlerReply;
      readonly now: number;
    }
  /** An object that names admission groups changed (the runtime's group resource). */
  | { readonly _tag: "RelatedChanged"; readonly group: string }
  /** Re-derive these keys' next step (the periodic level-triggered resync). */
  | { readonly _tag: "Resync"; readonly keys: Iterable<string> };

/** A pass in progress, as the drivers see it. */
export interface PassView<Task> {
  readonly id: number;
  readonly key: string;
  readonly uid: string;
  readonly runId: string;
  readonly trigger: TriggerReason;
  /** Nothing but changes of its own object woke it. */
  readonly onlyChanged: boolean;
  /** When it started (the driver's clock). */
  readonly started: number;
  readonly createdAt: number;
  /** The task as decoded at the start (what its handlers get), and its facts. */
  readonly task: Task | undefined;
  readonly facts: TaskFacts;
  /** The group the task's admission belongs to (`namespace/group`). */
  readonly group: string | undefined;
  /** The handler call whose result the pass holds unwritten (its own, or a kept one it replays). */
  readonly holds: number | undefined;
  /** The object as last read or written. */
  readonly object: TaskObject;
  /** Where the pass is. */
  readonly step: Step;
}

type PhaseOf = Extract<PassRequest, { readonly _tag: "RunPhase" }>["phase"];

/** What the driver does. */
export type CoreCommand<Task> =
  | { readonly _tag: "Wake"; readonly key: string }
  /** Perform a write or an Event over `object` (the pass's copy) and answer with `Answered`. */
  | {
      readonly _tag: "Perform";
      readonly pass: PassView<Task>;
      readonly request: Exclude<PassRequest, { readonly _tag: "RunPhase" }>;
      readonly object: TaskObject;
      /** The pass holds a handler result this write may put on the object. */
      readonly carriesResult: boolean;
    }
  /** Call a handler phase (in the background if it takes long) and answer with `Returned`. */
  | {
      readonly _tag: "Call";
      readonly pass: PassView<Task>;
      readonly callId: number;
      readonly phase: PhaseOf;
      readonly attempt: number;
    }
  /**
   * Signal the handler that its call is abandoned: its task was `deleted` (the call runs on; its
   * result will be discarded), or `cancelled` (its result is still recorded; the next gate fails it).
   */
  | {
      readonly _tag: "Abort";
      readonly callId: number;
      readonly key: string;
      readonly reason: "deleted" | "cancelled";
    }
  /** Put a write's result into the driver's copy (read-your-writes); the copy holds its task. */
  | { readonly _tag: "Store"; readonly object: TaskObject }
  /** The earliest due time may have changed: sleep until `due.nextDue()`. */
  | { readonly _tag: "DueChanged" }
  | {
      readonly _tag: "Log";
      readonly level: "info" | "error";
      readonly message: string;
      readonly fields: Readonly<Record<string, unknown>>;
    }
  /** A pass started (`kept`: the call whose result, kept from an earlier pass, it was handed). */
  | {
      readonly _tag: "Started";
      readonly pass: PassView<Task>;
      readonly step: Step;
      readonly kept: number | undefined;
    }
  /**
   * A call ended: `outcome` is what its pass makes of `reply`; `current`: its pass goes on, else the
   * task was deleted and the result is discarded; `report`: a defect new for its task phase.
   */
  | {
      readonly _tag: "CallEnded";
      readonly pass: PassView<Task>;
      readonly callId: number;
      readonly phase: PhaseOf;
      readonly attempt: number;
      readonly reply: HandlerReply;
      readonly outcome: PhaseOutcome;
      readonly current: boolean;
      readonly report: boolean;
    }
  /**
   * A pass ended (`end`), found its task gone, or stopped short (a write failed; `retryInMs`: its
   * backoff). `holds`: the call whose result it ended without writing, or kept for the next pass.
   */
  | {
      readonly _tag: "Ended";
      readonly pass: PassView<Task>;
      readonly step: Step;
      readonly how: "ended" | "gone" | "aborted";
      readonly end?: PassEnd;
      readonly retryInMs?: number;
      readonly holds: number | undefined;
    };

interface Running<Task> extends PassView<Task> {
  holds: number | undefined;
  step: Step;
  object: TaskObject;
  /** The admission group this pass holds, if any. */
  lockedGroup: string | undefined;
  /** The facts of `object`. */
  current: TaskFacts;
  /** No one else's change came back merged into a write's result: its version is where the pass left it. */
  sawAll: boolean;
  call: { readonly id: number; readonly phase: PhaseOf; readonly attempt: number } | undefined;
  /** Its task was deleted during its call: the key is free; the call holds its group until it returns. */
  orphaned: boolean;
  /** The driver's clock at the pass's last input: its due times count from there. */
  now: number;
}

/** What is remembered of one task (by UID) between its passes; dropped when empty. */
interface TaskMemory {
  readonly uid: string;
  retry?: RetryState;
  /** Calls of the current phase: the handler context's `attempt`, the defects, those reported. */
  attempts?: { readonly phase: Phase; calls: number; defects: number; readonly reported: Set<string> };
  /** A handler result not yet on its object, and its call. */
  kept?: { readonly known: KnownResult; readonly callId: number | undefined };
  /** We removed its last finalizer (it is gone) and the watch has not said so yet. */
  released?: true;
}

/** One key: its task's memory, its admission group, why it was woken, its pass. Dropped when empty. */
interface KeyRecord<Task> {
  memory?: TaskMemory | undefined;
  /** The admission group it is in, what its peers' admission reads of it (`state|deleting`, shared). */
  group?: string | undefined;
  signature?: string | undefined;
  finished?: boolean | undefined;
  /** Why it was woken (the first reason since its last pass); whether only its own changes woke it. */
  reason?: TriggerReason | undefined;
  onlyChanged?: true | undefined;
  /** The resourceVersion its last pass left the object at (by its own writes, or unchanged). */
  leftAt?: string | undefined;
  pass?: Running<Task> | undefined;
}

interface GroupRecord {
  /** One key, or more (most groups have one task). */
  members: string | Set<string>;
  /** The key whose pass may admit now. */
  holder?: string | undefined;
  /** Calls of deleted tasks of this group still running. */
  orphans: number;
}

const signatures = new Map<string, string>();
const signatureOf = (facts: TaskFacts): string => {
  const text = `${facts.status.state ?? "-"}|${facts.metadata.deletionTimestamp === undefined ? "" : "deleting"}|${facts.activity ?? ""}`;
  const known = signatures.get(text);
  if (known !== undefined) return known;
  signatures.set(text, text);
  return text;
};

const groupKeyOf = (facts: TaskFacts): string | undefined =>
  facts.group === undefined ? undefined : `${facts.metadata.namespace}/${facts.group}`;

const metaOf = (object: TaskObject): Record<string, unknown> =>
  (typeof object.metadata === "object" && object.metadata !== null ? object.metadata : {}) as Record<
    string,
    unknown
  >;
const versionOf = (object: TaskObject): string => String(metaOf(object).resourceVersion ?? "");
/** A task key's namespace and name. */
export const splitKey = (key: string): [string, string] => {
  const at = key.indexOf("/");
  return [key.slice(0, at), key.slice(at + 1)];
};
const uidOf = (object: TaskObject | undefined): string | undefined =>
  object === undefined ? undefined : String(metaOf(object).uid ?? "");
const wake = (key: string): { readonly _tag: "Wake"; readonly key: string } => ({ _tag: "Wake", key });
const dueChanged: CoreCommand<never> = { _tag: "DueChanged" };

type Read<Task> = NonNullable<ReturnType<typeof readTask<Task>>>;

export class TaskCore<Task> {
  readonly #options: CoreOptions<Task>;
  readonly #keys = new Map<string, KeyRecord<Task>>();
  readonly #groups = new Map<string, GroupRecord>();
  /** Keys whose turn was deferred (busy key or held group), in order; they run again once freed. */
  readonly #deferred = new Set<string>();
  /** Each key's due time, and why it was set. */
  readonly #due = new DueTimes<RequeueReason>();
  /** A change's decode, for the pass it wakes (keyed by the object: a newer copy misses). */
  readonly #decoded = new WeakMap<TaskObject, Read<Task>>();
  #serial = 0;
  #callSerial = 0;

  constructor(options: CoreOptions<Task>) {
    this.#options = options;
  }

  step(input: CoreInput<Task>): CoreCommand<Task>[] {
    switch (input._tag) {
      case "Changed":
        return this.#changed(input);
      case "Turn":
        return this.#turn(input.key, input.now);
      case "Answered":
        return this.#answered(input);
      case "Returned":
        return this.#returned(input);
      case "RelatedChanged":
        return this.#wakeFor(this.#unfinishedMembers(input.group), "related object changed");
      case "Resync":
        return this.#wakeFor(input.keys, "resync");
    }
  }

  // ---- what the drivers' clocks and checks read ------------------------------------------------

  /** The earliest due time of any key (the driver's clock), if any: sleep until then. */
  nextDue(): number | undefined {
    return this.#due.next();
  }

  /** The keys due at or before `now`, earliest first, each once: wake them (why is noted). */
  takeDue(now: number): string[] {
    return this.#due.takeDue(now).map(({ key, value }) => {
      this.#note(key, `timer: ${value ?? "poll"}`);
      return key;
    });
  }

  /** Keys with a due time. */
  get dueCount(): number {
    return this.#due.size;
  }

  /** Handler calls in flight (of deleted tasks among them), and tasks remembered between passes. */
  get counts(): { inFlightCalls: number; orphanedCalls: number; remembered: number } {
    let calls = 0;
    let orphanedCalls = 0;
    let remembered = 0;
    for (const record of this.#keys.values()) {
      if (record.pass?.call !== undefined) calls += 1;
      const memory = record.memory;
      if (memory?.retry !== undefined || memory?.kept !== undefined || memory?.released) remembered += 1;
    }
    for (const group of this.#groups.values()) orphanedCalls += group.orphans;
    return { inFlightCalls: calls + orphanedCalls, orphanedCalls, remembered };
  }

  /** The calls whose results are kept for a later pass (a crash loses them). */
  keptCalls(): number[] {
    return [...this.#keys.values()].flatMap(({ memory }) =>
      memory?.kept?.callId === undefined ? [] : [memory.kept.callId],
    );
  }

  /**
   * The requests a pass over `key`'s object would make at `at`, when nothing runs, waits or is kept for
   * it: the "no-op reconcile" check (undefined otherwise). Performs nothing.
   */
  wouldRequest(key: string, at: number): ReadonlyArray<PassRequest | PassEnd> | undefined {
    const object = this.#options.read(key);
    const facts = object === undefined ? undefined : readFacts(this.#options.kind, object);
    if (facts === undefined || !this.#idle(key, facts.metadata.uid)) return undefined;
    const effects: Array<PassRequest | PassEnd> = [];
    let step = start(this.#inputOf(key, facts, at, "check", true));
    while (step._tag === "Request") {
      effects.push(step.request);
      if (step.request._tag === "RunPhase") return effects;
      step = answer(step, Answer.Done({ now: at }));
    }
    if (step._tag === "End") effects.push(step.end);
    return effects;
  }

  // ---- inputs ----------------------------------------------------------------------------------

  #changed(input: Extract<CoreInput, { _tag: "Changed" }>): CoreCommand<Task>[] {
    const { type, key, object, now } = input;
    const { kind } = this.#options;
    // A finished task seen first (a takeover) waits for its TTL undecoded; its timer's pass decodes it.
    const known = this.#keys.get(key)?.group !== undefined;
    const settled = type !== "DELETED" && !known ? settledFacts(kind, object) : undefined;
    const read = settled === undefined ? (this.#decoded.get(object) ?? readTask(kind, object)) : undefined;
    const facts = settled ?? read?.facts;
    // Unreadable metadata: its turn logs why; nothing else can act on it.
    if (facts === undefined) return type === "DELETED" ? [] : this.#wakeFor([key], "object changed");
    const commands: CoreCommand<Task>[] = [dueChanged];
    const pass = this.#keys.get(key)?.pass;
    const uid = facts.metadata.uid;
    const deleting = type === "DELETED" || facts.metadata.deletionTimestamp !== undefined;
    // Its Admit or Execute call runs on, for nobody: the key is free, the group held until it returns.
    if (deleting && pass?.call !== undefined && pass.uid === uid && pass.call.phase !== "cleanup")
      commands.push(
        { _tag: "Abort", callId: pass.call.id, key, reason: "deleted" },
        deletedDuringCall(key),
        ...this.#orphan(pass),
      );
    else if (
      pass?.call !== undefined &&
      pass.uid === uid &&
      pass.call.phase !== "cleanup" &&
      cancelOf(facts.metadata).cancel !== undefined
    )
      commands.push({ _tag: "Abort", callId: pass.call.id, key, reason: "cancelled" });
    const woken = this.#taskChanged(type, key, facts, false, now);
    if (read !== undefined && woken.some((command) => command.key === key)) this.#decoded.set(object, read);
    return [...commands, ...woken];
  }

  /** A task changed (a watch event, or `own`: our write's result): answers whom to wake. */
  #taskChanged(
    type: "ADDED" | "MODIFIED" | "DELETED",
    key: string,
    facts: TaskFacts,
    own: boolean,
    now: number,
  ): Array<{ readonly _tag: "Wake"; readonly key: string }> {
    const record = this.#record(key);
    const uid = facts.metadata.uid;
    if (record.memory !== undefined && record.memory.uid !== uid) record.memory = undefined;
    if (type === "DELETED") {
      record.memory = undefined;
      record.leftAt = undefined;
      this.#due.delete(key);
    }
    // Someone else's edit: a handler waiting with `retry({ afterMs })` for the world to change need
    // not wait for its poll timer. An error backoff stays (a handler failing in a hot loop).
    const retry = record.memory?.retry;
    const foreign = type === "MODIFIED" && !own && !this.#echoes(record, facts.metadata.resourceVersion);
    if (foreign && retry?.retries === 0 && retry.retryAt !== undefined)
      this.#editMemory(key, uid, { retry: undefined });
    const group = groupKeyOf(facts);
    const peersMustLook = this.#updateMember(key, record, type === "DELETED" ? undefined : facts);
    const woken: Array<{ readonly key: string; readonly reason: TriggerReason }> = [];
    if (type !== "DELETED" && !own) {
      const at = this.#idle(key, uid) ? settledUntil(this.#inputOf(key, facts, now, "", false)) : undefined;
      if (at === undefined) woken.push({ key, reason: type === "ADDED" ? "object added" : "object changed" });
      else this.#due.set(key, at, "ttl");
    }
    if (peersMustLook && group !== undefined)
      for (const peer of this.#unfinishedMembers(group))
        if (peer !== key) woken.push({ key: peer, reason: "peer changed" });
    for (const { key: each, reason } of woken) this.#note(each, reason);
    // A pass woken for a deleted task finds no object, and takes no reason: a new object starts afresh.
    if (type === "DELETED") this.#take(key);
    this.#tidy(key);
    return woken.map(({ key: each }) => wake(each));
  }

  #turn(key: string, now: number): CoreCommand<Task>[] {
    const { kind, read } = this.#options;
    const object = read(key);
    if (object === undefined) return [];
    const record = this.#keys.get(key);
    // Nothing new since this key's last pass (the echo of its own write): no decode, no pass.
    if (record?.onlyChanged && record.leftAt === versionOf(object)) {
      this.#take(key);
      return [];
    }
    const decoded = this.#decoded.get(object) ?? readTask(kind, object);
    if (decoded === undefined) return [undecodable(key, object, kind)];
    const { facts, task } = decoded;
    const uid = facts.metadata.uid;
    this.#serial += 1;
    const runId =
      this.#options.runIdOf?.(now, this.#serial) ?? `${now.toString(36)}-${this.#serial.toString(36)}`;
    if (this.#memoryOf(key, uid)?.released) return [];
    // Deferred while the key is in a pass, or another pass (or a deleted task's call) holds its group:
    // the decode waits for the pass that starts.
    const group = groupKeyOf(facts);
    const admitting =
      !isTerminal(facts.status.state) &&
      facts.status.state !== "InProgress" &&
      facts.metadata.deletionTimestamp === undefined;
    const lockedGroup = group !== undefined && admitting ? group : undefined;
    const held = lockedGroup === undefined ? undefined : this.#groups.get(lockedGroup);
    if (record?.pass !== undefined || (held?.holder ?? key) !== key || (held?.orphans ?? 0) > 0) {
      this.#deferred.add(key);
      return [];
    }
    if (lockedGroup !== undefined) this.#groupRecord(lockedGroup).holder = key;
    this.#decoded.delete(object);
    const kept = this.#memoryOf(key, uid)?.kept;
    this.#editMemory(key, uid, { kept: undefined });
    // The pass decides the key's next due time when it ends.
    this.#due.delete(key);
    const input = this.#inputOf(key, facts, now, runId, true, kept?.known);
    const onlyChanged = this.#keys.get(key)?.onlyChanged === true;
    const pass: Running<Task> = {
      id: this.#serial,
      key,
      uid,
      group,
      lockedGroup,
      runId,
      trigger: this.#take(key),
      onlyChanged,
      started: now,
      createdAt: input.task.createdAt,
      task,
      facts,
      holds: undefined,
      step: start(input),
      object,
      current: facts,
      sawAll: true,
      call: undefined,
      orphaned: false,
      now,
    };
    this.#record(key).pass = pass;
    // A settled task (a resync, an early timer) only needs its TTL due time: no machine run.
    const ttl = settledUntil(input);
    if (ttl !== undefined) {
      this.#ended(pass, TaskEffect.RequeueAfter({ delayMs: ttl - now, reason: "ttl" }), true, undefined);
      return [dueChanged, ...this.#free(pass)];
    }
    if (pass.step.pass.unwritten !== undefined) pass.holds = kept?.callId;
    return [
      { _tag: "Started", pass, step: pass.step, kept: kept?.callId },
      ...this.#advance(pass, pass.step),
    ];
  }

  #answered(input: Extract<CoreInput<Task>, { _tag: "Answered" }>): CoreCommand<Task>[] {
    const { answer: result, written } = input;
    const pass = this.#keys.get(input.pass.key)?.pass;
    if (pass !== input.pass || pass.step._tag !== "Request") return [];
    pass.now = input.now;
    const { request } = pass.step;
    const commands: CoreCommand<Task>[] = [];
    if (written !== undefined && result._tag === "Done" && request._tag !== "RunPhase") {
      // A DELETE or a status patch (no resourceVersion precondition) may return others' changes.
      if (
        request._tag === "DeleteTask" ||
        carriesForeignChange(pass.object, written, request._tag !== "PatchStatus")
      )
        pass.sawAll = false;
      pass.object = written;
      pass.current = factsAfterWrite(pass.current, request, metaOf(written) as { resourceVersion: string });
      // The result goes into the driver's copy while it holds the task (none: a deleted task's ghost).
      // Our finalizer was the last one of a deleting task: the object is gone now, even if the
      // driver's copy has not heard of it yet.
      if (this.#exists(pass)) {
        commands.push({ _tag: "Store", object: written });
        const left = pass.current.metadata.finalizers?.length ?? 0;
        if (request._tag === "RemoveFinalizer" && left === 0 && pass.current.metadata.deletionTimestamp)
          this.#editMemory(pass.key, pass.uid, { released: true });
        commands.push(...this.#taskChanged("MODIFIED", pass.key, pass.current, true, pass.now));
      }
    }
    return [...commands, ...this.#advance(pass, answer(pass.step, result))];
  }

  #returned(input: Extract<CoreInput<Task>, { _tag: "Returned" }>): CoreCommand<Task>[] {
    const { callId, reply, now } = input;
    // The driver hands back the pass the core gave it in `Call`.
    const pass = input.pass as Running<Task>;
    if (pass.call?.id !== callId || pass.step._tag !== "Request") return [];
    const { phase, attempt } = pass.call;
    pass.call = undefined;
    pass.now = now;
    const defect = reply.kind === "defect" ? reply : undefined;
    const current = !pass.orphaned && this.#keys.get(pass.key)?.pass === pass;
    const stepInput = pass.step.pass.snapshot.context.input;
    const outcome = defect === undefined ? (reply as PhaseOutcome) : defectOutcome(stepInput, phase, defect);
    // A deleted task's call reports its defect too (its phase is over, so it counts for nothing).
    const report = defect !== undefined && (!current || this.#countDefect(pass, phase, defect));
    const ended = {
      _tag: "CallEnded",
      pass,
      callId,
      phase,
      attempt,
      reply,
      outcome,
      current,
      report,
    } as const;
    if (!current) {
      const group = pass.orphaned && pass.group !== undefined ? this.#groups.get(pass.group) : undefined;
      if (group !== undefined) {
        group.orphans -= 1;
        this.#tidyGroup(pass.group);
      }
      return [...this.#wakeDeferred(), ended];
    }
    // The pass goes on over the newest copy of its task (a label edit meanwhile moved its version).
    const fresh = this.#options.read(pass.key);
    if (fresh !== undefined && uidOf(fresh) === pass.uid && fresh !== pass.object) {
      if (carriesForeignChange(pass.object, fresh, false)) pass.sawAll = false;
      pass.object = fresh;
    }
    pass.holds = callId;
    // A cancel that arrived during the call ends the pass at its next gate, not at the next pass.
    const freshFacts = readFacts(this.#options.kind, pass.object);
    const { cancel } = freshFacts === undefined ? {} : cancelOf(freshFacts.metadata);
    const answered =
      defect === undefined
        ? Answer.Returned({ outcome, now, ...(cancel === undefined ? {} : { cancel }) })
        : Answer.Threw({ defect, now });
    return [ended, ...this.#advance(pass, answer(pass.step, answered))];
  }

  // ---- the pass --------------------------------------------------------------------------------

  /** The commands of the pass's next step: a request to perform, a call, or its end. */
  #advance(pass: Running<Task>, step: Step): CoreCommand<Task>[] {
    pass.step = step;
    if (step.pass.unwritten === undefined) pass.holds = undefined;
    switch (step._tag) {
      case "Request": {
        const { request } = step;
        if (request._tag !== "RunPhase") {
          const carriesResult = step.pass.unwritten !== undefined;
          return [{ _tag: "Perform", pass, request, object: pass.object, carriesResult }];
        }
        return this.#call(pass, request.phase);
      }
      case "End": {
        this.#ended(pass, step.end, this.#exists(pass), pass.sawAll ? versionOf(pass.object) : undefined);
        const ended = { _tag: "Ended", pass, step, how: "ended", end: step.end, holds: pass.holds } as const;
        return [ended, dueChanged, ...this.#free(pass)];
      }
      case "Stopped": {
        const record = this.#record(pass.key);
        record.leftAt = undefined;
        if (step.stopped._tag === "Gone") {
          // All but its release is forgotten (the watch has yet to say the task is gone).
          const released = this.#memoryOf(pass.key, pass.uid)?.released;
          if (record.memory?.uid === pass.uid)
            record.memory = released ? { uid: pass.uid, released } : undefined;
          return [{ _tag: "Ended", pass, step, how: "gone", holds: undefined }, ...this.#free(pass)];
        }
        // Keep its unwritten result, and back off.
        const memory = this.#memoryOf(pass.key, pass.uid);
        let retryInMs: number | undefined;
        if (this.#exists(pass) && !memory?.released) {
          const { config } = this.#options;
          const retries = memory?.retry?.retries ?? 0;
          const unwritten = step.pass.unwritten;
          this.#editMemory(pass.key, pass.uid, {
            retry: { retries: retries + 1 },
            ...(unwritten === undefined ? {} : { kept: { known: unwritten, callId: pass.holds } }),
          });
          retryInMs = this.#stretch(Math.max(config.minRequeueMs, backoffDelayMs(config, retries)));
          this.#due.set(pass.key, pass.now + retryInMs, "backoff");
        }
        const retry = retryInMs === undefined ? {} : { retryInMs };
        const ended = { _tag: "Ended", pass, step, how: "aborted", holds: pass.holds, ...retry } as const;
        return [ended, dueChanged, ...this.#free(pass)];
      }
    }
  }

  /**
   * The pass calls a handler phase: its key stays busy until the pass ends. Admission stays serialised
   * while Admit runs; past Admit the group is free.
   */
  #call(pass: Running<Task>, phase: PhaseOf): CoreCommand<Task>[] {
    this.#callSerial += 1;
    const callId = this.#callSerial;
    const previous = this.#memoryOf(pass.key, pass.uid)?.attempts;
    const attempts =
      previous?.phase === phase
        ? { ...previous, calls: previous.calls + 1 }
        : { phase, calls: 1, defects: 0, reported: new Set<string>() };
    this.#editMemory(pass.key, pass.uid, { attempts });
    pass.call = { id: callId, phase, attempt: attempts.calls };
    const call: CoreCommand<Task> = { _tag: "Call", pass, callId, phase, attempt: attempts.calls };
    return phase === "admit" ? [call] : [...this.#unlock(pass), call];
  }

  /** Counts a defect of the pass's call; answers whether its kind is new in its task's phase. */
  #countDefect(pass: Running<Task>, phase: Phase, defect: HandlerDefect): boolean {
    const attempts = this.#memoryOf(pass.key, pass.uid)?.attempts;
    if (attempts === undefined || attempts.phase !== phase) return true;
    attempts.defects += 1;
    if (attempts.reported.has(defect.signature)) return false;
    attempts.reported.add(defect.signature);
    return true;
  }

  /**
   * The pass ended with `end`. `left`: the version its own writes left the object at, when it saw
   * everything in it; a later change event showing that version is then an echo.
   */
  #ended(pass: Running<Task>, end: PassEnd, exists: boolean, left: string | undefined): void {
    const record = this.#record(pass.key);
    record.leftAt = exists ? left : undefined;
    const memory = this.#memoryOf(pass.key, pass.uid);
    const next = nextRetryState(memory?.retry ?? noRetry, end, pass.now);
    // Nothing to retry: the phase is over (or waits for a change), so its next call is a first.
    if (next === noRetry || !exists)
      this.#editMemory(pass.key, pass.uid, { retry: undefined, attempts: undefined });
    else this.#editMemory(pass.key, pass.uid, { retry: next });
    // A pass of a task that is gone or released decides no due time: the name may already hold a new
    // object whose due time is not this pass's to drop.
    if (!exists || memory?.released) return;
    if (end._tag !== "RequeueAfter") this.#due.delete(pass.key);
    else {
      const delay = end.reason === "backoff" ? this.#stretch(end.delayMs) : end.delayMs;
      this.#due.set(pass.key, pass.now + delay, end.reason);
    }
  }

  /** A backoff jittered, never shortened (tasks that failed together do not retry in lockstep). */
  #stretch(delayMs: number): number {
    return Math.max(delayMs, this.#options.jitter?.(delayMs) ?? delayMs);
  }

  /** The pass is over: its key is free, and the group it holds. */
  #free(pass: Running<Task>): CoreCommand<Task>[] {
    const record = this.#keys.get(pass.key);
    if (record?.pass === pass) record.pass = undefined;
    const unlocked = this.#unlock(pass);
    this.#tidy(pass.key);
    return unlocked;
  }

  /** The task was deleted during the pass's call: its key is free now; its group waits for the call. */
  #orphan(pass: Running<Task>): CoreCommand<Task>[] {
    const record = this.#record(pass.key);
    record.pass = undefined;
    pass.orphaned = true;
    this.#deferred.delete(pass.key);
    if (pass.group !== undefined) this.#groupRecord(pass.group).orphans += 1;
    const held = pass.lockedGroup !== undefined && this.#groups.get(pass.lockedGroup)?.holder === pass.key;
    const unlocked = held ? this.#unlock(pass) : [];
    this.#note(pass.key, "object changed");
    return [...unlocked, wake(pass.key)];
  }

  /** Frees the group the pass holds; answers the deferred keys that may run now. */
  #unlock(pass: Running<Task>): CoreCommand<Task>[] {
    const group = pass.lockedGroup === undefined ? undefined : this.#groups.get(pass.lockedGroup);
    if (group?.holder === pass.key) group.holder = undefined;
    this.#tidyGroup(pass.lockedGroup);
    pass.lockedGroup = undefined;
    return this.#wakeDeferred();
  }

  #wakeDeferred(): CoreCommand<Task>[] {
    const woken: CoreCommand<Task>[] = [];
    for (const key of this.#deferred) {
      if (this.#keys.get(key)?.pass !== undefined) continue;
      this.#deferred.delete(key);
      this.#note(key, "deferred");
      woken.push(wake(key));
    }
    return woken;
  }

  // ---- the records -----------------------------------------------------------------------------

  /** The input of a pass over `facts` at `now`, with the task's retry state; takes nothing. */
  #inputOf(
    key: string,
    facts: TaskFacts,
    now: number,
    runId: string,
    peers: boolean,
    known?: KnownResult,
  ): PassInput {
    const { config, supported } = this.#options;
    const memory = this.#memoryOf(key, facts.metadata.uid);
    const retry = memory?.retry ?? noRetry;
    const attempts = memory?.attempts;
    return {
      task: observe(facts, supported),
      peers: peers ? peersOf(facts, this.#peers(groupKeyOf(facts), key), config.finalizer) : [],
      now,
      runId,
      retries: retry.retries,
      ...(retry.retryAt === undefined ? {} : { retryAt: retry.retryAt }),
      ...(attempts === undefined || attempts.defects === 0
        ? {}
        : { handlerDefects: { phase: attempts.phase, count: attempts.defects } }),
      ...(known === undefined ? {} : { known }),
      config,
    };
  }

  /** The facts of a group's tasks but `except` (the caller's own task, decoded already). */
  #peers(group: string | undefined, except: string): TaskFacts[] {
    return this.#members(group).flatMap((member) => {
      const object = member === except ? undefined : this.#options.read(member);
      const facts = object === undefined ? undefined : readFacts(this.#options.kind, object);
      return facts === undefined ? [] : [facts];
    });
  }

  /** No pass of `key` runs or waits, and no result is kept for its task. */
  #idle(key: string, uid: string): boolean {
    return (
      this.#keys.get(key)?.pass === undefined &&
      !this.#deferred.has(key) &&
      this.#memoryOf(key, uid)?.kept === undefined
    );
  }

  /** A change event at or before the version our last pass left is our own write's (no one else's edit). */
  #echoes(record: KeyRecord<Task>, resourceVersion: string): boolean {
    if (record.leftAt === undefined) return false;
    const order = compareResourceVersions(resourceVersion, record.leftAt);
    return order !== undefined && order <= 0;
  }

  /** Why `key` was woken: the first reason since its last pass is the one its pass reports. */
  #note(key: string, reason: TriggerReason): void {
    const record = this.#record(key);
    const first = record.reason === undefined;
    if (first) record.reason = reason;
    // "deferred" re-runs whatever woke the key while it was busy: it adds nothing new.
    if (reason === "object changed" && first) record.onlyChanged = true;
    else if (reason !== "object changed" && reason !== "deferred") record.onlyChanged = undefined;
  }

  /** The reason of the pass that starts now; a pass with none noted re-derives, as a resync does. */
  #take(key: string): TriggerReason {
    const record = this.#keys.get(key);
    const reason = record?.reason ?? "resync";
    if (record !== undefined) {
      record.reason = undefined;
      record.onlyChanged = undefined;
    }
    return reason;
  }

  #wakeFor(keys: Iterable<string>, reason: TriggerReason): CoreCommand<Task>[] {
    const commands: CoreCommand<Task>[] = [];
    for (const key of keys) {
      this.#note(key, reason);
      commands.push(wake(key));
    }
    return commands;
  }

  /**
   * Records `key` in its group with its facts (undefined: the task is gone). Answers whether what its
   * peers' admission reads of it changed (it appeared, went, or changed state, deleting or activity;
   * `expedited` follows from the spec and its name, which do not change).
   */
  #updateMember(key: string, record: KeyRecord<Task>, facts: TaskFacts | undefined): boolean {
    const previous = record.group;
    const group = facts === undefined ? undefined : groupKeyOf(facts);
    if (facts === undefined || group === undefined) {
      if (previous === undefined) return facts === undefined;
      this.#leave(previous, key);
      record.group = undefined;
      record.signature = undefined;
      record.finished = undefined;
      return true;
    }
    const signature = signatureOf(facts);
    if (previous === group && record.signature === signature) return false;
    record.signature = signature;
    record.finished = isTerminal(facts.status.state);
    if (previous !== group) {
      if (previous !== undefined) this.#leave(previous, key);
      record.group = group;
      const members = this.#groups.get(group)?.members;
      if (members === undefined) this.#groups.set(group, { members: key, orphans: 0 });
      else if (typeof members === "string") this.#groupRecord(group).members = new Set([members, key]);
      else members.add(key);
    }
    return true;
  }

  #leave(group: string, key: string): void {
    const record = this.#groups.get(group);
    if (record === undefined) return;
    const { members } = record;
    if (members === key) record.members = new Set();
    else if (typeof members !== "string") {
      members.delete(key);
      if (members.size === 1) record.members = members.values().next().value ?? "";
    }
    this.#tidyGroup(group);
  }

  #members(group: string | undefined): ReadonlyArray<string> {
    const members = group === undefined ? undefined : this.#groups.get(group)?.members;
    return members === undefined ? [] : typeof members === "string" ? [members] : [...members];
  }

  /** Members not yet Succeeded, Failed or Rejected. */
  #unfinishedMembers(group: string): ReadonlyArray<string> {
    return this.#members(group).filter((key) => this.#keys.get(key)?.finished !== true);
  }

  #record(key: string): KeyRecord<Task> {
    const record = this.#keys.get(key) ?? {};
    this.#keys.set(key, record);
    return record;
  }

  #groupRecord(group: string): GroupRecord {
    const record = this.#groups.get(group) ?? { members: new Set(), orphans: 0 };
    this.#groups.set(group, record);
    return record;
  }

  #memoryOf(key: string, uid: string): TaskMemory | undefined {
    const memory = this.#keys.get(key)?.memory;
    return memory?.uid === uid ? memory : undefined;
  }

  /** Changes the memory of task `uid` (unless the name holds another task now); `undefined` clears a field. */
  #editMemory(
    key: string,
    uid: string,
    change: Omit<{ [F in keyof TaskMemory]?: TaskMemory[F] | undefined }, "uid">,
  ): void {
    const record = this.#record(key);
    if (record.memory !== undefined && record.memory.uid !== uid) return;
    const fields = Object.entries({ ...record.memory, ...change, uid }).filter(
      ([, value]) => value !== undefined,
    );
    record.memory = fields.length === 1 ? undefined : (Object.fromEntries(fields) as unknown as TaskMemory);
  }

  /** Drops a key's record when nothing is left in it. */
  #tidy(key: string): void {
    const record = this.#keys.get(key);
    if (record !== undefined && Object.values(record).every((value) => value === undefined))
      this.#keys.delete(key);
  }

  #tidyGroup(group: string | undefined): void {
    const record = group === undefined ? undefined : this.#groups.get(group);
    if (record === undefined || record.holder !== undefined || record.orphans > 0) return;
    if (typeof record.members !== "string" && record.members.size === 0) this.#groups.delete(group as string);
  }

  /** Whether the driver still holds this pass's task (a pass can end after its task's DELETED change). */
  #exists(pass: Running<Task>): boolean {
    return uidOf(this.#options.read(pass.key)) === pass.uid;
  }
}

const deletedDuringCall = (key: string): CoreCommand<never> => ({
  _tag: "Log",
  level: "info",
  message: "task deleted during its handler call; the call runs to its end, its result will be discarded",
  fields: { task: key },
});

/** Why a task cannot be acted on at all: too large even for its stub, or metadata that does not decode. */
const undecodable = <Task>(key: string, object: TaskObject, kind: TaskKind<Task>): CoreCommand<Task> => {
  const oversized = oversizedOf(object);
  if (oversized !== undefined)
    return {
      _tag: "Log",
      level: "error",
      message:
        "task too large to act on: even its finalizers and annotations exceed half the limit; left alone",
      fields: { task: key, reason: tooLargeReason(oversized) },
    };
  // Not even its metadata decodes: nothing can be written to it. (A bad spec or status is handled by
  // the machine: the task is Rejected with ERR_INVALID_TASK naming the fields.)
  const decoded = kind.decode(object);
  const errors = decoded.ok ? [] : decoded.failure.errors;
  return {
    _tag: "Log",
    level: "error",
    message: "task metadata does not decode; fix the object",
    fields: { task: key, errors: errors.join("; ") },
  };
};
