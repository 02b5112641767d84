/**
 * The task controller on a real cluster: a list-watch cache of the tasks, a keyed work queue, and for
 * each key one reconcile pass at a time, driven by the same pass functions (src/reconcile/pass.ts) and
 * the same runtime rules (src/reconcile/controller-memory.ts) as the simulated controller, with effects
 * performed by the Kubernetes interpreter (src/interpreters/kubernetes).
 *
 * What it guarantees, beyond a plain work queue:
 * - a handler call never holds a worker: it runs in a fiber of its own, and the rest of its pass runs
 *   when it returns; meanwhile its key is busy (changes to it run after) and other keys move on;
 * - deleting a task whose Admit or Execute call is in flight interrupts the call and drops its result;
 * - admissions of one group (same namespace and etcd) run one at a time, from the cache that holds our
 *   own writes (read-your-writes), so the duplicate rule never sees a stale peer;
 * - a handler result whose status write failed is kept and replayed, never asked for again;
 * - retry bookkeeping (`retries`, `retryAt`) follows `nextRetryState`; backoff timers are jittered
 *   (backoff-jitter.ts); a periodic resync re-derives every timer from the objects, so no requeue is lost.
 */
import * as Cause from "effect/Cause";
import * as Clock from "effect/Clock";
import * as Duration from "effect/Duration";
import * as Effect from "effect/Effect";
import * as FiberMap from "effect/FiberMap";
import * as Schedule from "effect/Schedule";
import type * as Scope from "effect/Scope";
import * as Stream from "effect/Stream";
import { isTerminal } from "../api/status.ts";
import type { PassEnd, TaskEffect } from "../effects/task-effect.ts";
import type { HandlerRegistry } from "../handlers/handler.ts";
import type { KubeError } from "../interpreters/kubernetes/errors.ts";
import { EventRecorder } from "../interpreters/kubernetes/event-recorder.ts";
import type { KubeAccess } from "../interpreters/kubernetes/kube-client-node.ts";
import { type KubeObject, objectKey } from "../interpreters/kubernetes/object.ts";
import type { RequestCounter } from "../interpreters/kubernetes/request-metrics.ts";
import { TaskWriter } from "../interpreters/kubernetes/task-writer.ts";
import { hasStatus } from "../interpreters/status-json-patch.ts";
import type { LifecycleConfig, Phase, PhaseOutcome } from "../machine/types.ts";
import { ControllerMemory, type Kept, type PassHold } from "../reconcile/controller-memory.ts";
import { defectOutcome } from "../reconcile/handler-defect.ts";
import {
  advance,
  answerDelete,
  deliver,
  nextEffect,
  type Pass,
  passEnd,
  startPass,
} from "../reconcile/pass.ts";
import { type ResourceRef, readFacts, type TaskFacts, type TaskKind } from "../reconcile/task-kind.ts";
import { jittered } from "./backoff-jitter.ts";
import { makeForeignWriterWatch, ownFieldManagers, reportForeignWrites } from "./foreign-writers.ts";
import { makeInformer } from "./informer.ts";
import { type ControllerObserver, noObserver, type TaskLabels } from "./metrics.ts";
import { type TriggerReason, TriggerReasons } from "./trigger-reason.ts";
import { makeWorkQueue, type WorkQueueMetrics } from "./work-queue.ts";

export interface ControllerOptions<Task, R> {
  readonly kind: TaskKind<Task>;
  readonly handlers: HandlerRegistry<Task, R>;
  readonly config: LifecycleConfig;
  /** opstask's lean `KubeClient` (`loadKubeClient`) or a client-node `KubeConfig`. */
  readonly kubeConfig: KubeAccess;
  /** Watch one namespace; all when absent. */
  readonly namespace?: string;
  /** Passes run at once (druid: 3). Handler calls do not count: they never hold a worker. */
  readonly concurrency: number;
  /** Every task is reconciled again this often, whatever happened (default 10 minutes). */
  readonly resyncInterval?: Duration.Input;
  /**
   * Objects that name the admission groups (Etcd for EtcdOpsTask): a change to one re-triggers the
   * unfinished tasks of its group in its namespace.
   */
  readonly groupResource?: Pick<ResourceRef, "group" | "version" | "plural">;
  /** Where the informers count their LIST and WATCH requests (share the writer's to see every request). */
  readonly counter?: RequestCounter;
  /** Told about every pass and every finished task (metrics). */
  readonly observer?: ControllerObserver;
}

/** What the controller exposes while it runs. */
export interface ControllerHandle {
  /** Completes once the task cache holds the first LIST. */
  readonly synced: Effect.Effect<void>;
  readonly stats: () => ControllerStats;
  readonly queue: () => WorkQueueMetrics;
}

export interface ControllerStats {
  readonly passes: number;
  readonly aborted: number;
  readonly handlerCalls: number;
  readonly inFlightCalls: number;
  readonly writes: Readonly<Record<string, number>>;
  /** Per-task entries kept beside the cache (retry state, unwritten results, released tasks). */
  readonly remembered: number;
}

interface Running extends PassHold {
  readonly runId: string;
  /** Labels of the task's metrics (type, etcd, namespace). */
  readonly labels: Omit<TaskLabels, "state">;
  readonly createdAt: number;
  object: KubeObject;
  /** A handler result not yet on the object. */
  unpersisted?: Kept | undefined;
  /** The admission group this pass holds, if it may admit. */
  lockedGroup: string | undefined;
  readonly started: number;
}

type WriteOutcome = "ok" | "gone" | { readonly failed: KubeError };

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
    const writer = yield* TaskWriter;
    const recorder = yield* EventRecorder;
    const supported = Object.keys(handlers).sort();
    const foreign = makeForeignWriterWatch({ ownManagers: ownFieldManagers, finalizer: kind.finalizer });
    const informer = yield* makeInformer({
      kubeConfig: options.kubeConfig,
      resource: kind.resource,
      inspect: foreign.inspect,
      ...(options.counter === undefined ? {} : { counter: options.counter }),
      ...(options.namespace === undefined ? {} : { namespace: options.namespace }),
    });

    // ---- memory that a restart loses (and the design survives losing) ----------------------------
    const memory = new ControllerMemory({ config, supported });
    /** Tasks whose last finalizer we removed (gone), until the cache sees them go. */
    const released = new Set<string>();
    const reasons = new TriggerReasons();
    const calls = yield* FiberMap.make<string>();
    const stats = { passes: 0, aborted: 0, handlerCalls: 0, writes: {} as Record<string, number> };
    /** Whether the cache still holds this task (a pass can end after its task's DELETED event). */
    const cached = (running: Running): boolean => {
      const [namespace, name] = splitKey(running.key);
      return informer.get(namespace, name)?.metadata.uid === running.uid;
    };
    let runSerial = 0;

    // Decoded when needed (the task of a pass, its few group peers, a changed object) rather than kept
    // for every cached task: memory stays at the informer's one copy per task (decoding takes ~20 µs).
    const factsOf = (object: KubeObject): TaskFacts | undefined => readFacts(kind, object);
    // The change stream decodes an object to find its group; the pass that follows on the same cached
    // object takes those facts instead of decoding it again (a quarter of a restart's CPU). An entry
    // lives until that pass or until the object is dropped (weak), so memory does not grow with it.
    const streamFacts = new WeakMap<KubeObject, TaskFacts | undefined>();

    // Tasks by admission group (`namespace/group`), kept from the change stream: admission and peer
    // wake-ups read one group, never the whole namespace (that was quadratic in the number of tasks).
    // Most groups have one task (one etcd, one task): such a group holds the key itself, not a Set.
    const groupMembers = new Map<string, string | Set<string>>();
    const groupOfKey = new Map<string, string>();
    const regroup = (key: string, group: string | undefined): void => {
      const previous = groupOfKey.get(key);
      if (previous === group) return;
      if (previous !== undefined) {
        const members = groupMembers.get(previous);
        if (members === key) groupMembers.delete(previous);
        else if (typeof members !== "string" && members !== undefined) {
          members.delete(key);
          if (members.size === 1) groupMembers.set(previous, members.values().next().value ?? "");
        }
      }
      if (group === undefined) {
        groupOfKey.delete(key);
        return;
      }
      groupOfKey.set(key, group);
      const members = groupMembers.get(group);
      if (members === undefined) groupMembers.set(group, key);
      else if (typeof members === "string") groupMembers.set(group, new Set([members, key]));
      else members.add(key);
    };
    const membersOf = (group: string): ReadonlyArray<string> => {
      const members = groupMembers.get(group);
      return members === undefined ? [] : typeof members === "string" ? [members] : [...members];
    };

    /** The facts of every cached task of a group but `except` (the caller's own task, decoded already). */
    const groupFacts = (group: string, except?: string): TaskFacts[] =>
      membersOf(group).flatMap((member) => {
        if (member === except) return [];
        const [namespace, name] = splitKey(member);
        const object = informer.get(namespace, name);
        const facts = object === undefined ? undefined : factsOf(object);
        return facts === undefined ? [] : [facts];
      });

    // The queue is created below; `enqueue` is bound once it exists.
    let enqueue: (key: string, reason: TriggerReason) => Effect.Effect<void> = () => Effect.void;

    /** Runs deferred keys that the memory freed. */
    const runAgain = (keys: ReadonlyArray<string>): Effect.Effect<void> =>
      Effect.forEach(keys, (key) => enqueue(key, "deferred"), { discard: true });

    // ---- effects -------------------------------------------------------------------------------

    const write = (running: Running, effect: TaskEffect): Effect.Effect<WriteOutcome> => {
      const meta = running.object.metadata;
      const target = {
        name: meta.name,
        namespace: meta.namespace,
        uid: meta.uid,
        resourceVersion: meta.resourceVersion,
        finalizers: Array.isArray(meta.finalizers)
          ? meta.finalizers.filter((f): f is string => typeof f === "string")
          : [],
      };
      const performed: Effect.Effect<KubeObject | undefined, KubeError> | undefined =
        effect._tag === "AddFinalizer"
          ? writer.addFinalizer(target, effect.finalizer, effect.machineVersion)
          : effect._tag === "PatchStatus"
            ? writer.patchStatus({ ...target, hasStatus: hasStatus(running.object) }, effect.patch)
            : effect._tag === "DeleteTask"
              ? writer.deleteTask(target)
              : effect._tag === "RemoveFinalizer"
                ? writer.removeFinalizer(target, effect.finalizer)
                : undefined;
      if (performed === undefined) return Effect.succeed("ok");
      return performed.pipe(
        Effect.map((result): WriteOutcome => {
          stats.writes[effect._tag] = (stats.writes[effect._tag] ?? 0) + 1;
          if (result === undefined) return "gone";
          if (result.metadata.uid !== running.uid) return "gone";
          running.object = result;
          informer.upsert(result);
          // Our finalizer was the last one of a deleting task: the object is gone now, even if the
          // cache has not heard of it yet; no later pass may act on the cached copy. (If the cache has
          // heard already, there is no copy left to guard, and nothing to remember.)
          const remaining = Array.isArray(result.metadata.finalizers) ? result.metadata.finalizers.length : 0;
          if (
            effect._tag === "RemoveFinalizer" &&
            remaining === 0 &&
            result.metadata.deletionTimestamp !== undefined &&
            cached(running)
          ) {
            released.add(running.uid);
          }
          return "ok";
        }),
        Effect.catch((error: KubeError) =>
          Effect.succeed<WriteOutcome>(error.reason === "NotFound" ? "gone" : { failed: error }),
        ),
      );
    };

    const callHandler = (running: Running, phase: Phase): Effect.Effect<PhaseOutcome, never, R> => {
      const decoded = kind.decode(running.object);
      if (!decoded.ok)
        return Effect.succeed(defectOutcome(`task no longer decodes: ${decoded.failure.errors.join("; ")}`));
      const facts = kind.facts(decoded.task);
      const handler = handlers[facts.member];
      if (handler === undefined) return Effect.succeed(defectOutcome(`no handler for ${facts.member}`));
      stats.handlerCalls += 1;
      return handler[phase](decoded.task).pipe(
        Effect.catchCause((cause) =>
          Effect.succeed(defectOutcome(Cause.pretty(cause).split("\n")[0] ?? "defect")),
        ),
      );
    };

    // ---- one pass --------------------------------------------------------------------------------

    const finish = (running: Running, end: PassEnd): Effect.Effect<void> =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis;
        stats.passes += 1;
        observer.passEnded("ended", (now - running.started) / 1000);
        const ready = memory.ended(running, end, now, cached(running));
        if (end._tag === "RequeueAfter") {
          reasons.timer(running.key, end.reason);
          const delayMs = end.reason === "backoff" ? yield* jittered(end.delayMs) : end.delayMs;
          yield* queue.addAfter(running.key, Duration.millis(delayMs));
        } else {
          yield* queue.cancelAfter(running.key);
        }
        yield* Effect.logDebug("pass ended").pipe(
          Effect.annotateLogs({
            reconcileID: running.runId,
            task: running.key,
            end: end._tag,
            reason: end.reason,
          }),
        );
        yield* runAgain(ready);
      });

    const abort = (running: Running, reason: string): Effect.Effect<void> =>
      Effect.gen(function* () {
        stats.aborted += 1;
        observer.passEnded("aborted", ((yield* Clock.currentTimeMillis) - running.started) / 1000);
        const { delayMs, ready } = memory.aborted(running, running.unpersisted, cached(running));
        reasons.timer(running.key, "backoff");
        yield* queue.addAfter(running.key, Duration.millis(yield* jittered(delayMs)));
        yield* Effect.logWarning("pass aborted").pipe(
          Effect.annotateLogs({ reconcileID: running.runId, task: running.key, reason }),
        );
        yield* runAgain(ready);
      });

    const gone = (running: Running): Effect.Effect<void> =>
      Effect.gen(function* () {
        observer.passEnded("gone", ((yield* Clock.currentTimeMillis) - running.started) / 1000);
        yield* runAgain(memory.gone(running));
      });

    /** Performs effects until the pass ends, aborts, or hands a handler call to a fiber of its own. */
    const drive = (running: Running, start: Pass): Effect.Effect<void, never, R> =>
      Effect.gen(function* () {
        let pass = start;
        for (;;) {
          const end = passEnd(pass);
          if (end !== undefined) {
            observer.passTransitions?.({ key: running.key, uid: running.uid, runId: running.runId }, pass);
            return yield* finish(running, end);
          }
          const effect = nextEffect(pass);
          if (effect === undefined)
            return yield* abort(running, "the pass ended without a requeue or await effect");
          if (effect._tag === "RunPhase") {
            const parked = pass;
            const { lockedGroup, ready } = memory.calling(running, effect.phase);
            running.lockedGroup = lockedGroup;
            yield* runAgain(ready);
            const call = callHandler(running, effect.phase).pipe(
              Effect.flatMap((outcome) =>
                Effect.gen(function* () {
                  const now = yield* Clock.currentTimeMillis;
                  running.unpersisted = { known: { phase: effect.phase, outcome } };
                  yield* drive(running, deliver(parked, effect.phase, outcome, now));
                }),
              ),
            );
            yield* FiberMap.run(calls, running.key, call);
            return;
          }
          if (effect._tag === "RecordEvent") {
            const meta = running.object.metadata;
            yield* recorder.record(
              {
                name: meta.name,
                namespace: meta.namespace,
                uid: meta.uid,
                resourceVersion: meta.resourceVersion,
              },
              { type: effect.eventType, reason: effect.reason, note: effect.note },
            );
            pass = advance(pass);
            continue;
          }
          const written = yield* write(running, effect);
          if (effect._tag === "DeleteTask" && written !== "gone") {
            // The machine decides what a failed DELETE means (recorded, retried with backoff).
            const now = yield* Clock.currentTimeMillis;
            pass = answerDelete(pass, written === "ok" ? {} : { failed: written.failed.message }, now);
            continue;
          }
          if (written !== "ok")
            observer.passTransitions?.({ key: running.key, uid: running.uid, runId: running.runId }, pass);
          if (written === "gone") return yield* gone(running);
          if (written !== "ok") return yield* abort(running, `${effect._tag}: ${written.failed.message}`);
          const finished = effect._tag === "PatchStatus" ? effect.patch.state : undefined;
          if (typeof finished === "string" && isTerminal(finished)) {
            const now = yield* Clock.currentTimeMillis;
            observer.taskFinished({ ...running.labels, state: finished }, (now - running.createdAt) / 1000);
          }
          if (
            running.unpersisted !== undefined &&
            (effect._tag === "PatchStatus" || effect._tag === "RemoveFinalizer")
          ) {
            running.unpersisted = undefined;
          }
          pass = advance(pass);
        }
      });

    const reconcile = (key: string): Effect.Effect<void, never, R> =>
      Effect.gen(function* () {
        const trigger = reasons.take(key);
        const [namespace, name] = splitKey(key);
        const object = informer.get(namespace, name);
        if (object === undefined || released.has(object.metadata.uid)) return;
        const facts = streamFacts.has(object) ? streamFacts.get(object) : factsOf(object);
        streamFacts.delete(object);
        if (facts === undefined) {
          const decoded = kind.decode(object);
          const errors = decoded.ok ? [] : decoded.failure.errors;
          // Not even its metadata decodes: nothing can be written to it. (A bad spec or status is
          // handled by the machine: the task is Rejected with ERR_INVALID_TASK naming the fields.)
          yield* Effect.logError("task metadata does not decode; fix the object").pipe(
            Effect.annotateLogs({ task: key, errors: errors.join("; ") }),
          );
          return;
        }
        const groupKey = facts.group === undefined ? undefined : `${namespace}/${facts.group}`;
        const now = yield* Clock.currentTimeMillis;
        runSerial += 1;
        const runId = `${now.toString(36)}-${runSerial.toString(36)}`;
        const peers = () => (groupKey === undefined ? [] : groupFacts(groupKey, key));
        const started = memory.start(key, facts, peers, now, runId);
        // Deferred: the key is in a pass already, or another pass holds its admission group.
        if (started === undefined) return;
        const { input, kept, lockedGroup } = started;
        const pass = startPass(input);
        const running: Running = {
          key,
          uid: started.uid,
          runId,
          labels: {
            type: facts.member === "" ? "invalid" : facts.member,
            etcd: facts.group ?? "",
            namespace,
          },
          createdAt: input.task.createdAt,
          object,
          unpersisted: kept !== undefined && pass.snapshot.context.replayed ? kept : undefined,
          lockedGroup,
          started: now,
        };
        // A pass that acts is logged at info, with the machine's steps; a no-op pass only at debug.
        const acts = pass.pending.some(
          (effect) => effect._tag !== "RequeueAfter" && effect._tag !== "AwaitChange",
        );
        yield* (acts ? Effect.logInfo("pass") : Effect.logDebug("pass")).pipe(
          Effect.annotateLogs({
            reconcileID: runId,
            task: key,
            trigger,
            transitions: pass.transitions.map((t) => `${t.from} -[${t.event}]-> ${t.to}`).join(", "),
          }),
        );
        yield* drive(running, pass);
      }).pipe(Effect.withLogSpan("reconcile"));

    const queue = yield* makeWorkQueue({ concurrency: options.concurrency, process: reconcile });
    enqueue = (key, reason) => {
      reasons.note(key, reason);
      return queue.add(key);
    };

    // ---- what triggers passes ------------------------------------------------------------------

    /** A task's deletion cancels its Admit or Execute call: the result would be for nobody. */
    const cancelCall = (key: string, uid: string): Effect.Effect<void> =>
      Effect.gen(function* () {
        const { cancelled, ready } = memory.cancel(key, uid);
        if (!cancelled) return;
        yield* FiberMap.remove(calls, key);
        yield* runAgain(ready);
        yield* enqueue(key, "object changed");
      });

    yield* informer.changes.pipe(
      Stream.runForEach((change) =>
        Effect.gen(function* () {
          const object = change.object;
          const key = objectKey(object.metadata.namespace, object.metadata.name);
          const facts = factsOf(object);
          if (change.type !== "DELETED") streamFacts.set(object, facts);
          if (change.type === "DELETED" || object.metadata.deletionTimestamp !== undefined) {
            yield* cancelCall(key, object.metadata.uid);
          }
          if (change.type === "DELETED") {
            memory.forget(object.metadata.uid);
            released.delete(object.metadata.uid);
            foreign.forget(object.metadata.uid);
          }
          yield* reportForeignWrites(foreign.drain(), recorder, observer);
          const groupKey =
            facts?.group === undefined ? undefined : `${object.metadata.namespace}/${facts.group}`;
          regroup(key, change.type === "DELETED" ? undefined : groupKey);
          if (change.type !== "DELETED")
            yield* enqueue(key, change.type === "ADDED" ? "object added" : "object changed");
          if (facts === undefined || groupKey === undefined) return;
          if (!memory.peersMustLook(change.type, facts)) return;
          for (const peer of groupFacts(groupKey, key)) {
            if (peer.metadata.uid !== object.metadata.uid && !isTerminal(peer.status.state)) {
              yield* enqueue(objectKey(peer.metadata.namespace, peer.metadata.name), "peer changed");
            }
          }
        }),
      ),
      Effect.forkScoped,
    );

    if (options.groupResource !== undefined) {
      const groups = yield* makeInformer({
        kubeConfig: options.kubeConfig,
        resource: options.groupResource,
        ...(options.counter === undefined ? {} : { counter: options.counter }),
        ...(options.namespace === undefined ? {} : { namespace: options.namespace }),
      });
      yield* groups.changes.pipe(
        Stream.runForEach((change) =>
          Effect.forEach(
            groupFacts(`${change.object.metadata.namespace}/${change.object.metadata.name}`).filter(
              (task) => !isTerminal(task.status.state),
            ),
            (task) =>
              enqueue(objectKey(task.metadata.namespace, task.metadata.name), "related object changed"),
            { discard: true },
          ),
        ),
        Effect.forkScoped,
      );
    }

    // Level-triggered safety net: re-derive every task's next step now and then.
    yield* Effect.gen(function* () {
      yield* informer.synced;
      for (const key of informer.keys()) yield* enqueue(key, "resync");
    }).pipe(
      Effect.repeat(Schedule.spaced(options.resyncInterval ?? Duration.minutes(10))),
      Effect.forkScoped,
    );

    return {
      synced: informer.synced,
      stats: () => ({
        ...stats,
        writes: { ...stats.writes },
        inFlightCalls: memory.busyCount,
        remembered: memory.remembered + released.size,
      }),
      queue: () => queue.metrics(),
    };
  });
