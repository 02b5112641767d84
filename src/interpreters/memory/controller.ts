/**
 * The controller, simulated: the per-key core (src/reconcile/core.ts) that the Kubernetes runtime
 * runs, with its commands performed against `MemoryApiServer` under a `FakeClock`, one at a time. It
 * can crash between any two requests, park a handler call until a test resolves it, fail a status
 * write, and it records everything property tests check: handler calls, writes, Events and passes
 * (records.ts).
 *
 * The core reads the tasks from a copy kept from the watch, as the runtime's informer does: watch
 * events reach it when the driver turns to its queue (after the write that caused them has been
 * answered), and a write's result is put into the copy at once (read-your-writes). So our own
 * writes come back as changes, and the copy still holds a task whose last finalizer we just removed:
 * the core's echo and release rules run here as on a cluster. A crash loses the core and the copy;
 * the restart lists every object.
 */
import { isTerminal } from "../../api/status.ts";
import type { TaskEffect } from "../../effects/task-effect.ts";
import { compareResourceVersions } from "../../kube/object.ts";
import type { LifecycleConfig, Phase, PhaseOutcome } from "../../machine/types.ts";
import { type CoreCommand, type CoreInput, type PassView, splitKey, TaskCore } from "../../reconcile/core.ts";
import { defectOf, type HandlerDefect, type HandlerReply } from "../../reconcile/handler-defect.ts";
import { Answer } from "../../reconcile/pass.ts";
import { readFacts, type TaskFacts, type TaskKind } from "../../reconcile/task-kind.ts";
import { type MemoryApiServer, storedKeyOf, type WatchEvent } from "./api-server.ts";
import type { FakeClock } from "./clock.ts";
import { MemoryWrites } from "./memory-writes.ts";
import type { JsonObject } from "./merge-patch.ts";
import { answerOf } from "./perform-write.ts";
import type {
  Behaviour,
  DecodeRecord,
  HandlerCall,
  PassRecord,
  RecordedEvent,
  WriteRecord,
} from "./records.ts";

export type * from "./records.ts";

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
  /** 1 for the first call of this phase (the core's count). */
  readonly attempt: number;
  readonly reconcileID: string;
  /** Aborts when the call is abandoned: its task deleted while it ran, or the controller crashed. */
  readonly signal: AbortSignal;
}

/** A handler call of this controller's life, by the core's call id. */
interface Call<Task> {
  readonly record: HandlerCall;
  readonly pass: PassView<Task>;
  /** Set while the call hangs (a test resolves it). */
  abort: AbortController | undefined;
}

const metadataOf = (object: JsonObject): JsonObject => (object.metadata ?? {}) as JsonObject;
const versionOf = (object: JsonObject): string => String(metadataOf(object).resourceVersion ?? "");

export class SimulatedController<Task> {
  readonly calls: HandlerCall[] = [];
  readonly events: RecordedEvent[] = [];
  readonly passes: PassRecord[] = [];
  /** The core's decodes of tasks: the work its rules save is checked on these. */
  readonly decodes: DecodeRecord[] = [];
  epoch = 0;
  /** The highest resourceVersion listed at the last (re)start. */
  listedVersion = 0;

  readonly #options: SimulatedControllerOptions<Task>;
  readonly #ready: string[] = [];
  #core: TaskCore<Task>;
  /** The tasks as the watch and our writes told us (the runtime's informer cache). */
  readonly #copy = new Map<string, JsonObject>();
  /** Watch events not yet delivered to the core. */
  readonly #pending: WatchEvent[] = [];
  /** Handler calls since the last crash, by the core's call id. */
  readonly #calls = new Map<number, Call<Task>>();
  /** Each pass in progress, as it will be recorded, by pass id. */
  readonly #running = new Map<number, Omit<PassRecord, "effects"> & { effects: TaskEffect["_tag"][] }>();
  /** The input the core is stepping (what its decodes are for). */
  #stepping: CoreInput<Task> | undefined;
  /** The resourceVersion each key's last normally ended pass left behind, and when that pass ended. */
  readonly #settled = new Map<string, { readonly resourceVersion: string; readonly at: number }>();
  #crashCountdown: number | undefined;
  /** The watch lags: events wait until `catchUp` (the copy and the core see the world as it was). */
  #lagging = false;
  readonly #writes: MemoryWrites;

  constructor(options: SimulatedControllerOptions<Task>) {
    this.#options = options;
    this.#writes = new MemoryWrites(options.server, options.clock, options.kind.resource.plural);
    this.#core = this.#newCore();
    options.server.watch((event) => this.#pending.push(event));
    this.#relist();
  }

  // ---- commands --------------------------------------------------------------------------------

  /** Runs passes until nothing is ready (or `maxPasses` ran); returns how many ran. */
  runUntilIdle(maxPasses = 10_000): number {
    let count = 0;
    for (; count < maxPasses; count += 1) {
      this.#deliver();
      const key = this.#ready.shift();
      if (key === undefined) break;
      this.#feed({ _tag: "Turn", key, now: this.#options.clock.now() });
    }
    return count;
  }

  /**
   * Re-derives every known task's next step, as the runtime's periodic resync does (settled tasks cost
   * no machine run; a released task no pass).
   */
  resync(): void {
    this.#feed({ _tag: "Resync", keys: [...this.#copy.keys()] });
  }

  /** The watch falls behind: no event reaches the controller until `catchUp` (its copy goes stale). */
  lagWatch(): void {
    this.#lagging = true;
  }

  /** The watch delivers what it held back. */
  catchUp(): void {
    this.#lagging = false;
    this.#deliver();
  }

  /** Moves the clock forward by `ms`, running the keys the core has due, in time order. */
  advanceAndRun(ms: number): void {
    const { clock } = this.#options;
    // Work that is ready now runs now, before time moves.
    this.runUntilIdle();
    const target = clock.now() + ms;
    for (let at = this.#core.nextDue(); at !== undefined && at <= target; at = this.#core.nextDue()) {
      clock.set(Math.max(at, clock.now()));
      for (const key of this.#core.takeDue(clock.now())) this.#enqueue(key);
      this.runUntilIdle();
    }
    clock.set(target);
    this.runUntilIdle();
  }

  /** The earliest due time of any task, if any. */
  nextTimer(): number | undefined {
    return this.#core.nextDue();
  }

  /** Crash after `effects` more effects have been performed (0: before the next one). */
  crashAfter(effects: number): void {
    this.#crashCountdown = effects;
  }

  /** Crash now and restart: all memory is lost; the restart lists every object. */
  crash(): void {
    this.epoch += 1;
    const now = this.#options.clock.now();
    for (const call of this.#calls.values()) {
      if (call.abort === undefined) continue;
      call.abort.abort(new Error("the controller crashed"));
      call.record.dropped = "crash";
      call.record.endedAt = now;
      call.record.endedAfterCalls = this.calls.length;
    }
    for (const id of this.#core.keptCalls()) {
      const record = this.#calls.get(id)?.record;
      if (record !== undefined) record.dropped ??= "crash";
    }
    this.#ready.length = 0;
    this.#core = this.#newCore();
    this.#calls.clear();
    this.#running.clear();
    this.#settled.clear();
    this.#copy.clear();
    this.#pending.length = 0;
    this.#crashCountdown = undefined;
    this.#lagging = false;
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
    return this.#hangingCalls().map((call) => call.record.name);
  }

  /** A hanging handler call of `name` returns (its current pass's call first, else its oldest orphaned one). */
  resolve(namespace: string, name: string, outcome: PhaseOutcome): boolean {
    const key = `${namespace}/${name}`;
    const calls = this.#hangingCalls().filter((call) => call.pass.key === key);
    const call = calls.find((c) => c.record.dropped !== "cancelled") ?? calls[0];
    return call === undefined ? false : this.resolveCall(call.record.id, outcome);
  }

  /** The hanging call with this id returns `reply` (a result, or a defect it threw). */
  resolveCall(id: number, reply: HandlerReply): boolean {
    const found = [...this.#calls].find(([, call]) => call.record.id === id && call.abort !== undefined);
    if (found === undefined) return false;
    const [callId, call] = found;
    call.abort = undefined;
    call.record.endedAt = this.#options.clock.now();
    call.record.endedAfterCalls = this.calls.length;
    // The watch has caught up by the time a call returns.
    this.#deliver();
    this.#feed({ _tag: "Returned", pass: call.pass, callId, reply, now: this.#options.clock.now() });
    this.runUntilIdle();
    return true;
  }

  /**
   * The requests a pass would make if it ran again at the instant the last one ended, for every task
   * that is idle and unchanged since: the "no-op reconcile" check (nothing is performed; the pass is
   * followed up to its first handler call or its end).
   */
  settledPasses(): Array<{ name: string; effects: TaskEffect[] }> {
    const result: Array<{ name: string; effects: TaskEffect[] }> = [];
    for (const [key, { resourceVersion, at }] of this.#settled) {
      if (this.#ready.includes(key)) continue;
      const [namespace, name] = splitKey(key);
      const stored = this.#options.server.get(namespace, name);
      if (!stored.ok || versionOf(stored.value) !== resourceVersion) continue;
      const effects = this.#core.wouldRequest(key, at);
      if (effects !== undefined) result.push({ name, effects: [...effects] });
    }
    return result;
  }

  /** Records an Event of a task, the controller's or a handler's (through its context), at the clock's now. */
  recordEvent(event: Omit<RecordedEvent, "at">): void {
    this.events.push({ ...event, at: this.#options.clock.now() });
  }

  /** Whether a task is finished (Succeeded, Failed, Rejected) or gone, for checks. */
  terminalOrGone(namespace: string, name: string): boolean {
    const stored = this.#options.server.get(namespace, name);
    if (!stored.ok) return true;
    const facts = readFacts(this.#options.kind, stored.value);
    return facts !== undefined && isTerminal(facts.status.state);
  }

  // ---- the watch and the queue ------------------------------------------------------------------

  #newCore(): TaskCore<Task> {
    const { kind, config, supported, clock } = this.#options;
    const decode = (object: unknown) => {
      const { uid, resourceVersion } = metadataOf(object as JsonObject);
      const input = this.#stepping;
      const change = input?._tag === "Changed" ? { type: input.type } : {};
      const keyed = input?._tag === "Changed" || input?._tag === "Turn";
      const own = keyed && input.key === storedKeyOf(object as JsonObject);
      const record = {
        uid: String(uid),
        version: String(resourceVersion),
        at: clock.now(),
        epoch: this.epoch,
      };
      this.decodes.push({ ...record, input: input?._tag ?? "check", own, ...change });
      return kind.decode(object);
    };
    return new TaskCore({
      kind: { ...kind, decode },
      config,
      supported,
      read: (key) => this.#copy.get(key),
      runIdOf: (_now, serial) => `run-${serial}`,
    });
  }

  #relist(): void {
    const now = this.#options.clock.now();
    this.listedVersion = this.#options.server.events.length;
    for (const object of this.#options.server.list()) {
      const key = storedKeyOf(object);
      this.#copy.set(key, object);
      this.#feed({ _tag: "Changed", type: "ADDED", key, object, now });
    }
  }

  /** Hands the watch events that came meanwhile to the core, updating the copy as an informer does. */
  #deliver(): void {
    if (this.#lagging) return;
    for (let event = this.#pending.shift(); event !== undefined; event = this.#pending.shift()) {
      const key = storedKeyOf(event.object);
      const now = this.#options.clock.now();
      // An event older than the copy (the echo of a write already stored) carries nothing newer.
      const copy = event.type === "DELETED" ? undefined : this.#copy.get(key);
      const order =
        copy === undefined ? undefined : compareResourceVersions(versionOf(event.object), versionOf(copy));
      const object = copy !== undefined && order !== undefined && order <= 0 ? copy : event.object;
      if (event.type === "DELETED") this.#copy.delete(key);
      else this.#copy.set(key, object);
      this.#feed({ _tag: "Changed", type: event.type, key, object, now });
    }
  }

  #enqueue(key: string): void {
    if (!this.#ready.includes(key)) this.#ready.push(key);
  }

  #hangingCalls(): Call<Task>[] {
    return [...this.#calls.values()]
      .filter((call) => call.abort !== undefined)
      .sort((a, b) => a.record.id - b.record.id);
  }

  // ---- performing the core's commands ------------------------------------------------------------

  /** Steps the core with `input` and performs its commands, feeding answers back, until none is left. */
  #feed(input: CoreInput<Task>): void {
    const epoch = this.epoch;
    const queue = this.#step(input);
    for (let command = queue.shift(); command !== undefined; command = queue.shift()) {
      const next = this.#perform(command);
      // A crash ends this controller's life: the rest of the commands are lost with it.
      if (this.epoch !== epoch) return;
      if (next !== undefined) queue.push(...this.#step(next));
    }
  }

  #step(input: CoreInput<Task>): CoreCommand<Task>[] {
    this.#stepping = input;
    const commands = this.#core.step(input);
    this.#stepping = undefined;
    return commands;
  }

  #perform(command: CoreCommand<Task>): CoreInput<Task> | undefined {
    const { clock } = this.#options;
    switch (command._tag) {
      case "Wake":
        this.#enqueue(command.key);
        return undefined;
      case "Store":
        this.#copy.set(storedKeyOf(command.object as JsonObject), command.object as JsonObject);
        return undefined;
      case "DueChanged":
      case "Log":
        return undefined;
      case "Abort": {
        const call = this.#calls.get(command.callId);
        if (call?.abort === undefined) return undefined;
        // A cancelled call's result is still recorded (the next gate fails the task); a deleted one's is not.
        if (command.reason === "deleted") call.record.dropped = "cancelled";
        call.abort.abort(new Error(`the task was ${command.reason} during the call`));
        return undefined;
      }
      case "Started": {
        const { pass, step, kept } = command;
        this.#running.set(pass.id, {
          uid: pass.uid,
          name: splitKey(pass.key)[1],
          at: pass.started,
          transitions: [],
          effects: [],
          trigger: pass.trigger,
          onlyChanged: pass.onlyChanged,
          version: versionOf(pass.object as JsonObject),
          eventIndex: this.#options.server.events.length,
          decodeIndex: this.decodes.length,
          epoch: this.epoch,
        });
        this.#settled.delete(pass.key);
        const record = kept === undefined ? undefined : this.#calls.get(kept)?.record;
        // A kept result the machine set aside (the task moved on) is superseded; one it ignored while
        // calling the same phase again is not, and the no-repeated-calls property will say so.
        const replayed = step.pass.unwritten !== undefined;
        const callsAgain = step.pass.pending.some((e) => e._tag === "RunPhase" && e.phase === record?.phase);
        if (record !== undefined && !replayed && !callsAgain) record.dropped = "superseded";
        return undefined;
      }
      case "CallEnded": {
        const record = this.#calls.get(command.callId)?.record;
        if (record === undefined) return undefined;
        if (command.current) record.outcome = command.outcome;
        if (command.reply.kind === "defect" && command.report)
          this.#options.onDefect?.({ call: record, reconcileID: command.pass.runId, defect: command.reply });
        return undefined;
      }
      case "Ended": {
        const { pass, step } = command;
        const running = this.#running.get(pass.id);
        this.#running.delete(pass.id);
        if (running === undefined) return undefined;
        const record = { ...running, transitions: step.pass.transitions };
        if (command.how === "ended" && command.end !== undefined) {
          record.effects.push(command.end._tag);
          const held = command.holds === undefined ? undefined : this.#calls.get(command.holds)?.record;
          if (held !== undefined) held.unwritten = true;
          const left = versionOf(pass.object as JsonObject);
          this.passes.push({ ...record, end: command.end, left });
          this.#settled.set(pass.key, { resourceVersion: left, at: clock.now() });
        } else {
          const aborted =
            step._tag === "Stopped" && step.stopped._tag !== "Gone" ? step.stopped.cause : "gone";
          this.passes.push({ ...record, aborted });
        }
        return undefined;
      }
      case "Perform":
      case "Call":
        return this.#crashes(command) ? undefined : this.#request(command);
    }
  }

  /** Counts down to a crash asked for with `crashAfter`; crashes (recording the pass) when it is due. */
  #crashes(command: Extract<CoreCommand<Task>, { _tag: "Perform" | "Call" }>): boolean {
    if (this.#crashCountdown === undefined) return false;
    if (this.#crashCountdown > 0) {
      this.#crashCountdown -= 1;
      return false;
    }
    const { pass } = command;
    const held = pass.holds === undefined ? undefined : this.#calls.get(pass.holds)?.record;
    if (held !== undefined) held.dropped ??= "crash";
    const running = this.#running.get(pass.id);
    if (running !== undefined)
      this.passes.push({ ...running, transitions: pass.step.pass.transitions, aborted: "crash" });
    this.crash();
    return true;
  }

  /** Performs a write, an Event or a handler call; answers what the core is to hear (nothing: a hang). */
  #request(command: Extract<CoreCommand<Task>, { _tag: "Perform" | "Call" }>): CoreInput<Task> | undefined {
    const { clock } = this.#options;
    const { pass } = command;
    const now = clock.now();
    if (command._tag === "Call") {
      this.#running.get(pass.id)?.effects.push("RunPhase");
      return this.#call(command);
    }
    const { request } = command;
    this.#running.get(pass.id)?.effects.push(request._tag);
    if (request._tag === "RecordEvent") {
      const { eventType, reason, note } = request;
      this.recordEvent({ uid: pass.uid, name: splitKey(pass.key)[1], eventType, reason, note });
      return { _tag: "Answered", pass, answer: Answer.Done({ now }), now };
    }
    const [namespace, name] = splitKey(pass.key);
    const target = { uid: pass.uid, namespace, name, object: command.object as JsonObject };
    const written = this.#writes.write(target, request, command.carriesResult);
    const answer = answerOf(written, clock.now());
    const writesResult = request._tag === "PatchStatus" || request._tag === "RemoveFinalizer";
    const held = pass.holds === undefined ? undefined : this.#calls.get(pass.holds)?.record;
    if (answer._tag === "Done" && writesResult && command.carriesResult && held !== undefined) {
      held.persisted = true;
      held.persistedAt = clock.now();
    }
    return {
      _tag: "Answered",
      pass,
      answer,
      now: clock.now(),
      ...(written.kind === "ok" && written.object !== undefined ? { written: written.object } : {}),
    };
  }

  /** Calls the handler's scripted behaviour; a hanging call is answered later, by `resolveCall`. */
  #call(command: Extract<CoreCommand<Task>, { _tag: "Call" }>): CoreInput<Task> | undefined {
    const { clock, config, server } = this.#options;
    const { pass, phase, attempt, callId } = command;
    const [namespace, name] = splitKey(pass.key);
    const stored = server.get(namespace, name);
    const storedFinalizers = stored.ok ? (metadataOf(stored.value).finalizers ?? []) : [];
    const record: HandlerCall = {
      id: this.calls.length + 1,
      uid: pass.uid,
      name,
      phase,
      at: clock.now(),
      epoch: this.epoch,
      eventIndex: server.events.length,
      finalizerPresent: Array.isArray(storedFinalizers) && storedFinalizers.includes(config.finalizer),
      group: pass.group,
      persisted: false,
    };
    this.calls.push(record);
    const abort = new AbortController();
    const call: Call<Task> = { record, pass, abort: undefined };
    this.#calls.set(callId, call);
    const behaviour: Behaviour =
      pass.facts.invalid !== undefined
        ? { kind: "throw", message: "undecodable task" }
        : this.#options.behaviour(pass.facts, phase, {
            attempt,
            reconcileID: pass.runId,
            signal: abort.signal,
          });
    if (behaviour.kind === "hang") {
      call.abort = abort;
      return undefined;
    }
    const reply: HandlerReply =
      behaviour.kind === "return"
        ? behaviour.outcome
        : behaviour.kind === "defect"
          ? behaviour.defect
          : defectOf(behaviour.message);
    record.endedAt = clock.now();
    record.endedAfterCalls = this.calls.length;
    return { _tag: "Returned", pass, callId, reply, now: clock.now() };
  }
}
