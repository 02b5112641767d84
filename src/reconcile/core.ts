/**
 * The per-key core: every decision a controller makes beside the machine, as one Elm-style update.
 * `step(input)` takes what happened — a watched change, a key's turn in the queue, a driver's answer to
 * a request, a handler's return, a related object's change, a resync — and answers the commands that
 * follow: perform a request, call or abort a handler, wake a key, look at the due times again, store a
 * written object, log. The drivers (the cluster runtime, the memory interpreter, simulate()) perform
 * commands and feed their answers back; they decide nothing, so every rule below runs in the
 * simulation exactly as on a cluster.
 *
 * Rules (the scheduler's, scheduler.ts, plus these):
 * - a turn whose object is where the key's last pass left it, woken only by changes of that object, is
 *   an echo of our own write: skipped before decoding (docs/design-notes.md §5);
 * - a change's decode is handed to the pass it wakes, kept through deferred turns (a newer copy is
 *   decoded again);
 * - a settled task (settled.ts) gets its TTL due time, not a machine run;
 * - a write's result is the pass's object from then on; one that carries someone else's change makes
 *   the next event of that version run a pass; our removal of a deleting task's last finalizer
 *   releases the task while the driver's copy still holds it;
 * - a handler's return resumes its pass over the driver's newest copy of the task (same UID).
 * The lifecycle properties (test/property/checks.ts, "work saved") fail when one of these is broken.
 */
import type { PassEnd } from "../effects/task-effect.ts";
import { TaskEffect } from "../effects/task-effect.ts";
import type { PhaseOutcome } from "../machine/types.ts";
import { factsAfterWrite } from "./facts-after-write.ts";
import { carriesForeignChange, type TaskObject } from "./foreign-change.ts";
import { defectOutcome, type HandlerReply } from "./handler-defect.ts";
import { oversizedOf, tooLargeReason } from "./oversized-task.ts";
import { Answer, answer, type PassRequest, type Step, start } from "./pass.ts";
import {
  groupKeyOf,
  type Kept,
  type PassHold,
  type SchedulerOptions,
  TaskScheduler,
  type Wake,
} from "./scheduler.ts";
import { settledUntil } from "./settled.ts";
import { settledFacts } from "./settled-facts.ts";
import { readFacts, readTask, type TaskFacts, type TaskKind } from "./task-kind.ts";
import type { TriggerReason } from "./trigger-reason.ts";

export type { TaskObject } from "./foreign-change.ts";

export interface CoreOptions<Task> extends SchedulerOptions {
  readonly kind: TaskKind<Task>;
  /** The driver's copy of a task (its cache, read-your-writes), undefined when it has none. */
  readonly read: (key: string) => TaskObject | undefined;
  /** The reconcile ID of a pass started at `now` (the `serial`th pass of this core). */
  readonly runIdOf?: (now: number, serial: number) => string;
}

/** What happened. */
export type CoreInput =
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
  /** The answer to a `Perform`; `written`: the object a successful write returned. */
  | {
      readonly _tag: "Answered";
      readonly pass: number;
      readonly answer: Answer;
      readonly now: number;
      readonly written?: TaskObject;
    }
  /** A handler call (`Call`) returned, or threw. */
  | { readonly _tag: "Returned"; readonly callId: number; readonly reply: HandlerReply; readonly now: number }
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
  /** The call's task was deleted: signal the handler (the call runs on; its result will be discarded). */
  | { readonly _tag: "Abort"; readonly callId: number; readonly key: string }
  /** Put a write's result into the driver's copy (read-your-writes). */
  | { readonly _tag: "Store"; readonly object: TaskObject }
  /** The earliest due time may have changed: sleep until `nextDue()`. */
  | { readonly _tag: "DueChanged" }
  | {
      readonly _tag: "Log";
      readonly level: "info" | "error";
      readonly message: string;
      readonly fields: Readonly<Record<string, unknown>>;
    }
  /** A pass started (`kept`: the result kept from an earlier pass that it was handed). */
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

type PhaseOf = Extract<PassRequest, { readonly _tag: "RunPhase" }>["phase"];

interface KeptCall extends Kept {
  readonly callId: number | undefined;
}

interface Running<Task> extends PassView<Task>, PassHold {
  lockedGroup: string | undefined;
  holds: number | undefined;
  step: Step;
  /** The object as last read or written, and its facts. */
  object: TaskObject;
  current: TaskFacts;
  /** No one else's change came back merged into a write's result: its version is where the pass left it. */
  sawAll: boolean;
  call: { readonly id: number; readonly phase: PhaseOf; readonly attempt: number } | undefined;
  /** The driver's clock at the pass's last input: its due times count from there. */
  now: number;
}

const metaOf = (object: TaskObject): Record<string, unknown> =>
  (typeof object.metadata === "object" && object.metadata !== null ? object.metadata : {}) as Record<
    string,
    unknown
  >;
const versionOf = (object: TaskObject): string => String(metaOf(object).resourceVersion ?? "");
const uidOf = (object: TaskObject | undefined): string | undefined =>
  object === undefined ? undefined : String(metaOf(object).uid ?? "");

type Read<Task> = NonNullable<ReturnType<typeof readTask<Task>>>;

export class TaskCore<Task> {
  readonly #options: CoreOptions<Task>;
  readonly #scheduler: TaskScheduler<KeptCall>;
  /** Passes in progress (or waiting for their handler call), by id. */
  readonly #passes = new Map<number, Running<Task>>();
  /** Handler calls in flight: their pass, by call id. */
  readonly #calls = new Map<number, Running<Task>>();
  /** A change's decode, for the pass it wakes (keyed by the object: a newer copy misses). */
  readonly #decoded = new WeakMap<TaskObject, Read<Task>>();
  #serial = 0;

  constructor(options: CoreOptions<Task>) {
    this.#options = options;
    this.#scheduler = new TaskScheduler(options);
  }

  step(input: CoreInput): CoreCommand<Task>[] {
    switch (input._tag) {
      case "Changed":
        return this.#changed(input);
      case "Turn":
        return this.#turn(input.key, input.now);
      case "Answered":
        return this.#answered(input);
      case "Returned":
        return this.#returned(input.callId, input.reply, input.now);
      case "RelatedChanged":
        return this.#wakeFor(this.#scheduler.groups.unfinishedMembers(input.group), "related object changed");
      case "Resync":
        return this.#wakeFor(input.keys, "resync");
    }
  }

  // ---- queries the drivers' clocks and checks need ----------------------------------------------

  /** The due times (the driver's clock): sleep until `nextDue()`, then wake the keys `takeDue` answers. */
  get due(): Pick<TaskScheduler, "nextDue" | "takeDue" | "dueCount"> {
    return this.#scheduler;
  }

  /** Handler calls in flight (of deleted tasks among them), and tasks remembered between passes. */
  get counts(): TaskScheduler["counts"] {
    return this.#scheduler.counts;
  }

  /** The calls whose results are kept for a later pass (a crash loses them). */
  keptCalls(): number[] {
    return this.#scheduler
      .unwrittenResults()
      .flatMap((kept) => (kept.callId === undefined ? [] : [kept.callId]));
  }

  /**
   * The requests a pass over `key`'s object would make at `at`, when nothing runs, waits or is kept for
   * it: the "no-op reconcile" check (undefined otherwise). Performs nothing.
   */
  wouldRequest(key: string, at: number): ReadonlyArray<PassRequest | PassEnd> | undefined {
    const scheduler = this.#scheduler;
    const object = this.#options.read(key);
    const facts = object === undefined ? undefined : readFacts(this.#options.kind, object);
    if (facts === undefined || !scheduler.idle(key, facts.metadata.uid)) return undefined;
    const input = scheduler.inputOf(facts, this.#peers(groupKeyOf(facts), key), at, "check");
    const effects: Array<PassRequest | PassEnd> = [];
    let step = start(input);
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
    const settled =
      type !== "DELETED" && !this.#scheduler.groups.has(key) ? settledFacts(kind, object) : undefined;
    const read = settled === undefined ? (this.#decoded.get(object) ?? readTask(kind, object)) : undefined;
    const facts = settled ?? read?.facts;
    // Unreadable metadata: its turn logs why; nothing else can act on it.
    if (facts === undefined) return type === "DELETED" ? [] : this.#wakeFor([key], "object changed");
    const { wake, orphaned } = this.#scheduler.changed({ type, key, facts, now });
    if (read !== undefined && wake.some((woken) => woken.key === key)) this.#decoded.set(object, read);
    const commands: CoreCommand<Task>[] = [{ _tag: "DueChanged" }];
    if (orphaned !== undefined) {
      commands.push(
        { _tag: "Abort", callId: orphaned, key },
        {
          _tag: "Log",
          level: "info",
          message:
            "task deleted during its handler call; the call runs to its end, its result will be discarded",
          fields: { task: key },
        },
      );
    }
    return [...commands, ...wakes(wake)];
  }

  #turn(key: string, now: number): CoreCommand<Task>[] {
    const { kind, read } = this.#options;
    const scheduler = this.#scheduler;
    const object = read(key);
    if (object === undefined) return [];
    // Nothing new since this key's last pass (the echo of its own write): no decode, no pass.
    if (scheduler.skipsEcho(key, versionOf(object))) return [];
    const decoded = this.#decoded.get(object) ?? readTask(kind, object);
    if (decoded === undefined) return [undecodable(key, object, kind)];
    const { facts, task } = decoded;
    const group = groupKeyOf(facts);
    this.#serial += 1;
    const runId =
      this.#options.runIdOf?.(now, this.#serial) ?? `${now.toString(36)}-${this.#serial.toString(36)}`;
    const started = scheduler.start(key, facts, () => this.#peers(group, key), now, runId);
    // Deferred (the key is in a pass already, or another pass holds its admission group) or released:
    // the decode waits for the pass that starts.
    if (started === undefined) return [];
    this.#decoded.delete(object);
    // A settled task (a resync, an early timer) only needs its TTL due time: no machine run.
    const ttl = settledUntil(started.input);
    if (ttl !== undefined) {
      const end = TaskEffect.RequeueAfter({ delayMs: ttl - now, reason: "ttl" });
      return [{ _tag: "DueChanged" }, ...wakes(scheduler.ended(started, end, now, true))];
    }
    const step = start(started.input);
    const kept = started.kept?.callId;
    const pass: Running<Task> = {
      id: this.#serial,
      key,
      uid: started.uid,
      group: started.group,
      lockedGroup: started.lockedGroup,
      runId,
      trigger: started.trigger,
      onlyChanged: started.onlyChanged,
      started: now,
      createdAt: started.input.task.createdAt,
      task,
      facts,
      holds: step.pass.unwritten === undefined ? undefined : kept,
      step,
      object,
      current: facts,
      sawAll: true,
      call: undefined,
      now,
    };
    this.#passes.set(pass.id, pass);
    return [{ _tag: "Started", pass, step, kept }, ...this.#advance(pass, step)];
  }

  #answered(input: Extract<CoreInput, { _tag: "Answered" }>): CoreCommand<Task>[] {
    const { answer: result, written } = input;
    const pass = this.#passes.get(input.pass);
    if (pass === undefined || pass.step._tag !== "Request") return [];
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
      const inCache = uidOf(this.#options.read(pass.key)) === pass.uid;
      commands.push({ _tag: "Store", object: written });
      // Our finalizer was the last one of a deleting task: the object is gone now, even if the
      // driver's copy has not heard of it yet. (If it has, there is no copy left to guard, and its
      // DELETED change told the scheduler.)
      if (inCache) {
        const left = pass.current.metadata.finalizers?.length ?? 0;
        if (request._tag === "RemoveFinalizer" && left === 0 && pass.current.metadata.deletionTimestamp)
          this.#scheduler.release(pass.uid);
        const own = this.#scheduler.changed({
          type: "MODIFIED",
          key: pass.key,
          facts: pass.current,
          own: true,
        });
        commands.push(...wakes(own.wake));
      }
    }
    return [...commands, ...this.#advance(pass, answer(pass.step, result))];
  }

  #returned(callId: number, reply: HandlerReply, now: number): CoreCommand<Task>[] {
    const pass = this.#calls.get(callId);
    this.#calls.delete(callId);
    if (pass === undefined || pass.call?.id !== callId || pass.step._tag !== "Request") return [];
    const { phase, attempt } = pass.call;
    pass.call = undefined;
    pass.now = now;
    const defect = reply.kind === "defect" ? reply : undefined;
    const returned = this.#scheduler.returned(pass, callId, defect);
    const input = pass.step.pass.snapshot.context.input;
    const outcome = defect === undefined ? (reply as PhaseOutcome) : defectOutcome(input, phase, defect);
    const ended: CoreCommand<Task> = {
      _tag: "CallEnded",
      pass,
      callId,
      phase,
      attempt,
      reply,
      outcome,
      current: returned.current,
      report: returned.report,
    };
    if (!returned.current) {
      this.#passes.delete(pass.id);
      return [...wakes(returned.wake), ended];
    }
    // The pass goes on over the newest copy of its task (a label edit meanwhile moved its version).
    const fresh = this.#options.read(pass.key);
    if (fresh !== undefined && uidOf(fresh) === pass.uid && fresh !== pass.object) {
      if (carriesForeignChange(pass.object, fresh, false)) pass.sawAll = false;
      pass.object = fresh;
    }
    pass.holds = callId;
    const answered = defect === undefined ? Answer.Returned({ outcome, now }) : Answer.Threw({ defect, now });
    return [...wakes(returned.wake), ended, ...this.#advance(pass, answer(pass.step, answered))];
  }

  // ---- the pass --------------------------------------------------------------------------------

  /** The commands of the pass's next step: a request to perform, a call, or its end. */
  #advance(pass: Running<Task>, step: Step): CoreCommand<Task>[] {
    const scheduler = this.#scheduler;
    pass.step = step;
    if (step.pass.unwritten === undefined) pass.holds = undefined;
    switch (step._tag) {
      case "Request": {
        const { request } = step;
        if (request._tag !== "RunPhase")
          return [
            {
              _tag: "Perform",
              pass,
              request,
              object: pass.object,
              carriesResult: step.pass.unwritten !== undefined,
            },
          ];
        const { callId, attempt, lockedGroup, wake } = scheduler.calling(pass, request.phase);
        pass.lockedGroup = lockedGroup;
        pass.call = { id: callId, phase: request.phase, attempt };
        this.#calls.set(callId, pass);
        return [...wakes(wake), { _tag: "Call", pass, callId, phase: request.phase, attempt }];
      }
      case "End": {
        this.#passes.delete(pass.id);
        const exists = this.#exists(pass);
        const left = pass.sawAll ? versionOf(pass.object) : undefined;
        const wake = scheduler.ended(pass, step.end, pass.now, exists, left);
        const ended: CoreCommand<Task> = {
          _tag: "Ended",
          pass,
          step,
          how: "ended",
          end: step.end,
          holds: pass.holds,
        };
        return [ended, { _tag: "DueChanged" }, ...wakes(wake)];
      }
      case "Stopped": {
        this.#passes.delete(pass.id);
        if (step.stopped._tag === "Gone")
          return [
            { _tag: "Ended", pass, step, how: "gone", holds: undefined },
            ...wakes(scheduler.gone(pass)),
          ];
        const unwritten = step.pass.unwritten;
        const kept = unwritten === undefined ? undefined : { known: unwritten, callId: pass.holds };
        const { delayMs, wake } = scheduler.stopped(pass, kept, this.#exists(pass), pass.now);
        return [
          {
            _tag: "Ended",
            pass,
            step,
            how: "aborted",
            holds: pass.holds,
            ...(delayMs === undefined ? {} : { retryInMs: delayMs }),
          },
          { _tag: "DueChanged" },
          ...wakes(wake),
        ];
      }
    }
  }

  /** Whether the driver still holds this pass's task (a pass can end after its task's DELETED change). */
  #exists(pass: Running<Task>): boolean {
    return uidOf(this.#options.read(pass.key)) === pass.uid;
  }

  /** The facts of a group's tasks but `except` (the caller's own task, decoded already). */
  #peers(group: string | undefined, except: string): TaskFacts[] {
    if (group === undefined) return [];
    return this.#scheduler.groups.members(group).flatMap((member) => {
      if (member === except) return [];
      const object = this.#options.read(member);
      const facts = object === undefined ? undefined : readFacts(this.#options.kind, object);
      return facts === undefined ? [] : [facts];
    });
  }

  #wakeFor(keys: Iterable<string>, reason: TriggerReason): CoreCommand<Task>[] {
    const commands: CoreCommand<Task>[] = [];
    for (const key of keys) {
      this.#scheduler.note(key, reason);
      commands.push({ _tag: "Wake", key });
    }
    return commands;
  }
}

const wakes = (wake: ReadonlyArray<Wake>): Array<{ readonly _tag: "Wake"; readonly key: string }> =>
  wake.map(({ key }) => ({ _tag: "Wake", key }));

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
