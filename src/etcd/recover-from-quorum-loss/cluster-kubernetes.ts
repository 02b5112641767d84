/**
 * `QuorumCluster` on the apiserver: one request per call, bounded by a timeout and counted with the
 * controller's other requests. RBAC, opt-in (deploy/quorum-recovery/): `etcds` patch;
 * `statefulsets/scale` patch (`statefulsets` get is deploy/clusterrole.yaml's); `persistentvolumeclaims`
 * list, delete; `leases` list, delete; `configmaps` get, patch; `pods` get.
 */
import * as Duration from "effect/Duration";
import * as Effect from "effect/Effect";
import * as Layer from "effect/Layer";
import type { KubeError } from "../../advanced.ts";
import {
  apiPath,
  type KubeAccess,
  kubeClientOf,
  kubeRequest,
  mergePatch,
  RequestCounter,
  type RequestSettings,
} from "../../advanced.ts";
import { QuorumCluster, type QuorumClusterShape, type StatefulSetScale } from "./cluster.ts";

export interface KubernetesQuorumClusterOptions {
  readonly kubeConfig: KubeAccess;
  readonly counter?: RequestCounter;
  /** Bound on one request; default 30 s. */
  readonly requestTimeout?: Duration.Input;
}

const etcds = { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcds" };
const statefulSets = { group: "apps", version: "v1", plural: "statefulsets" };
const pvcs = { group: "", version: "v1", plural: "persistentvolumeclaims" };
const leases = { group: "coordination.k8s.io", version: "v1", plural: "leases" };
const configMaps = { group: "", version: "v1", plural: "configmaps" };
const pods = { group: "", version: "v1", plural: "pods" };

type Json = { readonly [key: string]: unknown };
const objectOf = (value: unknown): Json =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Json) : {};
const numberOf = (value: unknown): number => (typeof value === "number" ? value : 0);
const selector = (labels: Readonly<Record<string, string>>) =>
  Object.entries(labels)
    .map(([key, value]) => `${key}=${value}`)
    .join(",");
const orUndefinedWhenMissing = <A>(
  effect: Effect.Effect<A, KubeError>,
): Effect.Effect<A | undefined, KubeError> =>
  effect.pipe(
    Effect.catchIf(
      (error) => error.reason === "NotFound",
      () => Effect.succeed(undefined),
    ),
  );

export const makeKubernetesQuorumCluster = (options: KubernetesQuorumClusterOptions): QuorumClusterShape => {
  const settings: RequestSettings = {
    counter: options.counter ?? new RequestCounter(),
    timeout: options.requestTimeout ?? Duration.seconds(30),
  };
  const client = kubeClientOf(options.kubeConfig);
  const request = (verb: Parameters<typeof kubeRequest>[1], req: Parameters<typeof kubeRequest>[3]) =>
    kubeRequest(settings, verb, client, req);

  const namesOf = (resource: typeof pvcs, namespace: string, labels: Readonly<Record<string, string>>) =>
    request("list", {
      method: "GET",
      path: apiPath(resource, namespace),
      query: { labelSelector: selector(labels) },
    }).pipe(
      Effect.map((list) => {
        const items = objectOf(list.body).items;
        return (Array.isArray(items) ? items : [])
          .map((item) => objectOf(objectOf(item).metadata).name)
          .filter((name): name is string => typeof name === "string" && name !== "");
      }),
    );

  const deleteAll = (resource: typeof pvcs, namespace: string, labels: Readonly<Record<string, string>>) =>
    Effect.gen(function* () {
      const names = yield* namesOf(resource, namespace, labels);
      for (const name of names)
        yield* orUndefinedWhenMissing(
          request("delete", { method: "DELETE", path: apiPath(resource, namespace, name) }),
        );
      return names.length;
    });

  return QuorumCluster.of({
    annotateEtcd: (namespace, name, annotations) =>
      request("patch", {
        method: "PATCH",
        path: apiPath(etcds, namespace, name),
        contentType: mergePatch,
        body: { metadata: { annotations } },
      }).pipe(Effect.asVoid),
    statefulSet: (namespace, name) =>
      orUndefinedWhenMissing(
        request("get", { method: "GET", path: apiPath(statefulSets, namespace, name) }).pipe(
          Effect.map((response): StatefulSetScale => {
            const body = objectOf(response.body);
            const status = objectOf(body.status);
            const owners = objectOf(body.metadata).ownerReferences;
            const controller = (Array.isArray(owners) ? owners : [])
              .map(objectOf)
              .find((owner) => owner.controller === true);
            return {
              desired: numberOf(objectOf(body.spec).replicas),
              current: numberOf(status.replicas),
              ready: numberOf(status.readyReplicas),
              ...(controller === undefined
                ? {}
                : {
                    controller: {
                      kind: String(controller.kind ?? ""),
                      name: String(controller.name ?? ""),
                      uid: String(controller.uid ?? ""),
                    },
                  }),
            };
          }),
        ),
      ),
    scale: (namespace, name, replicas) =>
      orUndefinedWhenMissing(
        request("patch", {
          method: "PATCH",
          path: `${apiPath(statefulSets, namespace, name)}/scale`,
          contentType: mergePatch,
          body: { spec: { replicas } },
        }),
      ).pipe(Effect.asVoid),
    pvcNames: (namespace, labels) => namesOf(pvcs, namespace, labels),
    deletePvcs: (namespace, labels) => deleteAll(pvcs, namespace, labels),
    deleteLeases: (namespace, labels) => deleteAll(leases, namespace, labels),
    configData: (namespace, name, key) =>
      orUndefinedWhenMissing(
        request("get", { method: "GET", path: apiPath(configMaps, namespace, name) }).pipe(
          Effect.map((response) => {
            const value = objectOf(objectOf(response.body).data)[key];
            return typeof value === "string" ? value : undefined;
          }),
        ),
      ),
    writeConfigData: (namespace, name, key, text) =>
      request("patch", {
        method: "PATCH",
        path: apiPath(configMaps, namespace, name),
        contentType: mergePatch,
        body: { data: { [key]: text } },
      }).pipe(Effect.asVoid),
    podReady: (namespace, name) =>
      orUndefinedWhenMissing(
        request("get", { method: "GET", path: apiPath(pods, namespace, name) }).pipe(
          Effect.map((response) => {
            const conditions = objectOf(objectOf(response.body).status).conditions;
            return (Array.isArray(conditions) ? conditions : []).some(
              (condition) => objectOf(condition).type === "Ready" && objectOf(condition).status === "True",
            );
          }),
        ),
      ).pipe(Effect.map((ready) => ready === true)),
  });
};

export const kubernetesQuorumClusterLayer = (
  options: KubernetesQuorumClusterOptions,
): Layer.Layer<QuorumCluster> => Layer.sync(QuorumCluster, () => makeKubernetesQuorumCluster(options));
