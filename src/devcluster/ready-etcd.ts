/**
 * An Etcd object that makes tasks admissible without etcd-druid: backup enabled (optionally pointing
 * at a local etcd-backup-restore's port) and a `Ready=True` condition written through the status
 * subresource, as druid's Etcd controller would (docs/contract.md §14, F-ETCD). For `opstask dev` and tests.
 */
import { CustomObjectsApi, type KubeConfig } from "@kubernetes/client-node";

export interface ReadyEtcdOptions {
  readonly name: string;
  readonly namespace: string;
  /** `spec.backup.port`: where the backup-restore sidecar listens (druid's default 8080 when absent). */
  readonly backupPort?: number;
  readonly storePrefix?: string;
  /** `spec.etcd.clientPort`: where etcd's client endpoint listens (druid's default 2379 when absent). */
  readonly clientPort?: number;
  /** The Ready condition's message. */
  readonly message?: string;
  /** `metadata.annotations` (e.g. druid's, to keep its Etcd controller off a stand-in Etcd). */
  readonly annotations?: Readonly<Record<string, string>>;
}

const etcds = { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcds" };

export const createReadyEtcd = async (kubeConfig: KubeConfig, options: ReadyEtcdOptions): Promise<void> => {
  const api = kubeConfig.makeApiClient(CustomObjectsApi);
  const { name, namespace } = options;
  await api.createNamespacedCustomObject({
    ...etcds,
    namespace,
    body: {
      apiVersion: "druid.gardener.cloud/v1alpha1",
      kind: "Etcd",
      metadata: {
        name,
        namespace,
        ...(options.annotations === undefined ? {} : { annotations: { ...options.annotations } }),
      },
      spec: {
        replicas: 1,
        labels: { app: name },
        etcd: options.clientPort === undefined ? {} : { clientPort: options.clientPort },
        backup: {
          ...(options.backupPort === undefined ? {} : { port: options.backupPort }),
          store: { prefix: options.storePrefix ?? name },
        },
      },
    },
  });
  const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  const ready = {
    type: "Ready",
    status: "True",
    reason: "Quorate",
    message: options.message ?? "ready",
    lastTransitionTime: now,
    lastUpdateTime: now,
  };
  await api.patchNamespacedCustomObjectStatus({
    ...etcds,
    namespace,
    name,
    body: [{ op: "add", path: "/status", value: { conditions: [ready] } }],
  });
};
