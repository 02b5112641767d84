// A 3-member etcd cluster with etcd-backup-restore sidecars on the lab node, laid out as etcd-druid
// lays one out (manifests.ts says where and why it differs):
//
//   const spec = labEtcdClusterSpec({ name: "etcd-main", namespace, store, images });
//   const cluster = await startEtcdCluster(kubeConfig, spec, { timeoutMs: 120_000 });
//   cluster.snapshotDir      // s3://bucket/<prefix>/v2: where the sidecars keep snapshots
//
// `store` is an S3 store that is running (the lab's object store, src/devcluster/lab/object-store.ts).
// The members' data is on PVCs of `storageClass` (default: the lab's, whose provisioner must be
// running).
import type { KubeConfig } from "@kubernetes/client-node";
import { LabStorageClass } from "../lab/local-volumes.ts";
import {
  type AppliedEtcdCluster,
  applyEtcdCluster,
  markEtcdReady,
  snapshotLocation,
  waitForBackupLeader,
  waitForMembers,
} from "./deploy.ts";
import type { EtcdClusterImages, EtcdClusterSpec, S3Store } from "./manifests.ts";
import { makeEtcdClusterPki } from "./pki.ts";

export { applyEtcdCluster, markEtcdReady, snapshotLocation, waitForMembers } from "./deploy.ts";
export type { EtcdClusterImages, EtcdClusterSpec, S3Store } from "./manifests.ts";
export type { EtcdClusterPki, PemPair } from "./pki.ts";

export interface LabEtcdClusterOptions {
  readonly name: string;
  readonly namespace: string;
  /** The S3 store of the snapshots; its bucket `bucket` must exist. */
  readonly store: S3Store;
  /** The StorageClass of the members' PVCs; default the lab's (src/devcluster/lab/local-volumes.ts). */
  readonly storageClass?: string;
  readonly images: EtcdClusterImages;
  /** The lab's etcd-wrapper image (etcd-wrapper-image.ts): members initialize and restore through their sidecars. */
  readonly etcdWrapperImage?: string;
  readonly replicas?: number;
  /** Default 1h: events stay buffered for an on-demand delta snapshot. */
  readonly deltaSnapshotPeriod?: string;
  /** Default once a year (`0 0 1 1 *`): during a test only the first and the on-demand full snapshots happen. */
  readonly fullSnapshotSchedule?: string;
}

/** The spec of a lab cluster: druid's store layout, new TLS material, 3 members. */
export const labEtcdClusterSpec = (options: LabEtcdClusterOptions): EtcdClusterSpec => ({
  name: options.name,
  namespace: options.namespace,
  replicas: options.replicas ?? 3,
  images: options.images,
  store: options.store,
  storeContainer: "bucket",
  storePrefix: `${options.namespace}--${options.name}/etcd-main`,
  storageClass: options.storageClass ?? LabStorageClass,
  storageCapacity: "1Gi",
  deltaSnapshotPeriod: options.deltaSnapshotPeriod ?? "1h",
  fullSnapshotSchedule: options.fullSnapshotSchedule ?? "0 0 1 1 *",
  pki: makeEtcdClusterPki(options.name, options.namespace),
  ...(options.etcdWrapperImage === undefined ? {} : { etcdWrapperImage: options.etcdWrapperImage }),
});

export interface RunningEtcdCluster extends AppliedEtcdCluster {
  readonly spec: EtcdClusterSpec;
  /** Where the snapshots are: `s3://<bucket>/<prefix>/v2`. */
  readonly snapshotDir: string;
  /** Wall time from the first object created to the Etcd marked Ready, in ms. */
  readonly readyMs: number;
}

/** Creates the cluster, waits for every member and a backup leader taking requests, and marks the Etcd Ready. */
export const startEtcdCluster = async (
  kubeConfig: KubeConfig,
  spec: EtcdClusterSpec,
  options: { readonly timeoutMs?: number } = {},
): Promise<RunningEtcdCluster> => {
  const started = Date.now();
  const applied = await applyEtcdCluster(kubeConfig, spec);
  const timeoutMs = options.timeoutMs ?? 180_000;
  await waitForMembers(kubeConfig, spec, timeoutMs);
  await waitForBackupLeader(kubeConfig, spec, Math.max(0, started + timeoutMs - Date.now()));
  await markEtcdReady(kubeConfig, spec);
  return { ...applied, spec, snapshotDir: snapshotLocation(spec), readyMs: Date.now() - started };
};
