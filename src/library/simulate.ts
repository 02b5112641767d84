/**
 * `simulate`: the lifecycle of a task kind in memory, for an operator's own tests. The same passes,
 * machine and retry rule as the cluster controller run against an in-memory API server (resource
 * versions, finalizers, status subresource, merge and JSON patches) under a fake clock, one step at a
 * time, so a test reads like the story it checks:
 *
 *   const sim = simulate({ kind, handlers: { checksum: { execute: () => completed("Verified") } } });
 *   sim.create(task("a")); sim.run();
 *   expect(sim.state("a")).toBe("Succeeded");
 *   sim.advance(60_000); expect(sim.exists("a")).toBe(false);   // TTL
 *
 * Handlers are plain functions returning a `PhaseOutcome` (or `hang`, to park the call until
 * `resolve`), or real Effect handlers: one that completes synchronously (e.g. over an in-memory fake
 * service) answers in the same step; one that is really asynchronous (real HTTP) is parked until
 * `await sim.settle()` delivers its result. Wraps `SimulatedController`, which stays available for
 * property tests that need its finer controls (`crashAfter`, write failures, recorded passes).
 */
import * as Effect from "effect/Effect";
import * as Fiber from "effect/Fiber";
import * as Layer from "effect/Layer";
import * as ManagedRuntime from "effect/ManagedRuntime";
import type { TaskCondition, TaskState, TaskStatus } from "../api/status.ts";
import { supportedMembers } from "../handlers/handler.ts";
import {
  type HandlerContext,
  type ObjectResource,
  type OwnRecord,
  type OwnTask,
  taskLogKeys,
} from "../handlers/handler-context.ts";
import { MemoryApiServer, type WatchEvent } from "../interpreters/memory/api-server.ts";
import { FakeClock } from "../interpreters/memory/clock.ts";
import {
  type Behaviour,
  type CallInfo,
  type HandlerCall,
  type PassRecord,
  type RecordedEvent,
  SimulatedController,
  type WriteRecord,
} from "../interpreters/memory/controller.ts";
import { MemoryObjects } from "../interpreters/memory/memory-objects.ts";
import type { JsonObject } from "../interpreters/memory/merge-patch.ts";
import type { LifecycleConfig, Phase, PhaseOutcome } from "../machine/types.ts";
import { lifecycleConfig } from "../reconcile/defaults.ts";
import { defectOf, defectOfCause, type HandlerReply } from "../reconcile/handler-defect.ts";
import { readFacts, type TaskFacts, type TaskKind } from "../reconcile/task-kind.ts";
import { storedConditions, storedResult } from "./harness/stored-status.ts";
import { type LifecycleOptions, lifecycleOverrides } from "./lifecycle-options.ts";
import { completed } from "./outcome.ts";
import type { ServicesOption } from "./services-option.ts";

/**
 * A handler answer that never comes by itself: the call stays in flight until `resolve` (or a crash).
 * Deleting its task lets the task go, but not the call: it holds the task's admission group until it
 * is resolved, and its result is then discarded (as on a cluster).
 */
export interface Hang {
  readonly kind: "hang";
}
export const hang: Hang = { kind: "hang" };

/**
 * What a simulated handler knows about its call besides the task: the handler context of a real call
 * (`attempt` is 1 on the first call of a phase: script "fail twice, then succeed" with it; the object
 * reader reads `objects`, Events land in `events()`, log lines in `logs()`; no `kube` client), and
 * the fake clock's `now`. A call takes no simulated time: `now` and `clock()` read the instant it was
 * made, even when the test moves the clock before `settle()` delivers an asynchronous call's result
 * (a restarted controller's first calls happen at the restart, not after the test's next jump).
 */
export interface CallContext extends HandlerContext {
  /** The fake clock, in ms since the epoch. */
  readonly now: number;
}

/**
 * A line a handler logged through its context, with the task's keys; or the controller's ERROR line
 * for a handler defect (once per kind per task phase, `fields.stack` holding the stack), as the
 * runtime logs it.
 */
export interface LoggedLine {
  readonly level: "debug" | "info" | "warn" | "error";
  readonly message: string;
  /** The task's keys (namespace, name, uid, reconcileID, phase) and the fields the handler gave. */
  readonly fields: Readonly<Record<string, unknown>>;
  readonly at: number;
}

export type SimulatedResult<R> = PhaseOutcome | Hang | Effect.Effect<PhaseOutcome, never, R>;
export type SimulatedPhase<Task, R> = (task: Task, call: CallContext) => SimulatedResult<R>;

/** A handler under simulation; a missing phase completes. Every `TaskHandler` is one. */
export interface SimulatedHandler<Task, R = never> {
  readonly admit?: SimulatedPhase<Task, R>;
  readonly execute?: SimulatedPhase<Task, R>;
  readonly cleanup?: SimulatedPhase<Task, R>;
}

export interface SimulateBaseOptions<Task, R, Spec = unknown> extends LifecycleOptions {
  /** Its spec type (`defineTaskKind` infers it from the schema) types what `create` takes. */
  readonly kind: TaskKind<Task, Spec>;
  /** By config member; a member without one is Rejected (`ERR_UNSUPPORTED_TASK`). */
  readonly handlers: Readonly<Record<string, SimulatedHandler<Task, R>>>;
  /** Services for Effect handlers, built once (lazily) and released by `dispose()`. */
  readonly services?: Layer.Layer<R, unknown>;
  /** The fake clock's start, ms since the epoch (default 2026-01-01T00:00:00Z). */
  readonly startAt?: number;
  /** Where `create` puts tasks without a namespace and where names are looked up (default `default`). */
  readonly defaultNamespace?: string;
  /** Other objects of the simulated cluster, read by handlers through `context.objects`. */
  readonly objects?: ReadonlyArray<{ readonly resource: ObjectResource; readonly object: unknown }>;
}

export type SimulateOptions<Task, R = never, Spec = unknown> = SimulateBaseOptions<Task, R, Spec> &
  ServicesOption<R>;

/**
 * A task as a test writes it; `apiVersion`, `kind` and `metadata.namespace` are filled in. With a
 * kind's `Spec` (its schema's encoded spec), `spec` is that type, so a misspelt field does not compile.
 */
export interface TaskManifest<Spec = unknown> {
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string;
    readonly [field: string]: unknown;
  };
  readonly spec?: Spec;
  readonly [field: string]: unknown;
}

export interface Simulation<Task, Spec = unknown> {
  /**
   * Stores a task (as `kubectl create` would); nothing runs until `run`, `advance` or `settle`. The
   * manifest's `spec` has the kind's spec type (`createUnchecked` stores one that need not). A method,
   * so that a `Simulation<Task>` parameter takes a simulation of any spec type.
   */
  create(manifest: TaskManifest<Spec>): void;
  /**
   * Stores any object as a task, e.g. one the kind's schema rejects, to test what the controller does
   * with it (a cluster's CRD may refuse it first).
   */
  readonly createUnchecked: (manifest: TaskManifest) => void;
  /** A user's delete: with our finalizer on it, the task stays until cleanup releases it. */
  readonly delete: (name: string) => void;
  /** A merge patch of the object (not its status), e.g. a label edit. */
  readonly patch: (name: string, patch: JsonObject) => void;
  /** Runs every pass that is ready now; returns how many ran. */
  readonly run: () => number;
  /**
   * One safe step of a test's loop: runs what is ready now and delivers every handler call it makes
   * (`"ran"`); when nothing is ready, moves the clock to the next timer only, runs what it wakes and
   * delivers those calls (`"advanced"`); `"idle"` when there is no timer and nothing to run (calls
   * parked with `hang` wait for `resolve`). Look at the tasks between steps: none changes unseen.
   */
  readonly step: () => Promise<"ran" | "advanced" | "idle">;
  /** Moves the clock forward, firing requeue timers in order (backoff, polls, TTLs) and running what they wake. */
  readonly advance: (ms: number) => void;
  /**
   * Waits for asynchronous Effect handler calls, delivers their results and runs on, until none is in
   * flight (calls parked with `hang` wait for `resolve`; an Effect that never completes keeps it waiting).
   */
  readonly settle: () => Promise<void>;
  /** The controller process dies and restarts: its memory (timers, backoff, results not yet written) is gone. */
  readonly crash: () => void;
  /** A call parked with `hang` returns `outcome` (a deleted task's call after the current one); false when none is parked for `name`. */
  readonly resolve: (name: string, outcome: PhaseOutcome) => boolean;
  /** Names of tasks with a call in flight (`hang`, or an asynchronous handler not yet settled). */
  readonly hanging: () => string[];

  /** The decoded task, if it exists and decodes. */
  readonly get: (name: string) => Task | undefined;
  /** The stored object as the API server holds it. */
  readonly object: (name: string) => JsonObject | undefined;
  readonly exists: (name: string) => boolean;
  readonly state: (name: string) => TaskState | undefined;
  readonly status: (name: string) => TaskStatus | undefined;
  /** `status.result` as the API server holds it (JSON): what Execute's `kind.succeeded` returned. */
  readonly result: (name: string) => unknown;
  /** `status.conditions` (`Succeeded`, `Failed`, the kind's own), written with the final state. */
  readonly conditions: (name: string) => ReadonlyArray<TaskCondition> | undefined;
  /** Handler calls, in order (all tasks, or one). */
  readonly calls: (name?: string) => ReadonlyArray<HandlerCall>;
  /** API writes the controller made (finalizer, status, delete), in order. */
  readonly writes: (name?: string) => ReadonlyArray<WriteRecord>;
  /** Kubernetes Events the controller (and handlers, through their context) recorded. */
  readonly events: (name?: string) => ReadonlyArray<RecordedEvent>;
  /** Lines handlers logged through their context (all tasks, or one). */
  readonly logs: (name?: string) => ReadonlyArray<LoggedLine>;
  /** Other objects of the simulated cluster (`put`, `remove`), as handlers read them. */
  readonly objects: MemoryObjects;
  /**
   * The controller's own record about a task (`context.ownRecord`), by the task's UID: what a
   * ConfigMap in the controller's namespace holds on a cluster. It outlives a `crash`.
   */
  readonly records: Map<string, Readonly<Record<string, string>>>;
  /** Reconcile passes with the machine's transitions and how each ended. */
  readonly passes: (name?: string) => ReadonlyArray<PassRecord>;
  /** Every change of the stored objects, as a watch would have seen it. */
  readonly history: (name?: string) => ReadonlyArray<WatchEvent>;
  readonly now: () => number;
  /** When the next requeue timer fires, if any. */
  readonly nextTimer: () => number | undefined;
  /** Releases the services. */
  readonly dispose: () => Promise<void>;

  readonly controller: SimulatedController<Task>;
  readonly server: MemoryApiServer;
  readonly clock: FakeClock;
  readonly config: LifecycleConfig;
}

interface InFlight {
  readonly call: HandlerCall;
  readonly fiber: Fiber.Fiber<HandlerReply, unknown>;
  readonly done: Promise<unknown>;
}

const defaults: Record<Phase, PhaseOutcome> = {
  admit: completed("Admitted"),
  execute: completed("Executed"),
  cleanup: completed("Cleaned up"),
};

const isObject = (value: unknown): value is JsonObject =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const byName = <A extends { readonly name: string }>(records: ReadonlyArray<A>, name: string | undefined) =>
  name === undefined ? records : records.filter((record) => record.name === name);

export const simulate = <Task, R = never, Spec = unknown>(
  options: SimulateOptions<Task, R, Spec>,
): Simulation<Task, Spec> => {
  const { kind, handlers } = options;
  const namespace = options.defaultNamespace ?? "default";
  const clock = new FakeClock(options.startAt ?? Date.UTC(2026, 0, 1));
  const server = new MemoryApiServer({
    resource: `${kind.resource.plural}.${kind.resource.group}`,
    now: () => clock.now(),
  });
  const config = lifecycleConfig(kind, lifecycleOverrides(options));
  const objects = new MemoryObjects();
  for (const { resource, object } of options.objects ?? []) objects.put(resource, object);
  const logs: Array<LoggedLine & { readonly name: string }> = [];
  /** A line of the task `name`: a handler's through its context, or the controller's own. */
  const log = (name: string, level: LoggedLine["level"], message: string, fields: LoggedLine["fields"]) =>
    void logs.push({ level, message, fields, at: clock.now(), name });
  // `services` is required by the type exactly when R is not never, so the fallback provides nothing.
  const runtime = ManagedRuntime.make(options.services ?? (Layer.empty as Layer.Layer<R>));
  const inFlight = new Map<number, InFlight>();
  const records = new Map<string, Readonly<Record<string, string>>>();

  const taskOf = (at: string, name: string): Task | undefined => {
    const stored = server.get(at, name);
    const decoded = stored.ok ? kind.decode(stored.value) : undefined;
    return decoded?.ok ? decoded.task : undefined;
  };

  const contextOf = (facts: TaskFacts, phase: Phase, info: CallInfo): CallContext => {
    const { metadata } = facts;
    const keys = taskLogKeys(metadata, phase, info.reconcileID);
    const at = clock.now();
    const line =
      (level: LoggedLine["level"]) =>
      (message: string, fields: Readonly<Record<string, unknown>> = {}) =>
        log(metadata.name, level, message, { ...fields, ...keys });
    return {
      phase,
      attempt: info.attempt,
      now: at,
      signal: info.signal,
      log: { debug: line("debug"), info: line("info"), warn: line("warn"), error: line("error") },
      objects,
      ownTask: ownTaskOf(metadata),
      ownRecord: ownRecordOf(metadata.uid),
      clock: () => at,
      events: {
        record: (eventType, reason, note) =>
          controller.recordEvent({ uid: metadata.uid, name: metadata.name, eventType, reason, note }),
      },
    };
  };

  /** As on a cluster: a merge patch of the task's annotations, refused once another UID holds its name. */
  const ownTaskOf = (metadata: TaskFacts["metadata"]): OwnTask => ({
    annotate: async (annotations) => {
      const current = server.get(metadata.namespace, metadata.name);
      if (!current.ok) throw new Error(current.error.message);
      const uid = isObject(current.value.metadata) ? current.value.metadata.uid : undefined;
      if (uid !== metadata.uid)
        throw new Error(
          `Precondition failed: UID in precondition: ${metadata.uid}, UID in object meta: ${String(uid)}`,
        );
      const written = server.patch(metadata.namespace, metadata.name, { metadata: { annotations } });
      if (!written.ok) throw new Error(written.error.message);
      const stored = isObject(written.value.metadata) ? written.value.metadata.annotations : undefined;
      return isObject(stored)
        ? Object.fromEntries(
            Object.entries(stored).filter((entry): entry is [string, string] => typeof entry[1] === "string"),
          )
        : {};
    },
  });

  /** As on a cluster: a record by the task's UID that no task author writes. */
  const ownRecordOf = (uid: string): OwnRecord => ({
    read: async () => records.get(uid),
    write: async (fields) => {
      const next: Record<string, string> = { ...records.get(uid) };
      for (const [key, value] of Object.entries(fields))
        if (value === null) delete next[key];
        else next[key] = value;
      records.set(uid, next);
      return next;
    },
    remove: async () => void records.delete(uid),
  });

  const behaviour = (facts: TaskFacts, phase: Phase, info: CallInfo): Behaviour => {
    // The controller records the call just before it asks for the behaviour.
    const call = controller.calls.at(-1);
    const task = taskOf(facts.metadata.namespace, facts.metadata.name);
    if (task === undefined) return { kind: "throw", message: "the task does not decode" };
    const run = handlers[facts.member]?.[phase];
    if (run === undefined) return { kind: "return", outcome: defaults[phase] };
    const context = contextOf(facts, phase, info);
    let result: SimulatedResult<R>;
    try {
      result = run(task, context);
    } catch (error) {
      return { kind: "defect", defect: defectOf(error) };
    }
    if (!Effect.isEffect(result))
      return result.kind === "hang" ? { kind: "hang" } : { kind: "return", outcome: result };
    const fiber = runtime.runFork(
      result.pipe(
        Effect.annotateLogs(taskLogKeys(facts.metadata, phase, info.reconcileID)),
        Effect.catchCause((cause) => Effect.succeed<HandlerReply>(defectOfCause(cause))),
      ),
    );
    const exit = fiber.pollUnsafe();
    if (exit !== undefined) {
      const reply = exit._tag === "Success" ? exit.value : defectOfCause(exit.cause);
      return reply.kind === "defect" ? { kind: "defect", defect: reply } : { kind: "return", outcome: reply };
    }
    if (call === undefined) return { kind: "throw", message: "no call record for an asynchronous handler" };
    inFlight.set(call.id, {
      call,
      fiber,
      done: new Promise((resolve) => fiber.addObserver(resolve)),
    });
    return { kind: "hang" };
  };

  const controller: SimulatedController<Task> = new SimulatedController({
    kind,
    config,
    supported: supportedMembers(handlers),
    server,
    clock,
    behaviour,
    // As the runtime logs it: at ERROR, with its stack, once per kind of defect per task phase.
    onDefect: ({ call, reconcileID, defect }) => {
      const facts = factsOf(call.name);
      const keys =
        facts === undefined
          ? { name: call.name, uid: call.uid, phase: call.phase, reconcileID }
          : taskLogKeys(facts.metadata, call.phase, reconcileID);
      log(call.name, "error", `handler defect: ${defect.summary}`, { ...keys, stack: defect.stack });
    },
  });

  /**
   * Interrupts asynchronous calls lost in a crash or superseded: nobody waits for them. (A call of a
   * task deleted meanwhile runs on: it holds its admission group until it ends, as on a cluster.)
   */
  const reap = async (): Promise<void> => {
    for (const [id, running] of inFlight) {
      if (running.call.dropped === undefined || running.call.dropped === "cancelled") continue;
      inFlight.delete(id);
      await Effect.runPromise(Fiber.interrupt(running.fiber));
    }
  };

  const settle = async (): Promise<void> => {
    for (;;) {
      await reap();
      const open = [...inFlight.values()];
      if (open.length === 0) return;
      await Promise.race(open.map((running) => running.done));
      for (const running of open) {
        const exit = running.fiber.pollUnsafe();
        if (exit === undefined) continue;
        inFlight.delete(running.call.id);
        controller.resolveCall(
          running.call.id,
          exit._tag === "Success" ? exit.value : defectOfCause(exit.cause),
        );
      }
    }
  };

  const stored = (name: string): JsonObject | undefined => {
    const result = server.get(namespace, name);
    return result.ok ? result.value : undefined;
  };
  const factsOf = (name: string): TaskFacts | undefined => {
    const object = stored(name);
    return object === undefined ? undefined : readFacts(kind, object);
  };
  const check = <A>(
    result:
      | { readonly ok: true; readonly value: A }
      | { readonly ok: false; readonly error: { readonly message: string } },
  ) => {
    if (!result.ok) throw new Error(result.error.message);
  };

  const create = (manifest: TaskManifest) => {
    const json: unknown = JSON.parse(JSON.stringify(manifest));
    if (!isObject(json) || !isObject(json.metadata))
      throw new TypeError("a manifest is an object with metadata");
    check(
      server.create({
        apiVersion: `${kind.resource.group}/${kind.resource.version}`,
        kind: kind.resource.kind,
        ...json,
        metadata: { namespace, ...json.metadata },
      }),
    );
  };

  const step = async (): Promise<"ran" | "advanced" | "idle"> => {
    const ran = controller.runUntilIdle();
    const calls = inFlight.size;
    await settle();
    if (ran > 0 || calls > 0) return "ran";
    const next = controller.nextTimer();
    if (next === undefined) return "idle";
    controller.advanceAndRun(Math.max(0, next - clock.now()));
    await settle();
    return "advanced";
  };

  return {
    create,
    createUnchecked: create,
    delete: (name) => check(server.delete(namespace, name)),
    patch: (name, patch) => check(server.patch(namespace, name, patch)),
    run: () => controller.runUntilIdle(),
    step,
    advance: (ms) => controller.advanceAndRun(ms),
    settle,
    crash: () => controller.crash(),
    resolve: (name, outcome) => controller.resolve(namespace, name, outcome),
    hanging: () => controller.hanging(),
    get: (name) => taskOf(namespace, name),
    object: stored,
    exists: (name) => stored(name) !== undefined,
    state: (name) => factsOf(name)?.status.state,
    status: (name) => factsOf(name)?.status,
    result: (name) => storedResult(stored(name)),
    conditions: (name) => storedConditions(stored(name)),
    calls: (name) => byName(controller.calls, name),
    writes: (name) => byName(controller.writes, name),
    events: (name) => byName(controller.events, name),
    logs: (name) => byName(logs, name).map(({ name: _, ...line }) => line),
    objects,
    records,
    passes: (name) => byName(controller.passes, name),
    history: (name) =>
      name === undefined
        ? server.events
        : server.events.filter(
            (event) => isObject(event.object.metadata) && event.object.metadata.name === name,
          ),
    now: () => clock.now(),
    nextTimer: () => controller.nextTimer(),
    dispose: async () => {
      for (const running of inFlight.values()) await Effect.runPromise(Fiber.interrupt(running.fiber));
      inFlight.clear();
      await runtime.dispose();
    },
    controller,
    server,
    clock,
    config,
  };
};
