/**
 * The four writes a reconcile pass makes to its task, each exactly as the memory interpreter models them
 * (src/interpreters/memory/perform-write.ts `performWrite`):
 *
 * - `addFinalizer`: JSON merge patch of metadata carrying `resourceVersion` (a precondition: 409 if the
 *   object changed since it was read, so a foreign finalizer added meanwhile is never dropped by the
 *   list replacement), the finalizer list with ours appended, and the machine-version annotation;
 * - `patchStatus`: JSON patch of the status subresource (src/interpreters/status-json-patch.ts): a `test`
 *   of the UID, so a late result never lands on a re-created namesake (docs/design-notes.md §7), then the
 *   changed fields, with no resourceVersion precondition once the task has a status: we are the only
 *   status writer, and a label edit must not turn into a conflict (docs/design-notes.md §2);
 * - `deleteTask`: DELETE with a UID precondition, so a re-created namesake is never deleted;
 * - `removeFinalizer`: like `addFinalizer`, with the list minus ours (foreign finalizers kept).
 *
 * Transient failures (network, timeouts, 429, 5xx) are retried with a jittered exponential schedule; a
 * Conflict or NotFound comes back at once: the caller decides (re-read, drop, re-apply the result).
 * Faults are visible (write-faults.ts): each failed attempt, each attempt still unanswered after
 * `slowWriteAfter`, and each write given up is logged at WARN and counted (`KubeFaults`).
 */
import * as Context from "effect/Context";
import * as Duration from "effect/Duration";
import * as Effect from "effect/Effect";
import * as Schedule from "effect/Schedule";
import { apiPath } from "../../kube/api-path.ts";
import { jsonPatch, kubeRequest, mergePatch, type RequestSettings } from "../../kube/client.ts";
import { isRetryable, KubeError } from "../../kube/errors.ts";
import { type KubeAccess, kubeClientOf } from "../../kube/kube-client-node.ts";
import { finalizersOf, isKubeObject, type KubeObject } from "../../kube/object.ts";
import type { RequestCounter, Verb } from "../../kube/request-metrics.ts";
import { machineVersionAnnotation, type ResourceRef } from "../../reconcile/task-kind.ts";
import {
  jsonPatchNotApplicable,
  type StatusBase,
  type StatusChanges,
  statusJsonPatch,
} from "../status-json-patch.ts";
import { watchWrite } from "./write-faults.ts";

/** The object a write is about, as last read (TaskMeta from reconcile/task-kind.ts fits). */
export interface WriteTarget {
  readonly name: string;
  readonly namespace: string;
  readonly uid: string;
  readonly resourceVersion: string;
  readonly finalizers?: ReadonlyArray<string>;
}

/** A status write's target: the object as last read, and whether it had a `status` then. */
export interface StatusWriteTarget extends WriteTarget, StatusBase {}

export class TaskWriter extends Context.Service<
  TaskWriter,
  {
    /** Appends `finalizer` (kept once) and stamps the machine version; 409 Conflict if the object changed. */
    addFinalizer(
      target: WriteTarget,
      finalizer: string,
      machineVersion: number,
    ): Effect.Effect<KubeObject, KubeError>;
    /**
     * Changes the status fields in `changes` (`null` removes one) of the object with this UID. A label
     * edit since the read is no conflict; a Conflict means the stored object is not the one last read:
     * re-created under the same name, or its status changed by someone else.
     */
    patchStatus(target: StatusWriteTarget, changes: StatusChanges): Effect.Effect<KubeObject, KubeError>;
    /**
     * Deletes the object with this UID: the object as it stands afterwards (finalizers pending), or
     * `undefined` when it is gone (removed now, or already: 404, or the name now belongs to another UID: 409).
     */
    deleteTask(target: WriteTarget): Effect.Effect<KubeObject | undefined, KubeError>;
    /** Removes `finalizer`, keeping any other; 409 Conflict if the object changed. */
    removeFinalizer(target: WriteTarget, finalizer: string): Effect.Effect<KubeObject, KubeError>;
  }
>()("opstask/kubernetes/TaskWriter") {}

export interface RetryPolicy {
  /** First delay before jitter (default 100 ms); doubles per attempt. */
  readonly base: Duration.Input;
  /** Longest delay before jitter (default 5 s). */
  readonly cap: Duration.Input;
  /** Retries after the first attempt (default 4). */
  readonly retries: number;
}

export const defaultRetryPolicy: RetryPolicy = { base: "100 millis", cap: "5 seconds", retries: 4 };

/** Capped exponential backoff with jitter, only while the error is retryable. */
export const retrySchedule = (policy: RetryPolicy) =>
  Schedule.min([Schedule.exponential(policy.base), Schedule.spaced(policy.cap)]).pipe(
    Schedule.jittered,
    Schedule.upTo({ times: policy.retries }),
    Schedule.setInputType<KubeError>(),
    Schedule.while(({ input }) => isRetryable(input)),
  );

export interface TaskWriterOptions {
  readonly kubeConfig: KubeAccess;
  readonly resource: ResourceRef;
  readonly counter: RequestCounter;
  readonly retry?: RetryPolicy;
  /** Bound on one attempt (default 30 s). */
  readonly requestTimeout?: Duration.Input;
  /** An attempt unanswered this long is logged at WARN and counted as slow (default 5 s). */
  readonly slowWriteAfter?: Duration.Input;
}

const unexpected = (verb: Verb, code: number): KubeError =>
  new KubeError({ reason: "Invalid", code, message: `${verb}: the server returned no object` });

/** A write that came back for another UID hit a re-created namesake: ours is gone. */
const recreated = (target: WriteTarget, object: KubeObject): KubeError =>
  new KubeError({
    reason: "NotFound",
    code: 404,
    message: `${target.namespace}/${target.name} was re-created (uid ${object.metadata.uid}, expected ${target.uid})`,
  });

export const makeTaskWriter = (options: TaskWriterOptions): TaskWriter["Service"] => {
  const client = kubeClientOf(options.kubeConfig);
  const settings: RequestSettings = {
    counter: options.counter,
    timeout: options.requestTimeout ?? Duration.seconds(30),
  };
  const schedule = retrySchedule(options.retry ?? defaultRetryPolicy);
  const watched = watchWrite(options.slowWriteAfter ?? Duration.seconds(5));
  const objectPath = (target: WriteTarget, subresource?: string) =>
    apiPath(options.resource, target.namespace, target.name, subresource);

  /** The object a write returned, checked to be ours. */
  const ownObject = (target: WriteTarget, verb: Verb, code: number, data: unknown) => {
    if (!isKubeObject(data)) return Effect.fail(unexpected(verb, code));
    if (data.metadata.uid !== target.uid) return Effect.fail(recreated(target, data));
    return Effect.succeed(data);
  };

  const patchMetadata = (
    operation: "addFinalizer" | "removeFinalizer",
    target: WriteTarget,
    metadata: Record<string, unknown>,
  ) =>
    watched(
      operation,
      target,
      schedule,
      kubeRequest(settings, "patch", client, {
        method: "PATCH",
        path: objectPath(target),
        body: { metadata: { resourceVersion: target.resourceVersion, ...metadata } },
        contentType: mergePatch,
      }).pipe(Effect.flatMap((response) => ownObject(target, "patch", response.status, response.body))),
    );

  return TaskWriter.of({
    addFinalizer: (target, finalizer, machineVersion) => {
      const existing = finalizersOf({ metadata: target });
      return patchMetadata("addFinalizer", target, {
        finalizers: existing.includes(finalizer) ? existing : [...existing, finalizer],
        annotations: { [machineVersionAnnotation]: String(machineVersion) },
      }).pipe(Effect.withSpan("TaskWriter.addFinalizer"));
    },

    removeFinalizer: (target, finalizer) =>
      patchMetadata("removeFinalizer", target, {
        finalizers: finalizersOf({ metadata: target }).filter((f) => f !== finalizer),
      }).pipe(Effect.withSpan("TaskWriter.removeFinalizer")),

    patchStatus: (target, changes) =>
      watched(
        "patchStatus",
        target,
        schedule,
        kubeRequest(settings, "patch", client, {
          method: "PATCH",
          path: objectPath(target, "status"),
          body: statusJsonPatch(target, changes),
          contentType: jsonPatch,
        }).pipe(Effect.flatMap((response) => ownObject(target, "patch", response.status, response.body))),
      ).pipe(
        Effect.mapError((error) =>
          error.code === 422 && error.message === jsonPatchNotApplicable
            ? new KubeError({
                reason: "Conflict",
                code: 422,
                message: `status of ${target.namespace}/${target.name} not written: the stored object is not the one last read (re-created under the same name, or its status changed by someone else)`,
              })
            : error,
        ),
        Effect.withSpan("TaskWriter.patchStatus"),
      ),

    deleteTask: (target) =>
      watched(
        "deleteTask",
        target,
        schedule,
        kubeRequest(settings, "delete", client, {
          method: "DELETE",
          path: objectPath(target),
          body: { preconditions: { uid: target.uid } },
        }),
      ).pipe(
        // An object removed at once comes back as a `Status`; one held by finalizers as the object.
        Effect.map((response): KubeObject | undefined =>
          isKubeObject(response.body) && finalizersOf(response.body).length > 0 ? response.body : undefined,
        ),
        Effect.catchIf(
          (error) => error.reason === "NotFound" || error.reason === "Conflict",
          () => Effect.succeed(undefined),
        ),
        Effect.withSpan("TaskWriter.deleteTask"),
      ),
  });
};
