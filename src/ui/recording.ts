/**
 * What feeds the task board besides `passTransitions`: decorators around the services a controller
 * already uses, so that the board sees what each pass actually did (handler calls and their outcomes,
 * writes and their results, Events) without a change to the controller or the pass driver.
 *
 * - `recordingKind`: the task kind, reporting every task it decodes (cache changes, pass starts);
 * - `recordingHandlers`: the handler registry, reporting each call when it starts and when it returns
 *   (or is interrupted by the task's deletion);
 * - `recordingLayer`: TaskWriter and EventRecorder over the ones of a Kubernetes layer, reporting each
 *   write with its result (and the object it returned) and each Event.
 *
 * Reporting never changes what the services do or return, and never fails them.
 */
import * as Context from "effect/Context";
import * as Effect from "effect/Effect";
import * as Layer from "effect/Layer";
import type { HandlerRegistry, TaskHandler } from "../handlers/handler.ts";
import type { HandlerContext } from "../handlers/handler-context.ts";
import { EventRecorder } from "../interpreters/kubernetes/event-recorder.ts";
import { KubeRequests } from "../interpreters/kubernetes/layer.ts";
import { TaskWriter } from "../interpreters/kubernetes/task-writer.ts";
import type { KubeError } from "../kube/errors.ts";
import type { KubeObject } from "../kube/object.ts";
import type { Phase, PhaseOutcome } from "../machine/types.ts";
import { oversizedOf } from "../reconcile/oversized-task.ts";
import { readFacts, type TaskFacts, type TaskKind } from "../reconcile/task-kind.ts";
import type { Activity, CallRecord, WriteRecord } from "./board-records.ts";

/** Where the decorators report (the board's store). */
export interface BoardFeed {
  readonly observeFacts: (facts: TaskFacts, now: number) => void;
  readonly record: (uid: string, activity: Activity, now: number) => void;
}

export const recordingKind = <Task>(kind: TaskKind<Task>, feed: BoardFeed): TaskKind<Task> => ({
  ...kind,
  decode: (object) => {
    const decoded = kind.decode(object);
    // A stub of a task too large to cache has no spec: the board shows why, not the missing field.
    const tooLarge = oversizedOf(object) === undefined ? undefined : readFacts(kind, object);
    if (tooLarge !== undefined) feed.observeFacts(tooLarge, Date.now());
    else if (!decoded.ok && decoded.failure.metadata !== undefined) {
      const { metadata, status, errors } = decoded.failure;
      feed.observeFacts(
        { metadata, ttlSeconds: kind.defaultTtlSeconds, member: "", status: status ?? {}, invalid: errors },
        Date.now(),
      );
    }
    return decoded;
  },
  facts: (task) => {
    const facts = kind.facts(task);
    feed.observeFacts(facts, Date.now());
    return facts;
  },
});

const outcomeRecord = (phase: Phase, outcome: PhaseOutcome, ms: number): CallRecord => ({
  phase,
  outcome: outcome.kind,
  description: outcome.description,
  ms,
  ...(outcome.kind !== "retry" && outcome.kind !== "failed"
    ? {}
    : outcome.error === undefined
      ? {}
      : { error: `${outcome.error.code}: ${outcome.error.message}` }),
});

export const recordingHandlers = <Task, R>(
  handlers: HandlerRegistry<Task, R>,
  kind: TaskKind<Task>,
  feed: BoardFeed,
): HandlerRegistry<Task, R> => {
  const wrap =
    (phase: Phase, call: TaskHandler<Task, R>[Phase]) =>
    (task: Task, context: HandlerContext): Effect.Effect<PhaseOutcome, never, R> =>
      Effect.suspend(() => {
        const uid = kind.facts(task).metadata.uid;
        const started = Date.now();
        feed.record(uid, { _tag: "call", call: { phase, outcome: "running" } }, started);
        return call(task, context).pipe(
          Effect.tap((outcome) =>
            Effect.sync(() => {
              const now = Date.now();
              feed.record(uid, { _tag: "call", call: outcomeRecord(phase, outcome, now - started) }, now);
            }),
          ),
          Effect.onInterrupt(() =>
            Effect.sync(() => {
              const now = Date.now();
              feed.record(
                uid,
                { _tag: "call", call: { phase, outcome: "interrupted", ms: now - started } },
                now,
              );
            }),
          ),
        );
      });
  return Object.fromEntries(
    Object.entries(handlers).map(([member, handler]) => [
      member,
      {
        admit: wrap("admit", handler.admit),
        execute: wrap("execute", handler.execute),
        cleanup: wrap("cleanup", handler.cleanup),
      },
    ]),
  );
};

/** Reports a write and, when the API returned the object, the task as it is now. */
const recordWrite =
  <Task>(
    kind: TaskKind<Task>,
    feed: BoardFeed,
    uid: string,
    write: WriteRecord["write"],
    fields?: string[],
  ) =>
  <A extends KubeObject | undefined>(effect: Effect.Effect<A, KubeError>): Effect.Effect<A, KubeError> =>
    effect.pipe(
      Effect.tap((result) =>
        Effect.sync(() => {
          const now = Date.now();
          const record: WriteRecord = {
            write,
            ...(fields === undefined ? {} : { fields }),
            result: result === undefined ? "gone" : "ok",
          };
          feed.record(uid, { _tag: "write", write: record }, now);
          const facts = result === undefined ? undefined : readFacts(kind, result);
          if (facts !== undefined) feed.observeFacts(facts, now);
        }),
      ),
      Effect.tapError((error) =>
        Effect.sync(() =>
          feed.record(
            uid,
            {
              _tag: "write",
              write: {
                write,
                ...(fields === undefined ? {} : { fields }),
                result: `${error.reason}: ${error.message}`,
              },
            },
            Date.now(),
          ),
        ),
      ),
    );

/**
 * The services of `kubernetes` (a `kubernetesLayer`), with TaskWriter and EventRecorder reporting to
 * `feed`. `kind` is the undecorated task kind (a write's result is reported once, here).
 */
export const recordingLayer = <Task>(
  kubernetes: Layer.Layer<TaskWriter | EventRecorder | KubeRequests>,
  kind: TaskKind<Task>,
  feed: BoardFeed,
): Layer.Layer<TaskWriter | EventRecorder | KubeRequests> =>
  Layer.effectContext(
    Effect.gen(function* () {
      const writer = yield* TaskWriter;
      const recorder = yield* EventRecorder;
      const requests = yield* KubeRequests;
      const recorded: TaskWriter["Service"] = {
        addFinalizer: (target, finalizer, version) =>
          writer
            .addFinalizer(target, finalizer, version)
            .pipe(recordWrite(kind, feed, target.uid, "AddFinalizer")),
        patchStatus: (target, changes) =>
          writer
            .patchStatus(target, changes)
            .pipe(recordWrite(kind, feed, target.uid, "PatchStatus", Object.keys(changes))),
        deleteTask: (target) =>
          writer.deleteTask(target).pipe(recordWrite(kind, feed, target.uid, "DeleteTask")),
        removeFinalizer: (target, finalizer) =>
          writer
            .removeFinalizer(target, finalizer)
            .pipe(recordWrite(kind, feed, target.uid, "RemoveFinalizer")),
      };
      const events: EventRecorder["Service"] = {
        record: (subject, event) =>
          recorder
            .record(subject, event)
            .pipe(
              Effect.tap(() =>
                Effect.sync(() =>
                  feed.record(
                    subject.uid,
                    { _tag: "event", event: { type: event.type, reason: event.reason, note: event.note } },
                    Date.now(),
                  ),
                ),
              ),
            ),
      };
      return Context.make(TaskWriter, recorded).pipe(
        Context.add(EventRecorder, events),
        Context.add(KubeRequests, requests),
      );
    }),
  ).pipe(Layer.provide(kubernetes));
