/**
 * The controller, simulated: the pass protocol (src/reconcile/pass.ts) and the scheduler
 * (src/reconcile/scheduler.ts) of the Kubernetes runtime, with requests performed against
 * `MemoryApiServer` under a `FakeClock`, one at a time. It can crash between any two requests, park a
 * pass on a hanging handler call, fail a status write, and it records everything property tests
 * check: handler calls, writes, Events and passes (records.ts).
 *
 * A crash loses the scheduler's memory; the restart lists every object, as an informer would. Echoes
 * of our own writes wake no pass of their own task (as the runtime's informer drops them), but do wake
 * its peers when what they read changed.
 *
 * Over 400 lines, knowingly: the commands tests drive (crashes, parked and orphaned calls, faults)
 * and the driving they disturb share one ready queue and one scheduler, and splitting them would hand
 * those around. The writes themselves are performed in memory-writes.ts; the due times are the
 * scheduler's (advancing the fake clock runs the keys it answers due).
 */
import { isTerminal } from "../../api/status.ts";
import type { PassEnd, TaskEffect } from "../../effects/task-effect.ts";
import type { LifecycleConfig, PassInput, Phase, PhaseOutcome } from "../../machine/types.ts";
import {
  defectOf,
  defectOutcome,
  type HandlerDefect,
  type HandlerReply,
} from "../../reconcile/handler-defect.ts";
import {
  Answer,
  answer,
  driveSync,
  type Pass,
  type PassRequest,
  type Step,
  start,
} from "../../reconcile/pass.ts";
import { groupKeyOf, type Kept, type PassHold, TaskScheduler, type Wake } from "../../reconcile/scheduler.ts";
import { undecodedChangeFacts } from "../../reconcile/settled-facts.ts";
import { readFacts, type TaskFacts, type TaskKind } from "../../reconcile/task-kind.ts";
import { type MemoryApiServer, storedKeyOf, type WatchEvent } from "./api-server.ts";
import type { FakeClock } from "./clock.ts";
import { MemoryWrites } from "./memory-writes.ts";
import type { JsonObject } from "./merge-patch.ts";
import { answerOf } from "./perform-write.ts";
import type { Behaviour, HandlerCall, PassRecord, RecordedEvent, WriteRecord } from "./records.ts";

export type { Behaviour, HandlerCall, PassRecord, RecordedEvent, WriteRecord } from "./records.ts";

export interface SimulatedControllerOptions<Task> {
  readonly kind: TaskKind<Task>;
  readonly config: LifecycleConfig;
  /** Config members that have a handler. */
  readonly supported: ReadonlyArray<string>;
  readonly server: MemoryApiServer;
  readonly clock: FakeClock;
  readonly behaviour: (task: TaskFacts, phase: Phase, call: CallInfo) => Behaviour;
  /** A handler defect of a kind new for its task phase (the runtime logs these at ERROR). */
  readonly onDefect?: (report: {
    readonly call: HandlerCall;
    readonly reconcileID: string;
    readonly defect: HandlerDefect;
  }) => void;
}

/** What the driver knows about a handler call besides its task: what a handler context is built from. */
export interface CallInfo {
  /** 1 for the first call of this phase (the scheduler's count). */
  readonly attempt: number;
  readonly reconcileID: string;
  /** Aborts when the call is abandoned: its task deleted while it ran, or the controller crashed. */
  readonly signal: AbortSignal;
}

/** A handler result not yet on its object, with the call that produced it. */
interface KeptCall extends Kept {
  readonly call: HandlerCall | undefined;
}

interface Running extends PassHold {
  readonly name: string;
  readonly runId: string;
  readonly started: number;
  readonly effects: TaskEffect["_tag"][];
  object: JsonObject;
  /** The task's facts as decoded at the start of the pass (what its handler calls get). */
  readonly facts: TaskFacts;
  /** The call whose result the pass holds unwritten. */
  call: HandlerCall | undefined;
  /** Set by a request the performer did not answer: a hanging call, or the crash it stopped before. */
  suspended?: { readonly call: HandlerCall; readonly callId: number } | "crash" | undefined;
  lockedGroup: string | undefined;
}

/** A pass waiting for a hanging handler call. */
interface Parked {
  readonly running: Running;
  readonly step: Extract<Step, { _tag: "Request" }>;
  readonly call: HandlerCall;
  readonly callId: number;
}

const asDefect = (reply: HandlerReply): HandlerDefect | undefined =>
  reply.kind === "defect" ? reply : undefined;

const splitKey = (key: string): [string, string] => {
  const at = key.indexOf("/");
  return [key.slice(0, at), key.slice(at + 1)];
};
const metadataOf = (object: JsonObject): JsonObject => (object.metadata ?? {}) as JsonObject;

export class SimulatedController<Task> {
  readonly calls: HandlerCall[] = [];
  readonly events: RecordedEvent[] = [];
  readonly passes: PassRecord[] = [];
  epoch = 0;

  readonly #options: SimulatedControllerOptions<Task>;
  readonly #ready: string[] = [];
  #scheduler: TaskScheduler<KeptCall>;
  /** The resourceVersion each key's last normally ended pass left behind, and when that pass ended. */
  readonly #settled = new Map<string, { readonly resourceVersion: string; readonly at: number }>();
  /** Passes waiting for a hanging handler call, by key. */
  readonly #parked = new Map<string, Parked>();
  /** Hanging calls of deleted tasks: they run on until resolved, holding their group (16.12). */
  readonly #orphans: Parked[] = [];
  /** The abort controllers of calls that have not returned, by call record id. */
  readonly #aborts = new Map<number, AbortController>();
  #crashCountdown: number | undefined;
  readonly #writes: MemoryWrites;
  #runSerial = 0;

  constructor(options: SimulatedControllerOptions<Task>) {
    this.#options = options;
    this.#writes = new MemoryWrites(options.server, options.clock, options.kind.resource.plural);
    this.#scheduler = new TaskScheduler({ config: options.config, supported: options.supported });
    options.server.watch((event) => this.#onWatch(event));
    this.#relist();
  }

  // ---- commands --------------------------------------------------------------------------------

  /** Runs passes until nothing is ready (or `maxPasses` ran); returns how many ran. */
  runUntilIdle(maxPasses = 10_000): number {
    let count = 0;
    while (this.#ready.length > 0 && count < maxPasses) {
      const key = this.#ready.shift();
      if (key === undefined) break;
      this.#runKey(key);
      count += 1;
    }
    return count;
  }

  /** Moves the clock forward by `ms`, running the keys the scheduler has due, in time order. */
  advanceAndRun(ms: number): void {
    const { clock } = this.#options;
    // Work that is ready now runs now, before time moves.
    this.runUntilIdle();
    const target = clock.now() + ms;
    for (
      let at = this.#scheduler.nextDue();
      at !== undefined && at <= target;
      at = this.#scheduler.nextDue()
    ) {
      clock.set(Math.max(at, clock.now()));
      for (const key of this.#scheduler.takeDue(clock.now())) this.#enqueue(key);
      this.runUntilIdle();
    }
    clock.set(target);
    this.runUntilIdle();
  }

  /** The earliest due time of any task, if any. */
  nextTimer(): number | undefined {
    return this.#scheduler.nextDue();
  }

  /** Crash after `effects` more effects have been performed (0: before the next one). */
  crashAfter(effects: number): void {
    this.#crashCountdown = effects;
  }

  /** Crash now and restart: all memory is lost; the restart lists every object. */
  crash(): void {
    this.epoch += 1;
    const now = this.#options.clock.now();
    for (const abort of this.#aborts.values()) abort.abort(new Error("the controller crashed"));
    this.#aborts.clear();
    for (const parked of [...this.#parked.values(), ...this.#orphans]) {
      parked.call.dropped = "crash";
      parked.call.endedAt = now;
      parked.call.endedAfterCalls = this.calls.length;
    }
    for (const kept of this.#scheduler.unwrittenResults())
      if (kept.call !== undefined) kept.call.dropped ??= "crash";
    this.#ready.length = 0;
    this.#scheduler = new TaskScheduler({ config: this.#options.config, supported: this.#options.supported });
    this.#parked.clear();
    this.#orphans.length = 0;
    this.#settled.clear();
    this.#writes.forget();
    this.#crashCountdown = undefined;
    this.#relist();
  }

  /** API writes the controller made (finalizer, status, delete), in order. */
  get writes(): ReadonlyArray<WriteRecord> {
    return this.#writes.records;
  }

  /** The next DELETE of a task fails (500). */
  failNextDelete(): void {
    this.#writes.failNextDelete();
  }

  failNextStatusWrite(): void {
    this.#writes.failNextStatusWrite();
  }

  /** Someone else writes the object between our read and our next metadata write (a 409 for us). */
  editConcurrentlyBeforeNextMetadataWrite(): void {
    this.#writes.editConcurrentlyBeforeNextMetadataWrite();
  }

  /**
   * `act` runs (once) just before the next status write that carries a handler result: a user's
   * delete or label edit landing between a handler's return and the write of its result.
   */
  beforeNextResultWrite(act: (namespace: string, name: string) => void): void {
    this.#writes.beforeNextResultWrite(act);
  }

  /** Names of tasks with a hanging handler call (a deleted task's call that runs on included). */
  hanging(): string[] {
    return [
      ...[...this.#parked.values()].map((p) => p.running.name),
      ...this.#orphans.map((p) => p.running.name),
    ];
  }

  /** A hanging handler call of `name` returns (its current pass's call first, else its oldest orphaned one). */
  resolve(namespace: string, name: string, outcome: PhaseOutcome): boolean {
    const key = `${namespace}/${name}`;
    const parked = this.#parked.get(key) ?? this.#orphans.find((p) => p.running.key === key);
    return parked === undefined ? false : this.resolveCall(parked.call.id, outcome);
  }

  /** The hanging call with this id returns `reply` (a result, or a defect it threw). */
  resolveCall(id: number, reply: HandlerReply): boolean {
    const orphan = this.#orphans.findIndex((p) => p.call.id === id);
    const parked =
      orphan >= 0 ? this.#orphans[orphan] : [...this.#parked.values()].find((p) => p.call.id === id);
    if (parked === undefined) return false;
    const { running, call, callId, step } = parked;
    call.endedAt = this.#options.clock.now();
    call.endedAfterCalls = this.calls.length;
    this.#aborts.delete(call.id);
    if (orphan >= 0) this.#orphans.splice(orphan, 1);
    else this.#parked.delete(running.key);
    const returned = this.#scheduler.returned(running, callId, asDefect(reply));
    this.#enqueueAll(returned.wake);
    this.#reportDefect(running, call, reply, returned.report);
    if (returned.current) {
      const [namespace, name] = splitKey(running.key);
      const stored = this.#options.server.get(namespace, name);
      if (stored.ok) running.object = stored.value;
      running.call = call;
      const input = step.pass.snapshot.context.input;
      this.#continue(running, answer(step, this.#answerOf(call, call.phase, input, reply)));
    }
    this.runUntilIdle();
    return true;
  }

  // ---- the work queue and the watch -------------------------------------------------------------

  #relist(): void {
    for (const object of this.#options.server.list()) this.#onWatch({ type: "ADDED", object });
  }

  #enqueue(key: string): void {
    if (!this.#ready.includes(key)) this.#ready.push(key);
  }

  #enqueueAll(wake: ReadonlyArray<Wake>): void {
    for (const { key } of wake) this.#enqueue(key);
  }

  #onWatch(event: Pick<WatchEvent, "type" | "object">): void {
    const { kind } = this.#options;
    const key = storedKeyOf(event.object);
    // As the runtime: a finished task seen first waits for its TTL undecoded (reconcile/settled-facts.ts).
    const settled = undecodedChangeFacts(kind, this.#scheduler, {
      type: event.type,
      key,
      object: event.object,
    });
    const facts = settled ?? readFacts(kind, event.object);
    if (facts === undefined) return;
    const own = this.#writes.isOwn(facts.metadata.resourceVersion);
    const now = this.#options.clock.now();
    const { wake, orphaned } = this.#scheduler.changed({ type: event.type, key, facts, own, now });
    if (orphaned !== undefined) {
      const parked = this.#parked.get(key);
      if (parked !== undefined) {
        parked.call.dropped = "cancelled";
        this.#aborts.get(parked.call.id)?.abort(new Error("the task was deleted during the call"));
        this.#parked.delete(key);
        this.#orphans.push(parked);
      }
    }
    this.#enqueueAll(wake);
  }

  /** The facts of the stored tasks of a group. */
  #groupFacts(group: string | undefined): TaskFacts[] {
    if (group === undefined) return [];
    return this.#scheduler.membersOf(group).flatMap((member) => {
      const [namespace, name] = splitKey(member);
      const stored = this.#options.server.get(namespace, name);
      const facts = stored.ok ? readFacts(this.#options.kind, stored.value) : undefined;
      return facts === undefined ? [] : [facts];
    });
  }

  // ---- one pass ---------------------------------------------------------------------------------

  #runKey(key: string): void {
    const [namespace, name] = splitKey(key);
    const stored = this.#options.server.get(namespace, name);
    if (!stored.ok) return;
    const facts = readFacts(this.#options.kind, stored.value);
    if (facts === undefined) return;
    const now = this.#options.clock.now();
    const group = groupKeyOf(facts);
    const runId = this.#nextRunId();
    const started = this.#scheduler.start(key, facts, () => this.#groupFacts(group), now, runId);
    if (started === undefined) return;
    const { kept } = started;
    this.#settled.delete(key);
    const step = start(started.input);
    const replayed = kept !== undefined && step.pass.unwritten !== undefined;
    // A kept result the machine set aside (the task moved on) is superseded; one it ignored while
    // calling the same phase again is not, and the no-repeated-calls property will say so.
    const callsAgain = step.pass.pending.some((e) => e._tag === "RunPhase" && e.phase === kept?.known.phase);
    if (kept?.call !== undefined && !replayed && !callsAgain) kept.call.dropped = "superseded";
    const running: Running = {
      key,
      uid: started.uid,
      group: started.group,
      lockedGroup: started.lockedGroup,
      name,
      runId,
      started: now,
      effects: [],
      object: stored.value,
      facts,
      call: replayed ? kept?.call : undefined,
    };
    this.#continue(running, step);
  }

  #nextRunId(): string {
    this.#runSerial += 1;
    return `run-${this.#runSerial}`;
  }

  /** Whether the task of this pass is still stored (a pass can end after its task is gone). */
  #exists(running: Running): boolean {
    const [namespace, name] = splitKey(running.key);
    const stored = this.#options.server.get(namespace, name);
    return stored.ok && metadataOf(stored.value).uid === running.uid;
  }

  /**
   * The requests a pass would make if it ran again at the instant the last one ended, for every task
   * that is idle and unchanged since: the "no-op reconcile" check (nothing is performed; the pass is
   * followed up to its first handler call or its end).
   */
  settledPasses(): Array<{ name: string; effects: TaskEffect[] }> {
    const result: Array<{ name: string; effects: TaskEffect[] }> = [];
    for (const [key, { resourceVersion, at }] of this.#settled) {
      if (this.#scheduler.isBusy(key) || this.#scheduler.isDeferred(key) || this.#ready.includes(key))
        continue;
      const [namespace, name] = splitKey(key);
      const stored = this.#options.server.get(namespace, name);
      if (!stored.ok || metadataOf(stored.value).resourceVersion !== resourceVersion) continue;
      const facts = readFacts(this.#options.kind, stored.value);
      if (facts === undefined || this.#scheduler.keeps(facts.metadata.uid)) continue;
      const input = this.#scheduler.inputOf(
        facts,
        this.#groupFacts(groupKeyOf(facts)),
        at,
        this.#nextRunId(),
      );
      const effects: TaskEffect[] = [];
      const last = driveSync(start(input), (request) => {
        effects.push(request);
        return request._tag === "RunPhase" ? Answer.Suspend() : Answer.Done({ now: at });
      });
      if (last._tag === "End") effects.push(last.end);
      result.push({ name, effects });
    }
    return result;
  }

  /** Drives the pass from `step` until it ends, parks on a hanging handler, stops or crashes. */
  #continue(running: Running, step: Step): void {
    const last = driveSync(step, (request, pass) => this.#perform(running, request, pass));
    switch (last._tag) {
      case "Request": {
        const suspended = running.suspended;
        running.suspended = undefined;
        if (suspended === "crash") {
          if (running.call !== undefined) running.call.dropped ??= "crash";
          this.#record(running, last, { aborted: "crash" });
          this.crash();
        } else if (suspended !== undefined) {
          this.#parked.set(running.key, {
            running,
            step: last,
            call: suspended.call,
            callId: suspended.callId,
          });
        }
        return;
      }
      case "End":
        this.#finish(running, last, last.end);
        return;
      case "Stopped": {
        if (last.stopped._tag === "Gone") {
          this.#record(running, last, { aborted: "gone" });
          this.#enqueueAll(this.#scheduler.gone(running));
          return;
        }
        this.#record(running, last, { aborted: last.stopped.cause });
        // A failed write ends the pass; the result it carried is kept (never re-asked), and it backs off.
        const unwritten = last.pass.unwritten;
        const kept = unwritten === undefined ? undefined : { known: unwritten, call: running.call };
        const now = this.#options.clock.now();
        this.#enqueueAll(this.#scheduler.stopped(running, kept, this.#exists(running), now).wake);
        return;
      }
    }
  }

  /** Performs one request (the memory interpreter), or suspends the pass (a hanging call, a crash). */
  #perform(running: Running, request: PassRequest, pass: Pass): Answer {
    const { clock } = this.#options;
    const holdsResult = pass.unwritten !== undefined;
    if (this.#crashCountdown !== undefined) {
      if (this.#crashCountdown === 0) {
        running.suspended = "crash";
        return Answer.Suspend();
      }
      this.#crashCountdown -= 1;
    }
    running.effects.push(request._tag);
    switch (request._tag) {
      case "RunPhase":
        return this.#call(running, request.phase, pass.snapshot.context.input);
      case "RecordEvent":
        this.events.push({
          uid: running.uid,
          name: running.name,
          eventType: request.eventType,
          reason: request.reason,
          note: request.note,
          at: clock.now(),
        });
        return Answer.Done({ now: clock.now() });
      default: {
        const [namespace] = splitKey(running.key);
        const target = { uid: running.uid, namespace, name: running.name, object: running.object };
        const written = this.#writes.write(target, request, holdsResult);
        if (written.kind === "ok" && written.object !== undefined) running.object = written.object;
        const result = answerOf(written, clock.now());
        const writesResult = request._tag === "PatchStatus" || request._tag === "RemoveFinalizer";
        if (result._tag === "Done" && writesResult && holdsResult && running.call !== undefined) {
          running.call.persisted = true;
          running.call.persistedAt = clock.now();
          running.call = undefined;
        }
        return result;
      }
    }
  }

  #call(running: Running, phase: Phase, input: PassInput): Answer {
    const { clock, config, server } = this.#options;
    const [namespace] = splitKey(running.key);
    const { callId, attempt, lockedGroup, wake } = this.#scheduler.calling(running, phase);
    running.lockedGroup = lockedGroup;
    this.#enqueueAll(wake);
    const facts = running.facts;
    const stored = server.get(namespace, running.name);
    const storedFinalizers = stored.ok ? (metadataOf(stored.value).finalizers ?? []) : [];
    const call: HandlerCall = {
      id: this.calls.length + 1,
      uid: running.uid,
      name: running.name,
      phase,
      at: clock.now(),
      epoch: this.epoch,
      eventIndex: server.events.length,
      finalizerPresent: Array.isArray(storedFinalizers) && storedFinalizers.includes(config.finalizer),
      group: running.group,
      persisted: false,
    };
    this.calls.push(call);
    const abort = new AbortController();
    const behaviour: Behaviour =
      facts.invalid !== undefined
        ? { kind: "throw", message: "undecodable task" }
        : this.#options.behaviour(facts, phase, {
            attempt,
            reconcileID: running.runId,
            signal: abort.signal,
          });
    if (behaviour.kind === "hang") {
      this.#aborts.set(call.id, abort);
      running.suspended = { call, callId };
      return Answer.Suspend();
    }
    const reply: HandlerReply =
      behaviour.kind === "return"
        ? behaviour.outcome
        : behaviour.kind === "defect"
          ? behaviour.defect
          : defectOf(behaviour.message);
    call.endedAt = clock.now();
    call.endedAfterCalls = this.calls.length;
    const returned = this.#scheduler.returned(running, callId, asDefect(reply));
    this.#enqueueAll(returned.wake);
    this.#reportDefect(running, call, reply, returned.report);
    running.call = call;
    return this.#answerOf(call, phase, input, reply);
  }

  /** A defect the scheduler says is new for its task phase goes to `onDefect` (simulate's log). */
  #reportDefect(running: Running, call: HandlerCall, reply: HandlerReply, report: boolean): void {
    if (reply.kind === "defect" && report)
      this.#options.onDefect?.({ call, reconcileID: running.runId, defect: reply });
  }

  /** The answer to a call that returned `reply`; the call records the result the pass makes of it. */
  #answerOf(call: HandlerCall, phase: Phase, input: PassInput, reply: HandlerReply): Answer {
    const now = this.#options.clock.now();
    if (reply.kind !== "defect") {
      call.outcome = reply;
      return Answer.Returned({ outcome: reply, now });
    }
    call.outcome = defectOutcome(input, phase, reply);
    return Answer.Threw({ defect: reply, now });
  }

  #record(running: Running, last: Step, how: { aborted?: string; end?: PassEnd }): void {
    this.passes.push({
      uid: running.uid,
      name: running.name,
      at: running.started,
      transitions: last.pass.transitions,
      ...how,
      effects: running.effects,
    });
  }

  #finish(running: Running, last: Step, end: PassEnd): void {
    const { clock } = this.#options;
    running.effects.push(end._tag);
    if (running.call !== undefined) running.call.unwritten = true;
    this.#record(running, last, { end });
    const resourceVersion = metadataOf(running.object).resourceVersion;
    if (typeof resourceVersion === "string")
      this.#settled.set(running.key, { resourceVersion, at: clock.now() });
    this.#enqueueAll(this.#scheduler.ended(running, end, clock.now(), this.#exists(running)));
  }

  /** Whether a task is finished (Succeeded, Failed, Rejected) or gone, for checks. */
  terminalOrGone(namespace: string, name: string): boolean {
    const stored = this.#options.server.get(namespace, name);
    if (!stored.ok) return true;
    const facts = readFacts(this.#options.kind, stored.value);
    return facts !== undefined && isTerminal(facts.status.state);
  }
}
