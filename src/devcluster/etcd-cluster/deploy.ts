// Creates the lab's etcd cluster (manifests.ts) on a cluster, waits for its members and their backup
// leader, and writes the Etcd's status as druid's Etcd controller would once they are Ready (the
// handlers admit a task only for a Ready Etcd). With `dryRun` every object goes through the
// apiserver's validation and admission (server-side dry run) and nothing is stored: the manifests can
// be checked before a node runs pods.
import {
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  RbacAuthorizationV1Api,
  type V1Pod,
} from "@kubernetes/client-node";
import { configMap, type EtcdClusterSpec, etcdObject, secrets, services, statefulSet } from "./manifests.ts";
import { memberRbac } from "./member-rbac.ts";

const etcds = { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcds" };

export interface AppliedEtcdCluster {
  readonly uid: string;
}

/** Creates (or, with dryRun, validates) every object of the cluster; returns the Etcd's UID. */
export const applyEtcdCluster = async (
  kubeConfig: KubeConfig,
  spec: EtcdClusterSpec,
  options: { readonly dryRun?: boolean } = {},
): Promise<AppliedEtcdCluster> => {
  const dryRun = options.dryRun === true ? { dryRun: "All" } : {};
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const apps = kubeConfig.makeApiClient(AppsV1Api);
  const custom = kubeConfig.makeApiClient(CustomObjectsApi);
  const namespace = spec.namespace;
  for (const secret of secrets(spec))
    await core.createNamespacedSecret({ namespace, body: secret, ...dryRun });
  const created = (await custom.createNamespacedCustomObject({
    ...etcds,
    namespace,
    body: etcdObject(spec),
    ...dryRun,
  })) as { metadata?: { uid?: string } };
  const uid = created.metadata?.uid ?? "";
  if (uid === "") throw new Error(`the apiserver returned Etcd ${namespace}/${spec.name} without a UID`);
  await core.createNamespacedConfigMap({ namespace, body: configMap(spec, uid), ...dryRun });
  for (const service of services(spec, uid))
    await core.createNamespacedService({ namespace, body: service, ...dryRun });
  if (spec.etcdWrapperImage !== undefined) {
    const rbac = memberRbac(spec.name, namespace);
    const authorization = kubeConfig.makeApiClient(RbacAuthorizationV1Api);
    await core.createNamespacedServiceAccount({ namespace, body: rbac.serviceAccount, ...dryRun });
    await authorization.createNamespacedRole({ namespace, body: rbac.role, ...dryRun });
    await authorization.createNamespacedRoleBinding({ namespace, body: rbac.roleBinding, ...dryRun });
  }
  await apps.createNamespacedStatefulSet({ namespace, body: statefulSet(spec, uid), ...dryRun });
  return { uid };
};

/** Where the sidecars keep snapshots: `s3://<bucket>/<prefix>/v2` (etcd-backup-restore's layout). */
export const snapshotLocation = (spec: EtcdClusterSpec): string =>
  `s3://${spec.storeContainer}/${spec.storePrefix}/v2`;

const describePod = (pod: V1Pod): string => {
  const statuses = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
  const containers = statuses
    .map((status) => {
      const state = status.state?.waiting ?? status.state?.terminated;
      const why = state === undefined ? "running" : `${state.reason ?? "?"} ${state.message ?? ""}`.trim();
      return `${status.name}: ${status.ready ? "ready" : why} (restarts ${status.restartCount})`;
    })
    .join("; ");
  return `${pod.metadata?.name ?? "?"} ${pod.status?.phase ?? "?"} [${containers}]`;
};

/** The cluster's member pods (the `part-of` label druid sets, and the lab's manifests too). */
const memberPods = (core: CoreV1Api, spec: EtcdClusterSpec) =>
  core.listNamespacedPod({
    namespace: spec.namespace,
    labelSelector: `app.kubernetes.io/part-of=${spec.name}`,
  });

/** Waits until the StatefulSet's pods are all Ready; on timeout the error describes every pod. */
export const waitForMembers = async (
  kubeConfig: KubeConfig,
  spec: EtcdClusterSpec,
  timeoutMs: number,
): Promise<void> => {
  const apps = kubeConfig.makeApiClient(AppsV1Api);
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const set = await apps.readNamespacedStatefulSet({ namespace: spec.namespace, name: spec.name });
    if ((set.status?.readyReplicas ?? 0) === spec.replicas) return;
    if (Date.now() > deadline) {
      const pods = await memberPods(core, spec);
      throw new Error(
        `etcd cluster ${spec.namespace}/${spec.name}: ${set.status?.readyReplicas ?? 0}/${spec.replicas} members Ready after ${timeoutMs} ms: ${pods.items.map(describePod).join(" | ")}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
};

/**
 * What the sidecar that leads the backup logs once its snapshotter takes requests (etcd-backup-restore
 * sets the snapshotter active just before it). Until then every on-demand snapshot fails: the leader
 * answers 500 ("snapshotter is not active") and a follower, forwarding to a leader not yet healthy, 405.
 */
const SnapshotterStarted = "Starting snapshotter...";

/**
 * Waits until one member's backup-restore sidecar has started its snapshotter. A member's readiness
 * says only that etcd answers; the sidecars elect their leader and take its first full snapshot
 * seconds later, and a task admitted in between fails (a CI run once saw the 405).
 */
export const waitForBackupLeader = async (
  kubeConfig: KubeConfig,
  spec: EtcdClusterSpec,
  timeoutMs: number,
): Promise<string> => {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pods = await memberPods(core, spec);
    for (const pod of pods.items) {
      const name = pod.metadata?.name ?? "";
      const running = pod.status?.containerStatuses?.some(
        (c) => c.name === "backup-restore" && c.state?.running,
      );
      if (!running) continue;
      const log = await core.readNamespacedPodLog({
        namespace: spec.namespace,
        name,
        container: "backup-restore",
      });
      if (log.includes(SnapshotterStarted)) return name;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `etcd cluster ${spec.namespace}/${spec.name}: no backup-restore sidecar logged "${SnapshotterStarted}" within ${timeoutMs} ms (no backup leader, so on-demand snapshots would fail): ${pods.items.map(describePod).join(" | ")}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
};

/** The status druid's Etcd controller writes for a healthy cluster: Ready, all members ready, backup ready. */
export const markEtcdReady = async (kubeConfig: KubeConfig, spec: EtcdClusterSpec): Promise<void> => {
  const custom = kubeConfig.makeApiClient(CustomObjectsApi);
  const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  const condition = (type: string, reason: string, message: string) => ({
    type,
    status: "True",
    reason,
    message,
    lastTransitionTime: now,
    lastUpdateTime: now,
  });
  await custom.patchNamespacedCustomObjectStatus({
    ...etcds,
    namespace: spec.namespace,
    name: spec.name,
    body: [
      {
        op: "add",
        path: "/status",
        value: {
          conditions: [
            condition("Ready", "Quorate", "The majority of ETCD members is ready"),
            condition("AllMembersReady", "AllMembersReady", "All members are ready"),
            condition("BackupReady", "BackupSucceeded", "Snapshot backup succeeded"),
          ],
          ready: true,
          replicas: spec.replicas,
          readyReplicas: spec.replicas,
          currentReplicas: spec.replicas,
          observedGeneration: 1,
        },
      },
    ],
  });
};
