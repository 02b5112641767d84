/**
 * The task controller on a real cluster: a list-watch cache of the tasks, a keyed work queue, and for
 * each key one reconcile pass at a time. The pass is the pass protocol's (src/reconcile/pass.ts), the
 * rules of who runs when are the scheduler's (src/reconcile/scheduler.ts), and the requests are
 * performed by the Kubernetes interpreter (src/interpreters/kubernetes/perform.ts); the memory
 * interpreter drives the same three. What is left here is the imperative shell: Effect fibers, the
 * informer, timers, logs and metrics.
 *
 * - A handler call never holds a worker: it runs in a fiber of its own, and the rest of its pass runs
 *   when it returns; meanwhile its key is busy (changes to it run after) and other keys move on.
 * - A task deleted while its Admit or Execute call runs is let go at once, but the call runs to its own
 *   end (its timeout bounds it) and holds its admission group until then; its result is discarded.
 * - Admissions read the cache that holds our own writes (read-your-writes), so the duplicate rule never
 *   sees a stale peer. Echoes of our own writes are dropped by the informer: the scheduler hears of
 *   each write from the pass that made it, and no pass runs on an echo.
 * - Due times (requeue, backoff, TTL) are the scheduler's; the work queue's one timer fiber sleeps until
 *   the earliest. Backoffs are jittered (the scheduler is handed backoff-jitter.ts's random stretch); a
 *   periodic resync re-derives every due time from the objects, so no requeue is lost.
 *
 * Over 400 lines, knowingly: this is the cluster shell's one closure — the informer, the queue, the
 * handler-call fibers and the change stream share the controller's state; the decisions are elsewhere
 * (the machine, the pass protocol, the scheduler) and so is performing requests (perform.ts).
 */
import * as Clock from "effect/Clock";
import * as Duration from "effect/Duration";
import * as Effect from "effect/Effect";
import * as FiberMap from "effect/FiberMap";
import type * as Scope from "effect/Scope";
import * as Stream from "effect/Stream";
import { isTerminal } from "../api/status.ts";
import { TaskEffect } from "../effects/task-effect.ts";
import { supportedMembers } from "../handlers/handler.ts";
import { taskLogKeys } from "../handlers/handler-context.ts";
import { EventRecorder } from "../interpreters/kubernetes/event-recorder.ts";
import { performOnCluster } from "../interpreters/kubernetes/perform.ts";
import type { TaskWriter } from "../interpreters/kubernetes/task-writer.ts";
import { controllerFieldManager } from "../kube/kube-client.ts";
import { kubeClientOf } from "../kube/kube-client-node.ts";
import type { KubeObject } from "../kube/object.ts";
import type { Phase } from "../machine/types.ts";
import { factsAfterWrite } from "../reconcile/facts-after-write.ts";
import { carriesForeignChange } from "../reconcile/foreign-change.ts";
import {
  defaultHandlerDefectLimit,
  defectOf,
  defectOfCause,
  type HandlerDefect,
  type HandlerReply,
} from "../reconcile/handler-defect.ts";
import { DefaultMaxTaskBytes, oversizedOf, tooLargeReason } from "../reconcile/oversized-task.ts";
import { Answer, answer, drive, type PassRequest, type Step, start } from "../reconcile/pass.ts";
import { groupKeyOf, type Kept, type PassHold, TaskScheduler, type Wake } from "../reconcile/scheduler.ts";
import { settledUntil } from "../reconcile/settled.ts";
import { undecodedChangeFacts } from "../reconcile/settled-facts.ts";
import { readFacts, readTask, type TaskFacts } from "../reconcile/task-kind.ts";
import { randomJitter } from "./backoff-jitter.ts";
import type { ControllerHandle, ControllerOptions } from "./controller-options.ts";
import { makeForeignWriterWatch, ownFieldManagers, reportForeignWrites } from "./foreign-writers.ts";
import { kubeHandlerContext, kubeObjectGetter } from "./handler-context-kube.ts";
import { makeInformer } from "./informer.ts";
import { noObserver, type TaskLabels } from "./metrics.ts";
import { taskCacheKeep } from "./task-cache.ts";
import { makeWorkQueue } from "./work-queue.ts";

export type { ControllerHandle, ControllerOptions, ControllerStats } from "./controller-options.ts";

interface Running extends PassHold {
  readonly runId: string;
  /** Labels of the task's metrics (type, etcd, namespace). */
  readonly labels: Omit<TaskLabels, "state">;
  readonly createdAt: number;
  readonly started: number;
  /** The task as decoded at the start of the pass (what its handlers get). */
  readonly task: unknown;
  /** The object as last read or written, and its facts. */
  object: KubeObject;
  facts: TaskFacts;
  lockedGroup: string | undefined;
  /** No one else's change came back merged into one of this pass's write results. */
  sawAll: boolean;
}

const splitKey = (key: string): [string, string] => {
  const at = key.indexOf("/");
  return [key.slice(0, at), key.slice(at + 1)];
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
    const supported = supportedMembers(handlers);
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
    const scheduler = new TaskScheduler<Kept>({ config, supported, jitter: yield* randomJitter });
    const calls = yield* FiberMap.make<number>();
    const stats = { passes: 0, aborted: 0, handlerCalls: 0, writes: {} as Record<string, number> };
    let runSerial = 0;

    /** Whether the cache still holds this task (a pass can end after its task's DELETED event). */
    const cached = (running: Running): boolean => {
      const [namespace, name] = splitKey(running.key);
      return informer.get(namespace, name)?.metadata.uid === running.uid;
    };
    /** The facts of every cached task of a group but `except` (the caller's own task, decoded already). */
    const groupFacts = (group: string, except?: string): TaskFacts[] =>
      scheduler.membersOf(group).flatMap((member) => {
        if (member === except) return [];
        const [namespace, name] = splitKey(member);
        const object = informer.get(namespace, name);
        const facts = object === undefined ? undefined : readFacts(kind, object);
        return facts === undefined ? [] : [facts];
      });

    /**
     * A task decoded by the change stream, for the pass the change wakes (decoding is a large part of a
     * task's CPU). Kept only while that pass is due, keyed by the cached object: a newer copy misses.
     */
    const decodedOnce = new WeakMap<KubeObject, NonNullable<ReturnType<typeof readTask<Task>>>>();

    // The queue is created below; `add` is bound once it exists.
    let add: (key: string) => Effect.Effect<void> = () => Effect.void;
    const wakeAll = (wake: ReadonlyArray<Wake>): Effect.Effect<void> =>
      Effect.forEach(wake, ({ key }) => add(key), { discard: true });
    const annotate = (running: Running, fields: Record<string, unknown> = {}) =>
      Effect.annotateLogs({ reconcileID: running.runId, task: running.key, ...fields });

    // ---- requests --------------------------------------------------------------------------------

    /** Performs a write or an Event, and tells the scheduler (and the cache) what the write changed. */
    const perform = (
      running: Running,
      request: PassRequest,
    ): Effect.Effect<Answer, never, TaskWriter | EventRecorder> =>
      request._tag === "RunPhase"
        ? Effect.succeed(Answer.Suspend())
        : Effect.gen(function* () {
            const performed = yield* performOnCluster(running.object, request);
            const { answer: result, accepted } = performed;
            if (accepted) stats.writes[request._tag] = (stats.writes[request._tag] ?? 0) + 1;
            if (performed.written === undefined) return result;
            // The pass holds the task as the cache would, never the whole answer (a large task's megabytes).
            const written = keep(performed.written);
            // A DELETE or a status patch (no resourceVersion precondition) may return others' changes.
            if (
              request._tag === "DeleteTask" ||
              carriesForeignChange(running.object, written, request._tag !== "PatchStatus")
            )
              running.sawAll = false;
            running.object = written;
            running.facts = factsAfterWrite(running.facts, request, written.metadata);
            const inCache = cached(running);
            informer.upsert(written);
            // Our finalizer was the last one of a deleting task: the object is gone now, even if the
            // cache has not heard of it yet. (If it has, there is no copy left to guard.)
            const remaining = running.facts.metadata.finalizers?.length ?? 0;
            if (
              request._tag === "RemoveFinalizer" &&
              remaining === 0 &&
              written.metadata.deletionTimestamp !== undefined
            ) {
              if (inCache) scheduler.release(running.uid);
            }
            // (A task the cache has dropped already is gone: its DELETED event told the scheduler.)
            if (inCache)
              yield* wakeAll(scheduler.changed({ type: "MODIFIED", facts: running.facts, own: true }).wake);
            const state = request._tag === "PatchStatus" ? request.patch.state : undefined;
            if (typeof state === "string" && isTerminal(state)) {
              const now = yield* Clock.currentTimeMillis;
              const seconds = (now - running.createdAt) / 1000;
              observer.taskFinished({ ...running.labels, state }, seconds, running.uid);
            }
            return result;
          });

    /** Runs a handler phase; a defect (a throw, a die) comes back as the value it is, never as a crash. */
    const callHandler = (
      running: Running,
      phase: Phase,
      callId: number,
      attempt: number,
    ): Effect.Effect<HandlerReply, never, R> => {
      const handler = handlers[running.facts.member];
      if (running.task === undefined || handler === undefined)
        return Effect.succeed(
          defectOf(new Error(`no handler for ${running.facts.member || "an undecodable task"}`)),
        );
      stats.handlerCalls += 1;
      const abort = new AbortController();
      aborts.set(callId, abort);
      const { metadata } = running.facts;
      const context = kubeHandlerContext(
        {
          phase,
          attempt,
          reconcileID: running.runId,
          subject: metadata,
          client,
          objects,
          signal: abort.signal,
          resource: kind.resource,
        },
        services,
        recorder,
      );
      return Effect.suspend(() => handler[phase](running.task as Task, context)).pipe(
        Effect.catchCause((cause) => Effect.succeed<HandlerReply>(defectOfCause(cause))),
        Effect.annotateLogs(taskLogKeys(metadata, phase, running.runId)),
        Effect.onInterrupt(() => Effect.sync(() => abort.abort(new Error("the controller is stopping")))),
        Effect.ensuring(Effect.sync(() => aborts.delete(callId))),
      );
    };

    /** A handler's bug, once per kind per task phase: where it threw, and what becomes of the task. */
    const logDefect = (running: Running, phase: Phase, attempt: number, defect: HandlerDefect) =>
      Effect.logError(`handler defect: ${defect.summary}`).pipe(
        annotate(running, {
          ...taskLogKeys(running.facts.metadata, phase, running.runId),
          attempt,
          stack: defect.stack,
          hint: `the handler threw instead of returning a result; fix it (the phase fails after ${
            config.handlerDefectLimit ?? defaultHandlerDefectLimit
          } defects)`,
        }),
      );

    // ---- one pass --------------------------------------------------------------------------------

    /** Drives the pass from `step` until it ends, stops, or waits for a handler call in a fiber of its own. */
    const resume = (
      running: Running,
      step: Step,
    ): Effect.Effect<void, never, R | TaskWriter | EventRecorder> =>
      Effect.gen(function* () {
        const last = yield* drive(step, (request) => perform(running, request));
        const now = yield* Clock.currentTimeMillis;
        const seconds = (now - running.started) / 1000;
        if (last._tag !== "Request")
          observer.passTransitions?.({ key: running.key, uid: running.uid, runId: running.runId }, last.pass);
        switch (last._tag) {
          case "Request": {
            if (last.request._tag !== "RunPhase") return;
            const phase = last.request.phase;
            const { callId, attempt, lockedGroup, wake } = scheduler.calling(running, phase);
            running.lockedGroup = lockedGroup;
            yield* wakeAll(wake);
            const call = callHandler(running, phase, callId, attempt).pipe(
              Effect.flatMap((reply) =>
                Effect.gen(function* () {
                  const defect = reply.kind === "defect" ? reply : undefined;
                  const returned = scheduler.returned(running, callId, defect);
                  yield* wakeAll(returned.wake);
                  if (defect !== undefined) {
                    observer.handlerDefect?.(phase);
                    if (returned.report) yield* logDefect(running, phase, attempt, defect);
                  }
                  if (!returned.current)
                    return yield* Effect.logInfo(
                      "handler call of a deleted task ended; result discarded",
                    ).pipe(annotate(running, { phase, outcome: reply.kind }));
                  const at = yield* Clock.currentTimeMillis;
                  const answered =
                    reply.kind === "defect"
                      ? Answer.Threw({ defect: reply, now: at })
                      : Answer.Returned({ outcome: reply, now: at });
                  yield* resume(running, answer(last, answered));
                }),
              ),
            );
            yield* FiberMap.run(calls, callId, call);
            return;
          }
          case "End": {
            stats.passes += 1;
            observer.passEnded("ended", seconds);
            const { end } = last;
            const settledAt = running.sawAll ? running.object.metadata.resourceVersion : undefined;
            const wake = scheduler.ended(running, end, now, cached(running), settledAt);
            yield* queue.dueChanged;
            yield* Effect.logDebug("pass ended").pipe(
              annotate(running, { end: end._tag, reason: end.reason }),
            );
            return yield* wakeAll(wake);
          }
          case "Stopped": {
            if (last.stopped._tag === "Gone") {
              observer.passEnded("gone", seconds);
              return yield* wakeAll(scheduler.gone(running));
            }
            stats.aborted += 1;
            observer.passEnded("aborted", seconds);
            const unwritten = last.pass.unwritten;
            const { delayMs, wake } = scheduler.stopped(
              running,
              unwritten && { known: unwritten },
              cached(running),
              now,
            );
            yield* queue.dueChanged;
            const reason =
              last.stopped._tag === "WriteFailed"
                ? `${last.stopped.request}: ${last.stopped.cause}`
                : last.stopped.cause;
            yield* Effect.logWarning("pass aborted").pipe(
              annotate(running, { reason, ...(delayMs === undefined ? {} : { retryInMs: delayMs }) }),
            );
            return yield* wakeAll(wake);
          }
        }
      });

    const reconcile = (key: string): Effect.Effect<void, never, R | TaskWriter | EventRecorder> =>
      Effect.gen(function* () {
        const [namespace, name] = splitKey(key);
        const object = informer.get(namespace, name);
        if (object === undefined) return;
        // Nothing new since this key's last pass (the echo of its own write): no decode, no pass.
        if (scheduler.skipsEcho(key, object.metadata.resourceVersion)) return;
        const read = decodedOnce.get(object) ?? readTask(kind, object);
        decodedOnce.delete(object);
        if (read === undefined) {
          const oversized = oversizedOf(object);
          if (oversized !== undefined)
            return yield* Effect.logError(
              "task too large to act on: even its finalizers and annotations exceed half the limit; left alone",
            ).pipe(Effect.annotateLogs({ task: key, reason: tooLargeReason(oversized) }));
          // Not even its metadata decodes: nothing can be written to it. (A bad spec or status is
          // handled by the machine: the task is Rejected with ERR_INVALID_TASK naming the fields.)
          const decoded = kind.decode(object);
          const errors = decoded.ok ? [] : decoded.failure.errors;
          return yield* Effect.logError("task metadata does not decode; fix the object").pipe(
            Effect.annotateLogs({ task: key, errors: errors.join("; ") }),
          );
        }
        const { facts, task } = read;
        const group = groupKeyOf(facts);
        const now = yield* Clock.currentTimeMillis;
        runSerial += 1;
        const runId = `${now.toString(36)}-${runSerial.toString(36)}`;
        const peers = () => (group === undefined ? [] : groupFacts(group, key));
        const started = scheduler.start(key, facts, peers, now, runId);
        // Deferred (the key is in a pass already, or another pass holds its admission group) or released.
        if (started === undefined) return;
        // A settled task (a resync, an early timer) only needs its TTL due time: no machine run.
        const settled = settledUntil(started.input);
        if (settled !== undefined) {
          const end = TaskEffect.RequeueAfter({ delayMs: settled - now, reason: "ttl" });
          yield* wakeAll(scheduler.ended(started, end, now, true));
          return yield* queue.dueChanged;
        }
        const step = start(started.input);
        const running: Running = {
          key,
          uid: started.uid,
          group: started.group,
          lockedGroup: started.lockedGroup,
          runId,
          labels: {
            // A member without a handler is the author's text: one label value for all of them.
            type:
              facts.member === ""
                ? "invalid"
                : Object.hasOwn(handlers, facts.member)
                  ? facts.member
                  : "unsupported",
            etcd: facts.group ?? "",
            namespace,
            kind: kind.resource.kind,
          },
          createdAt: started.input.task.createdAt,
          started: now,
          task,
          object,
          facts,
          sawAll: true,
        };
        // A pass that acts is logged at info, with the machine's steps; a no-op pass only at debug.
        const acts = step.pass.pending.some((e) => e._tag !== "RequeueAfter" && e._tag !== "AwaitChange");
        yield* (acts ? Effect.logInfo("pass") : Effect.logDebug("pass")).pipe(
          annotate(running, {
            trigger: started.trigger,
            transitions: step.pass.transitions.map((t) => `${t.from} -[${t.event}]-> ${t.to}`).join(", "),
          }),
        );
        yield* resume(running, step);
      }).pipe(Effect.withLogSpan("reconcile"));

    const queue = yield* makeWorkQueue({
      concurrency: options.concurrency,
      process: reconcile,
      due: scheduler,
    });
    add = (key) => queue.add(key);
    const wakeFor = (key: string, reason: Parameters<typeof scheduler.note>[1]) => {
      scheduler.note(key, reason);
      return queue.add(key);
    };

    // ---- what triggers passes ------------------------------------------------------------------

    yield* informer.changes.pipe(
      Stream.runForEach((change) =>
        Effect.gen(function* () {
          const { object, key } = change;
          // A finished task seen first (a takeover) waits for its TTL undecoded; its timer's pass decodes it.
          const settled = undecodedChangeFacts(kind, scheduler, change);
          const read = settled === undefined ? readTask(kind, object) : undefined;
          const facts = settled ?? read?.facts;
          if (facts === undefined) {
            // Unreadable metadata: the pass logs why; nothing else can act on it.
            if (change.type !== "DELETED") yield* wakeFor(key, "object changed");
            return;
          }
          if (change.type === "DELETED") {
            observer.taskGone?.(object.metadata.uid);
            foreign.forget(object.metadata.uid);
          }
          yield* reportForeignWrites(foreign.drain(), recorder, observer, foreignWording);
          const now = yield* Clock.currentTimeMillis;
          const { wake, orphaned } = scheduler.changed({ type: change.type, key, facts, now });
          // A settled task (reconcile/settled.ts) needs no pass until its TTL runs out: it is due then.
          yield* queue.dueChanged;
          // The pass this wakes decodes nothing again (unless the cache has a newer copy by then).
          if (read !== undefined && wake.some((woken) => woken.key === key)) decodedOnce.set(object, read);
          if (orphaned !== undefined)
            aborts.get(orphaned)?.abort(new Error("the task was deleted during the call"));
          if (orphaned !== undefined)
            yield* Effect.logInfo(
              "task deleted during its handler call; the call runs to its end, its result will be discarded",
            ).pipe(Effect.annotateLogs({ task: key }));
          yield* wakeAll(wake);
        }),
      ),
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
      yield* groups.changes.pipe(
        Stream.tap((change) =>
          Effect.sync(() => {
            if (change.type === "DELETED")
              observer.groupGone?.(change.object.metadata.namespace, change.object.metadata.name);
          }),
        ),
        Stream.runForEach((change) =>
          Effect.forEach(
            scheduler.unfinishedOf(`${change.object.metadata.namespace}/${change.object.metadata.name}`),
            (key) => wakeFor(key, "related object changed"),
            { discard: true },
          ),
        ),
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
      for (const key of informer.keys()) yield* wakeFor(key, "resync");
    }).pipe(Effect.forever, Effect.forkScoped);

    return {
      synced: informer.synced,
      stats: () => ({
        ...stats,
        writes: { ...stats.writes },
        inFlightCalls: scheduler.callsInFlight,
        orphanedCalls: scheduler.orphanedCalls,
        remembered: scheduler.remembered,
      }),
      queue: () => queue.metrics(),
    };
  });
