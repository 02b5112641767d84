/**
 * The requests the task commands make: create, get, list and delete tasks of a kind, list a task's
 * Events, and a list-watch cache for the commands that follow changes. They go through the
 * controller's own client (src/kube; writes as field manager `opstask-cli`), so a kubeconfig works for
 * both or for neither. Each request is bounded in time and fails only with `KubeError`; watching
 * reuses the controller's informer (relists, bookmarks, backoff).
 */
import * as Duration from "effect/Duration";
import * as Effect from "effect/Effect";
import * as Predicate from "effect/Predicate";
import type * as Scope from "effect/Scope";
import { apiPath } from "../../kube/api-path.ts";
import { kubeRequest, mergePatch, type RequestSettings } from "../../kube/client.ts";
import { KubeError } from "../../kube/errors.ts";
import type { KubeClient } from "../../kube/kube-client.ts";
import { isKubeObject, type KubeObject } from "../../kube/object.ts";
import { RequestCounter } from "../../kube/request-metrics.ts";
import { type Informer, makeInformer } from "../../runtime/informer.ts";
import type { CliKind } from "./cli-kind.ts";

export interface Cluster {
  readonly settings: RequestSettings;
  readonly client: KubeClient;
  /** The task kind the command works on. */
  readonly kind: CliKind;
}

export const connect = (client: KubeClient, kind: CliKind): Cluster => ({
  settings: { counter: new RequestCounter(), timeout: Duration.seconds(30) },
  client,
  kind,
});
const events = { group: "events.k8s.io", version: "v1", plural: "events" };

const asObject = (data: unknown, what: string): Effect.Effect<KubeObject, KubeError> =>
  isKubeObject(data)
    ? Effect.succeed(data)
    : Effect.fail(new KubeError({ reason: "Invalid", code: 0, message: `${what}: not a namespaced object` }));

export const createTask = (
  cluster: Cluster,
  namespace: string,
  manifest: object,
): Effect.Effect<KubeObject, KubeError> =>
  kubeRequest(cluster.settings, "create", cluster.client, {
    method: "POST",
    path: apiPath(cluster.kind.resource, namespace),
    // A field the CRD does not declare (a misspelt one) is refused by name, not silently dropped.
    query: { fieldValidation: "Strict" },
    body: manifest,
  }).pipe(Effect.flatMap((response) => asObject(response.body, "the created task")));

export const getTask = (
  cluster: Cluster,
  namespace: string,
  name: string,
): Effect.Effect<KubeObject, KubeError> =>
  kubeRequest(cluster.settings, "get", cluster.client, {
    method: "GET",
    path: apiPath(cluster.kind.resource, namespace, name),
  }).pipe(Effect.flatMap((response) => asObject(response.body, `task ${namespace}/${name}`)));

const field = (value: unknown, name: string): unknown =>
  Predicate.isObject(value) && name in value ? Reflect.get(value, name) : undefined;

/** Deletes a task (the API server answers with it, still present while finalizers hold it). */
export const deleteTask = (
  cluster: Cluster,
  namespace: string,
  name: string,
): Effect.Effect<void, KubeError> =>
  kubeRequest(cluster.settings, "delete", cluster.client, {
    method: "DELETE",
    path: apiPath(cluster.kind.resource, namespace, name),
  }).pipe(Effect.asVoid);

/**
 * Sets annotations on the task whose UID is `uid` (the apiserver refuses the patch, Conflict, when the
 * name now holds another object).
 */
export const annotateTask = (
  cluster: Cluster,
  namespace: string,
  name: string,
  uid: string,
  annotations: Readonly<Record<string, string>>,
): Effect.Effect<void, KubeError> =>
  kubeRequest(cluster.settings, "patch", cluster.client, {
    method: "PATCH",
    path: apiPath(cluster.kind.resource, namespace, name),
    contentType: mergePatch,
    body: { metadata: { uid, annotations } },
  }).pipe(Effect.asVoid);

/**
 * Who the apiserver says the caller is (a SelfSubjectReview: `request.userInfo`, whatever the
 * kubeconfig calls its user); undefined when the server does not answer it.
 */
export const whoAmI = (cluster: Cluster): Effect.Effect<string | undefined> =>
  kubeRequest(cluster.settings, "create", cluster.client, {
    method: "POST",
    path: "/apis/authentication.k8s.io/v1/selfsubjectreviews",
    body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" },
  }).pipe(
    Effect.map((response) => {
      const name = field(field(field(response.body, "status"), "userInfo"), "username");
      return typeof name === "string" && name !== "" ? name : undefined;
    }),
    Effect.orElseSucceed(() => undefined),
  );

/** Every task of `namespace` (all namespaces when undefined) matching `labelSelector`, all pages. */
export const listTasks = (
  cluster: Cluster,
  namespace: string | undefined,
  labelSelector?: string,
): Effect.Effect<ReadonlyArray<KubeObject>, KubeError> =>
  Effect.gen(function* () {
    const items: KubeObject[] = [];
    let continueToken: string | undefined;
    do {
      const page = yield* kubeRequest(cluster.settings, "list", cluster.client, {
        method: "GET",
        path: apiPath(cluster.kind.resource, namespace),
        query: { limit: 500, continue: continueToken, labelSelector },
      });
      const pageItems = field(page.body, "items");
      if (Array.isArray(pageItems)) items.push(...pageItems.filter(isKubeObject));
      const next = field(field(page.body, "metadata"), "continue");
      continueToken = typeof next === "string" && next !== "" ? next : undefined;
    } while (continueToken !== undefined);
    return items;
  });

/** A Kubernetes Event about a task, reduced to what `describe` shows. */
export interface TaskEventRecord {
  readonly type: string;
  readonly reason: string;
  readonly note: string;
  /** When it (last) happened, ms since the epoch. */
  readonly at: number;
  /** How often it happened (an event series counts repeats). */
  readonly count: number;
  readonly reportingController: string;
}

/** The first valid time of `candidates` (RFC 3339 strings; a Date is taken too). */
const timeOf = (...candidates: ReadonlyArray<unknown>): number | undefined => {
  for (const candidate of candidates) {
    const ms =
      candidate instanceof Date
        ? candidate.getTime()
        : typeof candidate === "string"
          ? Date.parse(candidate)
          : Number.NaN;
    if (!Number.isNaN(ms)) return ms;
  }
  return undefined;
};

/** The `events.k8s.io/v1` Events whose `regarding.uid` is the task's, oldest first. */
export const listTaskEvents = (
  cluster: Cluster,
  namespace: string,
  uid: string,
): Effect.Effect<ReadonlyArray<TaskEventRecord>, KubeError> =>
  kubeRequest(cluster.settings, "list", cluster.client, {
    method: "GET",
    path: apiPath(events, namespace),
    query: { fieldSelector: `regarding.uid=${uid}` },
  }).pipe(
    Effect.map((response) => {
      const items = field(response.body, "items");
      const text = (value: unknown, fallback: string) => (typeof value === "string" ? value : fallback);
      const count = (...candidates: ReadonlyArray<unknown>) =>
        candidates.find((candidate): candidate is number => typeof candidate === "number") ?? 1;
      return (Array.isArray(items) ? items : [])
        .filter((event) => field(field(event, "regarding"), "uid") === uid)
        .flatMap((event): TaskEventRecord[] => {
          const series = field(event, "series");
          const at = timeOf(
            field(series, "lastObservedTime"),
            field(event, "eventTime"),
            field(event, "deprecatedLastTimestamp"),
            field(field(event, "metadata"), "creationTimestamp"),
          );
          if (at === undefined) return [];
          return [
            {
              type: text(field(event, "type"), "Normal"),
              reason: text(field(event, "reason"), ""),
              note: text(field(event, "note"), ""),
              at,
              count: count(field(series, "count"), field(event, "deprecatedCount")),
              reportingController: text(field(event, "reportingController"), ""),
            },
          ];
        })
        .sort((a, b) => a.at - b.at);
    }),
  );

/**
 * A list-watch cache of the tasks of `namespace` (all when undefined), synced; its log lines are the
 * caller's to silence. Fails when the first LIST does not succeed within the request timeout (the
 * informer itself would keep retrying, silently, for ever).
 */
export const watchTasks = (
  cluster: Cluster,
  namespace: string | undefined,
  labelSelector?: string,
): Effect.Effect<Informer, KubeError, Scope.Scope> =>
  Effect.gen(function* () {
    const informer = yield* makeInformer({
      kubeConfig: cluster.client,
      resource: cluster.kind.resource,
      ...(namespace === undefined ? {} : { namespace }),
      ...(labelSelector === undefined ? {} : { labelSelector }),
      counter: cluster.settings.counter,
      watchTimeoutSeconds: 60,
      watchdog: Duration.seconds(90),
      backoff: { initial: Duration.millis(200), max: Duration.seconds(5) },
    });
    yield* informer.synced.pipe(
      Effect.timeoutOrElse({
        duration: cluster.settings.timeout,
        orElse: () =>
          Effect.fail(
            new KubeError({
              reason: "Transient",
              code: 0,
              message: `could not list and watch ${cluster.kind.resource.kind}s within ${Math.round(Duration.toMillis(cluster.settings.timeout) / 1000)}s`,
            }),
          ),
      }),
    );
    return informer;
  });
