/**
 * The Kubernetes interpreter of a pass's requests: each write becomes one request through `TaskWriter`
 * (src/interpreters/kubernetes/task-writer.ts), each Event one through `EventRecorder`. The memory
 * interpreter performs the same requests against `MemoryApiServer` (interpreters/memory/perform-write.ts).
 *
 * Handler calls (`RunPhase`) are not performed here: the runtime runs them in fibers of their own, so
 * that a call never holds a worker.
 */
import * as Clock from "effect/Clock";
import * as Effect from "effect/Effect";
import type { KubeError } from "../../kube/errors.ts";
import type { KubeObject } from "../../kube/object.ts";
import { Answer, type PassRequest } from "../../reconcile/pass.ts";
import { hasStatus } from "../status-json-patch.ts";
import { EventRecorder } from "./event-recorder.ts";
import { TaskWriter } from "./task-writer.ts";

/** Requests this interpreter performs (every one but the handler call). */
export type ClusterRequest = Exclude<PassRequest, { readonly _tag: "RunPhase" }>;

export interface Performed {
  readonly answer: Answer;
  /** The API accepted the write (what "writes per task" counts). */
  readonly accepted: boolean;
  /** The object a successful write returned (the task as it is now), absent when it is gone. */
  readonly written?: KubeObject;
}

const finalizersOf = (object: KubeObject): string[] =>
  Array.isArray(object.metadata.finalizers)
    ? object.metadata.finalizers.filter((f): f is string => typeof f === "string")
    : [];

/**
 * Performs `request` on the task last read or written as `object`: its resourceVersion is the
 * precondition of finalizer patches, its UID the precondition of status patches and DELETE.
 */
export const performOnCluster = (
  object: KubeObject,
  request: ClusterRequest,
): Effect.Effect<Performed, never, TaskWriter | EventRecorder> =>
  Effect.gen(function* () {
    const meta = object.metadata;
    const target = {
      name: meta.name,
      namespace: meta.namespace,
      uid: meta.uid,
      resourceVersion: meta.resourceVersion,
      finalizers: finalizersOf(object),
    };
    if (request._tag === "RecordEvent") {
      const recorder = yield* EventRecorder;
      yield* recorder.record(target, { type: request.eventType, reason: request.reason, note: request.note });
      return { answer: Answer.Done({ now: yield* Clock.currentTimeMillis }), accepted: false };
    }
    const writer = yield* TaskWriter;
    const write: Effect.Effect<KubeObject | undefined, KubeError> =
      request._tag === "AddFinalizer"
        ? writer.addFinalizer(target, request.finalizer, request.machineVersion)
        : request._tag === "PatchStatus"
          ? writer.patchStatus({ ...target, hasStatus: hasStatus(object) }, request.patch)
          : request._tag === "DeleteTask"
            ? writer.deleteTask(target)
            : writer.removeFinalizer(target, request.finalizer);
    const result = yield* Effect.result(write);
    const now = yield* Clock.currentTimeMillis;
    if (result._tag === "Failure") {
      const error = result.failure;
      const answer =
        error.reason === "NotFound" ? Answer.Gone() : Answer.Failed({ cause: error.message, now });
      return { answer, accepted: false };
    }
    const written = result.success;
    // No object back (deleted at once), or the name now holds another object: ours is gone.
    if (written === undefined || written.metadata.uid !== meta.uid)
      return { answer: Answer.Gone(), accepted: true };
    return { answer: Answer.Done({ now }), accepted: true, written };
  });
