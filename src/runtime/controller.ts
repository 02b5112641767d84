/**
 * The task controller on a real cluster: a list-watch cache of the tasks, a keyed work queue, handler
 * calls in fibers of their own, and the per-key core (src/reconcile/core.ts) that decides. This shell
 * feeds the core what happens (watched changes, a key's turn, answers, handler returns, resyncs) and
 * performs its commands: writes and Events through the Kubernetes interpreter
 * (src/interpreters/kubernetes/perform.ts), handler calls, wake-ups, logs and metrics. The memory
 * interpreter drives the same core.
 *
 * - A handler call never holds a worker: it runs in a fiber of its own, and the rest of its pass runs
 *   when it returns; meanwhile its key is busy (changes to it run after) and other keys move on.
 * - Echoes of our own writes are dropped by the informer when it recognises them; the core hears of
 *   each write from its answer, and skips the echoes that came before it.
 * - Due times are the core's; the work queue's one timer fiber sleeps until the earliest. Backoffs are
 *   jittered (backoff-jitter.ts's random stretch); a periodic resync re-derives every due time.
 */
import * as Clock from "effect/Clock";
import * as Duration from "effect/Duration";
import * as Effect from "effect/Effect";
import * as FiberMap from "effect/FiberMap";
import type * as Scope from "effect/Scope";
import * as Stream from "effect/Stream";
import { isTerminal } from "../api/status.ts";
import { supportedMembers } from "../handlers/handler.ts";
import { taskLogKeys } from "../handlers/handler-context.ts";
import { EventRecorder } from "../interpreters/kubernetes/event-recorder.ts";
import { performOnCluster } from "../interpreters/kubernetes/perform.ts";
import type { TaskWriter } from "../interpreters/kubernetes/task-writer.ts";
import { controllerFieldManager } from "../kube/kube-client.ts";
import { kubeClientOf } from "../kube/kube-client-node.ts";
import type { KubeObject } from "../kube/object.ts";
import { type CoreCommand, type CoreInput, type PassView, splitKey, TaskCore } from "../reconcile/core.ts";
import {
  defaultHandlerDefectLimit,
  defectOf,
  defectOfCause,
  type HandlerReply,
} from "../reconcile/handler-defect.ts";
import { DefaultMaxTaskBytes } from "../reconcile/oversized-task.ts";
import { randomJitter } from "./backoff-jitter.ts";
import type { ControllerHandle, ControllerOptions } from "./controller-options.ts";
import { forEachInOrder, runInOrder } from "./for-each-in-order.ts";
import { makeForeignWriterWatch, ownFieldManagers, reportForeignWrites } from "./foreign-writers.ts";
import { kubeHandlerContext, kubeObjectGetter } from "./handler-context-kube.ts";
import { type Change, makeInformer } from "./informer.ts";
import { noObserver, type TaskLabels } from "./metrics.ts";
import { taskCacheKeep } from "./task-cache.ts";
import { makeWorkQueue } from "./work-queue.ts";

export type { ControllerHandle, ControllerOptions, ControllerStats } from "./controller-options.ts";

type Needs<R> = R | TaskWriter | EventRecorder;

/** The code of the newest entry in `status.lastErrors` of an object as written, if it has one. */
const lastErrorCode = (written: KubeObject): string | undefined => {
  const status = (written as { readonly status?: { readonly lastErrors?: unknown } }).status;
  const errors = Array.isArray(status?.lastErrors) ? (status.lastErrors as ReadonlyArray<unknown>) : [];
  const code = (errors.at(-1) as { readonly code?: unknown } | undefined)?.code;
  return typeof code === "string" && code !== "" ? code : undefined;
};

export const runController = <Task, R>(
  options: ControllerOptions<Task, R>,
): Effect.Effect<ControllerHandle, never, Scope.Scope | R | TaskWriter | EventRecorder> =>
  Effect.gen(function* () {
    const { kind, config, handlers } = options;
    const observer = options.observer ?? noObserver;
    const recorder = yield* EventRecorder;
    const services = yield* Effect.context<EventRecorder>();
    const client = kubeClientOf(options.kubeConfig);
    const objects = kubeObjectGetter(client, options.counter);
    /** Abort controllers of the handler calls that have not returned, by call id. */
    const aborts = new Map<number, AbortController>();
    // Another controller writing our tasks (etcd-druid's own) is noticed as objects arrive (foreign-writers.ts).
    const fieldManager = options.fieldManager ?? controllerFieldManager;
    const foreign = makeForeignWriterWatch({
      ownManagers: [fieldManager, ...ownFieldManagers, ...(options.fieldManagers ?? [])],
      finalizer: kind.finalizer,
    });
    const foreignWording = {
      kind: kind.resource.kind,
      controller: fieldManager,
      ...(options.otherController === undefined ? {} : { other: options.otherController }),
    };
    // What the cache keeps of a task, bounded per task (task-cache.ts); a write's result is kept the same way.
    const keep = taskCacheKeep({
      maxBytes: options.maxTaskBytes ?? DefaultMaxTaskBytes,
      ...(kind.cachedMetadata === undefined ? {} : { cachedMetadata: kind.cachedMetadata }),
    });
    const informer = yield* makeInformer({
      kubeConfig: options.kubeConfig,
      resource: kind.resource,
      echoes: "suppress",
      keep,
      inspect: foreign.inspect,
      ...(options.counter === undefined ? {} : { counter: options.counter }),
      ...(options.namespace === undefined ? {} : { namespace: options.namespace }),
    });
    // Memory that a restart loses (and the design survives losing).
    const core = new TaskCore<Task>({
      kind,
      config,
      supported: supportedMembers(handlers),
      jitter: yield* randomJitter,
      read: (key) => {
        const [namespace, name] = splitKey(key);
        return informer.get(namespace, name);
      },
    });
    const calls = yield* FiberMap.make<number>();
    const stats = { passes: 0, aborted: 0, handlerCalls: 0, writes: {} as Record<string, number> };

    // The queue is created below; these are bound once it exists.
    let wake: (key: string) => void = () => {};
    let dueChanged: () => void = () => {};
    // The clock of this fiber, read without an effect where a batch of changes is carried.
    const clock = yield* Clock.Clock;
    const annotate = (pass: PassView<Task>, fields: Record<string, unknown> = {}) =>
      Effect.annotateLogs({ reconcileID: pass.runId, task: pass.key, ...fields });
    /** Labels of a task's metrics (type, etcd, namespace). */
    const labelsOf = (pass: PassView<Task>): Omit<TaskLabels, "state"> => ({
      // A member without a handler is the author's text: one label value for all of them.
      type:
        pass.facts.member === ""
          ? "invalid"
          : Object.hasOwn(handlers, pass.facts.member)
            ? pass.facts.member
            : "unsupported",
      etcd: pass.facts.group ?? "",
      namespace: pass.facts.metadata.namespace,
      kind: kind.resource.kind,
    });

    /** Steps the core with `input` and performs its commands (each answer is fed back the same way). */
    const feed = (input: CoreInput<Task>): Effect.Effect<void, never, Needs<R>> =>
      Effect.suspend(() => forEachInOrder(core.step(input), perform) ?? Effect.void);

    /**
     * Performs a command: bookkeeping in this process at once (undefined), the rest as an effect. A
     * watched change of a settled task answers only bookkeeping, so a batch of them builds no effect.
     */
    const perform = (command: CoreCommand<Task>): Effect.Effect<void, never, Needs<R>> | undefined => {
      switch (command._tag) {
        case "Wake":
          return void wake(command.key);
        case "DueChanged":
          return void dueChanged();
        case "Store":
          return void informer.upsert(command.object as KubeObject);
        case "Abort":
          return void aborts
            .get(command.callId)
            ?.abort(new Error(`the task was ${command.reason} during the call`));
        case "Log":
          return (command.level === "error" ? Effect.logError : Effect.logInfo)(command.message).pipe(
            Effect.annotateLogs(command.fields),
          );
        case "Started": {
          const { pass, step } = command;
          // A pass that acts is logged at info, with the machine's steps; a no-op pass only at debug.
          const acts = step.pass.pending.some((e) => e._tag !== "RequeueAfter" && e._tag !== "AwaitChange");
          return (acts ? Effect.logInfo("pass") : Effect.logDebug("pass")).pipe(
            annotate(pass, {
              trigger: pass.trigger,
              transitions: step.pass.transitions.map((t) => `${t.from} -[${t.event}]-> ${t.to}`).join(", "),
            }),
          );
        }
        case "CallEnded":
          return callEnded(command);
        case "Ended":
          return ended(command);
        case "Perform":
          return write(command);
        case "Call":
          return FiberMap.run(
            calls,
            command.callId,
            callHandler(command).pipe(
              Effect.flatMap((reply) =>
                Effect.flatMap(Clock.currentTimeMillis, (now) =>
                  feed({ _tag: "Returned", pass: command.pass, callId: command.callId, reply, now }),
                ),
              ),
            ),
          ).pipe(Effect.asVoid);
      }
    };

    /** Performs a write or an Event; the task's metrics learn of a terminal state written. */
    const write = (command: Extract<CoreCommand<Task>, { _tag: "Perform" }>) =>
      Effect.gen(function* () {
        const { pass, request } = command;
        const performed = yield* performOnCluster(command.object as KubeObject, request);
        const now = yield* Clock.currentTimeMillis;
        if (performed.accepted) stats.writes[request._tag] = (stats.writes[request._tag] ?? 0) + 1;
        const state = request._tag === "PatchStatus" ? request.patch.state : undefined;
        if (performed.written !== undefined && typeof state === "string" && isTerminal(state))
          observer.taskFinished(
            { ...labelsOf(pass), state },
            (now - pass.createdAt) / 1000,
            pass.uid,
            state === "Succeeded" ? undefined : lastErrorCode(performed.written),
          );
        // The pass holds the task as the cache would, never the whole answer (a large task's megabytes).
        const written = performed.written === undefined ? {} : { written: keep(performed.written) };
        yield* feed({ _tag: "Answered", pass, answer: performed.answer, now, ...written });
      });

    /** Runs a handler phase; a defect (a throw, a die) comes back as the value it is, never as a crash. */
    const callHandler = (
      command: Extract<CoreCommand<Task>, { _tag: "Call" }>,
    ): Effect.Effect<HandlerReply, never, R> => {
      const { pass, phase, callId, attempt } = command;
      const handler = handlers[pass.facts.member];
      if (pass.task === undefined || handler === undefined)
        return Effect.succeed(
          defectOf(new Error(`no handler for ${pass.facts.member || "an undecodable task"}`)),
        );
      stats.handlerCalls += 1;
      const abort = new AbortController();
      aborts.set(callId, abort);
      const { metadata } = pass.facts;
      const context = kubeHandlerContext(
        {
          phase,
          attempt,
          reconcileID: pass.runId,
          subject: metadata,
          client,
          objects,
          signal: abort.signal,
          // With the resource the context has `ownTask`: where resumable steps record their progress.
          resource: kind.resource,
          ...(options.progressNamespace === undefined
            ? {}
            : { records: { namespace: options.progressNamespace, kind: kind.resource.kind } }),
        },
        services,
        recorder,
      );
      const task = pass.task;
      return Effect.suspend(() => handler[phase](task, context)).pipe(
        Effect.catchCause((cause) => Effect.succeed<HandlerReply>(defectOfCause(cause))),
        Effect.annotateLogs(taskLogKeys(metadata, phase, pass.runId)),
        Effect.onInterrupt(() => Effect.sync(() => abort.abort(new Error("the controller is stopping")))),
        Effect.ensuring(Effect.sync(() => aborts.delete(callId))),
      );
    };

    /** A handler's bug, once per kind per task phase; a deleted task's result, discarded. */
    const callEnded = (command: Extract<CoreCommand<Task>, { _tag: "CallEnded" }>) =>
      Effect.gen(function* () {
        const { pass, phase, attempt, reply } = command;
        if (reply.kind === "defect") {
          observer.handlerDefect?.(phase);
          if (command.report)
            yield* Effect.logError(`handler defect: ${reply.summary}`).pipe(
              annotate(pass, {
                ...taskLogKeys(pass.facts.metadata, phase, pass.runId),
                attempt,
                stack: reply.stack,
                hint: `the handler threw instead of returning a result; fix it (the phase fails after ${
                  config.handlerDefectLimit ?? defaultHandlerDefectLimit
                } defects)`,
              }),
            );
        }
        if (!command.current)
          yield* Effect.logInfo("handler call of a deleted task ended; result discarded").pipe(
            annotate(pass, { phase, outcome: reply.kind }),
          );
      });

    /** A pass's end, in metrics and logs. */
    const ended = (command: Extract<CoreCommand<Task>, { _tag: "Ended" }>) =>
      Effect.gen(function* () {
        const { pass, step } = command;
        const seconds = ((yield* Clock.currentTimeMillis) - pass.started) / 1000;
        observer.passTransitions?.({ key: pass.key, uid: pass.uid, runId: pass.runId }, step.pass);
        observer.passEnded(command.how, seconds);
        if (command.how === "ended") {
          stats.passes += 1;
          return yield* Effect.logDebug("pass ended").pipe(
            annotate(pass, { end: command.end?._tag, reason: command.end?.reason }),
          );
        }
        if (command.how === "gone" || step._tag !== "Stopped" || step.stopped._tag === "Gone") return;
        stats.aborted += 1;
        const { stopped } = step;
        const reason =
          stopped._tag === "WriteFailed" ? `${stopped.request}: ${stopped.cause}` : stopped.cause;
        const retry = command.retryInMs === undefined ? {} : { retryInMs: command.retryInMs };
        yield* Effect.logWarning("pass aborted").pipe(annotate(pass, { reason, ...retry }));
      });

    const reconcile = (key: string): Effect.Effect<void, never, Needs<R>> =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => feed({ _tag: "Turn", key, now })).pipe(
        Effect.withLogSpan("reconcile"),
      );

    const queue = yield* makeWorkQueue({
      concurrency: options.concurrency,
      process: reconcile,
      due: core,
    });
    wake = queue.addUnsafe;
    dueChanged = queue.dueChangedUnsafe;

    // ---- what the core hears of ------------------------------------------------------------------

    /**
     * Carries a change into the core: a deletion's bookkeeping, the foreign writes noticed so far
     * (reported before the change is stepped), then the change's step and its commands. The informer
     * hands over what arrived together as one batch (at a takeover, the first LIST's thousands of
     * tasks), carried one change after the other with no effect for a change that needs none.
     */
    const carry = (change: Change): Effect.Effect<void, never, Needs<R>> | undefined => {
      if (change.type === "DELETED") {
        observer.taskGone?.(change.object.metadata.uid);
        foreign.forget(change.object.metadata.uid);
      }
      const writes = foreign.drain();
      return writes.length === 0
        ? stepChanged(change)
        : Effect.flatMap(
            reportForeignWrites(writes, recorder, observer, foreignWording),
            () => stepChanged(change) ?? Effect.void,
          );
    };
    const stepChanged = ({ type, key, object }: Change) =>
      forEachInOrder(
        core.step({ _tag: "Changed", type, key, object, now: clock.currentTimeMillisUnsafe() }),
        perform,
      );

    yield* informer.changes.pipe(
      Stream.runForEachArray((changes) => runInOrder(changes, carry)),
      Effect.forkScoped,
    );

    if (options.groupResource !== undefined) {
      const groups = yield* makeInformer({
        kubeConfig: options.kubeConfig,
        resource: options.groupResource,
        ...(options.groupObjects?.keep === undefined ? {} : { keep: options.groupObjects.keep }),
        ...(options.counter === undefined ? {} : { counter: options.counter }),
        ...(options.namespace === undefined ? {} : { namespace: options.namespace }),
      });
      const shared = options.groupObjects;
      if (shared !== undefined)
        yield* Effect.acquireRelease(
          Effect.sync(() => shared.attach(groups.get)),
          (detach) => Effect.sync(detach),
        );
      /** A group object's change wakes the unfinished tasks of its group (the key is the group's). */
      const relate = ({ object, key, type }: Change) => {
        if (type === "DELETED") observer.groupGone?.(object.metadata.namespace, object.metadata.name);
        return forEachInOrder(core.step({ _tag: "RelatedChanged", group: key }), perform);
      };
      yield* groups.changes.pipe(
        Stream.runForEachArray((changes) => runInOrder(changes, relate)),
        Effect.forkScoped,
      );
    }

    // Level-triggered safety net: re-derive every task's next step now and then. Not at the start:
    // the first LIST's ADDED changes cover every task then (a second pass each would double a takeover).
    // Periodic on purpose (10 min by default): a change the watch missed is caught here at the latest.
    const resyncEvery = options.resyncInterval ?? Duration.minutes(10);
    yield* Effect.gen(function* () {
      yield* Effect.sleep(resyncEvery);
      yield* informer.synced;
      yield* feed({ _tag: "Resync", keys: informer.keys() });
    }).pipe(Effect.forever, Effect.forkScoped);

    return {
      synced: informer.synced,
      stats: () => ({ ...stats, writes: { ...stats.writes }, ...core.counts }),
      queue: () => queue.metrics(),
    };
  });
