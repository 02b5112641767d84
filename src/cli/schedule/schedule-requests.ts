/**
 * The requests `opstask schedule` makes: TaskSchedules read, created and patched, runs listed and
 * created, through the controller's own client (writes as `opstask-cli`). Each fails only with
 * `KubeError`.
 */
import * as Duration from "effect/Duration";
import * as Effect from "effect/Effect";
import { apiPath } from "../../kube/api-path.ts";
import { kubeRequest, mergePatch, type RequestSettings } from "../../kube/client.ts";
import { KubeError } from "../../kube/errors.ts";
import type { KubeClient } from "../../kube/kube-client.ts";
import { isKubeObject, type KubeObject } from "../../kube/object.ts";
import { RequestCounter } from "../../kube/request-metrics.ts";
import type { ResourceRef } from "../../reconcile/task-kind.ts";
import { scheduleLabel } from "../../schedule/run-names.ts";
import { scheduleResource } from "../../schedule/schedule-spec.ts";

export interface ScheduleApi {
  readonly get: (namespace: string, name: string) => Effect.Effect<KubeObject, KubeError>;
  readonly list: (namespace: string) => Effect.Effect<ReadonlyArray<KubeObject>, KubeError>;
  readonly create: (namespace: string, body: object) => Effect.Effect<KubeObject, KubeError>;
  readonly setSuspend: (
    namespace: string,
    name: string,
    suspend: boolean,
  ) => Effect.Effect<KubeObject, KubeError>;
  readonly runs: (
    resource: Pick<ResourceRef, "group" | "version" | "plural">,
    namespace: string,
    schedule: string,
  ) => Effect.Effect<ReadonlyArray<KubeObject>, KubeError>;
  readonly createRun: (
    resource: Pick<ResourceRef, "group" | "version" | "plural">,
    namespace: string,
    body: object,
  ) => Effect.Effect<KubeObject, KubeError>;
}

const one = (body: unknown, what: string) =>
  isKubeObject(body)
    ? Effect.succeed(body)
    : Effect.fail(new KubeError({ reason: "Invalid", code: 0, message: `${what}: not a namespaced object` }));

const items = (body: unknown): ReadonlyArray<KubeObject> =>
  typeof body === "object" && body !== null && Array.isArray(Reflect.get(body, "items"))
    ? (Reflect.get(body, "items") as ReadonlyArray<unknown>).filter(isKubeObject)
    : [];

export const scheduleApi = (client: KubeClient): ScheduleApi => {
  const settings: RequestSettings = { counter: new RequestCounter(), timeout: Duration.seconds(30) };
  return {
    get: (namespace, name) =>
      kubeRequest(settings, "get", client, {
        method: "GET",
        path: apiPath(scheduleResource, namespace, name),
      }).pipe(Effect.flatMap((response) => one(response.body, `taskschedule ${namespace}/${name}`))),
    list: (namespace) =>
      kubeRequest(settings, "list", client, {
        method: "GET",
        path: apiPath(scheduleResource, namespace),
      }).pipe(Effect.map((response) => items(response.body))),
    create: (namespace, body) =>
      kubeRequest(settings, "create", client, {
        method: "POST",
        path: apiPath(scheduleResource, namespace),
        query: { fieldValidation: "Strict" },
        body,
      }).pipe(Effect.flatMap((response) => one(response.body, "the created schedule"))),
    setSuspend: (namespace, name, suspend) =>
      kubeRequest(settings, "patch", client, {
        method: "PATCH",
        path: apiPath(scheduleResource, namespace, name),
        body: { spec: { suspend } },
        contentType: mergePatch,
      }).pipe(Effect.flatMap((response) => one(response.body, `taskschedule ${namespace}/${name}`))),
    runs: (resource, namespace, schedule) =>
      kubeRequest(settings, "list", client, {
        method: "GET",
        path: apiPath(resource, namespace),
        query: { labelSelector: `${scheduleLabel}=${schedule}` },
      }).pipe(Effect.map((response) => items(response.body))),
    createRun: (resource, namespace, body) =>
      kubeRequest(settings, "create", client, {
        method: "POST",
        path: apiPath(resource, namespace),
        body,
      }).pipe(Effect.flatMap((response) => one(response.body, "the created run"))),
  };
};
