/**
 * The objects of an Etcd's members as the quorum-recovery tests create them on an apiserver with no
 * StatefulSet controller or kubelet: the StatefulSet named like the Etcd (3 replicas) and a volume
 * claim with the labels given.
 */
import type { V1PersistentVolumeClaim, V1StatefulSet } from "@kubernetes/client-node";

export const etcdStatefulSet = (etcd: string): V1StatefulSet => ({
  metadata: { name: etcd },
  spec: {
    replicas: 3,
    serviceName: `${etcd}-peer`,
    selector: { matchLabels: { app: etcd } },
    template: {
      metadata: { labels: { app: etcd } },
      spec: { containers: [{ name: "etcd", image: "example.invalid/etcd:0" }] },
    },
  },
});

export const memberClaim = (name: string, labels: Record<string, string>): V1PersistentVolumeClaim => ({
  metadata: { name, labels },
  spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
});
