/**
 * What quorum-loss recovery changes besides its task, as an Effect service: the Etcd's annotations,
 * the StatefulSet's scale, the members' PVCs and Leases, the etcd ConfigMap, and whether member 0's
 * pod is ready. A Kubernetes implementation (cluster-kubernetes.ts) and an in-memory model
 * (cluster-memory.ts), so the same steps run on a cluster and under `simulate`.
 *
 * Names and labels are etcd-druid's: the StatefulSet is named like the Etcd, pods `<etcd>-<n>`, the
 * ConfigMap `<etcd>-config` with key `etcd.conf.yaml`, PVCs labelled
 * `app.kubernetes.io/managed-by=etcd-druid, app.kubernetes.io/part-of=<etcd>`, member Leases
 * `app.kubernetes.io/component=etcd-member-lease, app.kubernetes.io/part-of=<etcd>`.
 */
import * as Context from "effect/Context";
import type * as Effect from "effect/Effect";
import type { KubeError } from "../../advanced.ts";

export interface StatefulSetScale {
  /** `spec.replicas` */
  readonly desired: number;
  /** `status.replicas` */
  readonly current: number;
  /** `status.readyReplicas` */
  readonly ready: number;
  /** The ownerReference with `controller: true`, if any (druid's Etcd for its StatefulSet). */
  readonly controller?: { readonly kind: string; readonly name: string; readonly uid: string };
}

export const EtcdConfigKey = "etcd.conf.yaml";
export const configMapName = (etcd: string) => `${etcd}-config`;
export const podName = (etcd: string, ordinal: number) => `${etcd}-${ordinal}`;
export const volumeLabels = (etcd: string): Readonly<Record<string, string>> => ({
  "app.kubernetes.io/managed-by": "etcd-druid",
  "app.kubernetes.io/part-of": etcd,
});
export const memberLeaseLabels = (etcd: string): Readonly<Record<string, string>> => ({
  "app.kubernetes.io/component": "etcd-member-lease",
  "app.kubernetes.io/part-of": etcd,
});

export interface QuorumClusterShape {
  /** Merge-patches the Etcd's annotations (`null` removes one). */
  readonly annotateEtcd: (
    namespace: string,
    name: string,
    annotations: Readonly<Record<string, string | null>>,
  ) => Effect.Effect<void, KubeError>;
  /** The StatefulSet's scale; undefined when there is none. */
  readonly statefulSet: (
    namespace: string,
    name: string,
  ) => Effect.Effect<StatefulSetScale | undefined, KubeError>;
  /** Sets `spec.replicas` through the `scale` subresource; a missing StatefulSet is left alone. */
  readonly scale: (namespace: string, name: string, replicas: number) => Effect.Effect<void, KubeError>;
  /** Names of the PVCs with these labels. */
  readonly pvcNames: (
    namespace: string,
    labels: Readonly<Record<string, string>>,
  ) => Effect.Effect<ReadonlyArray<string>, KubeError>;
  /** Deletes the PVCs with these labels; answers how many were deleted (404s count as gone). */
  readonly deletePvcs: (
    namespace: string,
    labels: Readonly<Record<string, string>>,
  ) => Effect.Effect<number, KubeError>;
  /** Deletes the Leases with these labels; answers how many. */
  readonly deleteLeases: (
    namespace: string,
    labels: Readonly<Record<string, string>>,
  ) => Effect.Effect<number, KubeError>;
  /** `data[key]` of a ConfigMap; undefined when the ConfigMap or the key is missing. */
  readonly configData: (
    namespace: string,
    name: string,
    key: string,
  ) => Effect.Effect<string | undefined, KubeError>;
  readonly writeConfigData: (
    namespace: string,
    name: string,
    key: string,
    text: string,
  ) => Effect.Effect<void, KubeError>;
  /** Whether the pod exists and its `Ready` condition is `True`. */
  readonly podReady: (namespace: string, name: string) => Effect.Effect<boolean, KubeError>;
}

export class QuorumCluster extends Context.Service<QuorumCluster, QuorumClusterShape>()(
  "opstask/etcd/QuorumCluster",
) {}
