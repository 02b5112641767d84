/**
 * The handler context on a cluster (src/handlers/handler-context.ts): the object reader over the controller's
 * `KubeClient`, Events through the controller's `EventRecorder`, log lines through the controller's
 * Effect loggers (so they carry its format, level and the task's keys), and the call's abort signal.
 */

import type * as Context from "effect/Context";
import * as Effect from "effect/Effect";
import type {
  HandlerContext,
  ObjectGetter,
  ObjectResource,
  OwnTask,
  TaskLogger,
} from "../handlers/handler-context.ts";
import { taskLogKeys } from "../handlers/handler-context.ts";
import { ObjectsUnavailable } from "../handlers/objects-unavailable.ts";
import type { EventRecorder, EventSubject } from "../interpreters/kubernetes/event-recorder.ts";
import { apiPath } from "../kube/api-path.ts";
import { mergePatch } from "../kube/client.ts";
import { ApiCallError, type KubeClient } from "../kube/kube-client.ts";
import type { RequestCounter } from "../kube/request-metrics.ts";
import type { Phase } from "../machine/types.ts";
import { callFailed, kubeOwnRecord, stringsAt } from "./own-record-kube.ts";

/** An `ObjectGetter` whose reads a call's abort signal cancels. */
export interface KubeObjectGetter {
  readonly get: (
    resource: ObjectResource,
    namespace: string,
    name: string,
    signal?: AbortSignal,
  ) => Promise<unknown>;
}

/**
 * GETs one object; 404 is `undefined`; an unanswered request, 429 or 5xx rejects with
 * `ObjectsUnavailable`, anything else with an Error naming the object.
 */
export const kubeObjectGetter = (client: KubeClient, counter?: RequestCounter): KubeObjectGetter => ({
  get: async (resource: ObjectResource, namespace: string, name: string, signal?: AbortSignal) => {
    const path = apiPath(resource, namespace === "" ? undefined : namespace, name);
    try {
      const response = await client.request({ method: "GET", path }, signal);
      counter?.record("get", response.status);
      return response.body;
    } catch (error) {
      const status = error instanceof ApiCallError ? error.statusCode : 0;
      counter?.record("get", status);
      if (status === 404) return undefined;
      const reason = error instanceof Error ? error.message : String(error);
      if (status === 0 || status === 429 || status >= 500)
        throw new ObjectsUnavailable(path, `reading ${path} failed: ${reason}`, { cause: error });
      throw new Error(`reading ${path} failed: ${reason}`, { cause: error });
    }
  },
});

export interface KubeCallContext {
  readonly phase: Phase;
  readonly attempt: number;
  readonly reconcileID: string;
  /** The task as last read (the Event's subject, the log keys). */
  readonly subject: EventSubject;
  readonly client: KubeClient;
  readonly objects: KubeObjectGetter;
  readonly signal: AbortSignal;
  /** The task's resource: with it the call may annotate its own task (`ownTask`). */
  readonly resource?: ObjectResource;
  /** The controller's namespace for its records (`ownRecord`), and the kind's name they mention. */
  readonly records?: { readonly namespace: string; readonly kind: string };
}

/** `metadata.annotations` of an object as the API returned it (string values only). */
const annotationsOf = (body: unknown): Readonly<Record<string, string>> =>
  stringsAt(
    typeof body === "object" && body !== null && "metadata" in body ? body.metadata : undefined,
    "annotations",
  );

/**
 * Annotations of the task itself, as a merge patch that carries the task's UID: the apiserver refuses
 * a patch whose `metadata.uid` differs from the stored object's (a namesake created since), so a late
 * call never writes its progress onto another task.
 */
export const kubeOwnTask = (
  client: KubeClient,
  resource: ObjectResource,
  subject: EventSubject,
  signal?: AbortSignal,
): OwnTask => ({
  annotate: async (annotations) => {
    const path = apiPath(resource, subject.namespace, subject.name);
    try {
      const response = await client.request(
        {
          method: "PATCH",
          path,
          contentType: mergePatch,
          body: { metadata: { uid: subject.uid, annotations } },
        },
        signal,
      );
      return annotationsOf(response.body);
    } catch (error) {
      throw callFailed(path, "annotating", error);
    }
  },
});

/** The context of one handler call, over the services of the controller's fiber. */
export const kubeHandlerContext = (
  call: KubeCallContext,
  services: Context.Context<EventRecorder>,
  recorder: EventRecorder["Service"],
): HandlerContext => {
  const keys = taskLogKeys(call.subject, call.phase, call.reconcileID);
  const run = Effect.runForkWith(services);
  const line =
    (log: (message: string) => Effect.Effect<void>) =>
    (message: string, fields: Readonly<Record<string, unknown>> = {}) =>
      void run(log(message).pipe(Effect.annotateLogs({ ...fields, ...keys })));
  const log: TaskLogger = {
    debug: line(Effect.logDebug),
    info: line(Effect.logInfo),
    warn: line(Effect.logWarning),
    error: line(Effect.logError),
  };
  return {
    phase: call.phase,
    attempt: call.attempt,
    log,
    objects: {
      get: (resource, namespace, name) => call.objects.get(resource, namespace, name, call.signal),
    } satisfies ObjectGetter,
    events: {
      record: (type, reason, note) => void run(recorder.record(call.subject, { type, reason, note })),
    },
    kube: call.client,
    signal: call.signal,
    ...(call.resource === undefined
      ? {}
      : { ownTask: kubeOwnTask(call.client, call.resource, call.subject, call.signal) }),
    ...(call.records === undefined
      ? {}
      : {
          ownRecord: kubeOwnRecord(
            call.client,
            call.records.namespace,
            call.subject,
            call.records.kind,
            call.signal,
          ),
        }),
    clock: Date.now,
  };
};
