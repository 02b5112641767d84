/**
 * The lab's volume provisioner: PersistentVolumeClaims of the lab's StorageClass get a hostPath
 * PersistentVolume of their own, a new directory under the lab's directory, pre-bound to the claim
 * (the kube-controller-manager's binder completes the binding). When a claim is deleted its volume
 * is Released: the provisioner deletes the directory and the PersistentVolume. So a deleted PVC
 * loses its data, and a claim recreated under the same name starts empty, as with a cloud disk —
 * what quorum-loss recovery relies on. A static pool of PVs would not do: a Released PV keeps the
 * old claim's UID and never binds the new claim, so the pool would need this same release handling.
 *
 *   const volumes = await startLocalVolumeProvisioner(kubeConfig, { dir: join(labDir, "volumes") });
 *   // PVCs with storageClassName: volumes.storageClass …
 *   await volumes.stop();
 *
 * Claims and volumes are listed every `pollMs` (no watch to re-establish); the lab is one node.
 */
import { chownSync, mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import {
  ApiException,
  CoreV1Api,
  type KubeConfig,
  StorageV1Api,
  type V1PersistentVolume,
  type V1PersistentVolumeClaim,
} from "@kubernetes/client-node";

export const LabStorageClass = "opstask-lab-local";
export const LabProvisioner = "opstask.dev/lab-local-volumes";
const ProvisionedBy = "pv.kubernetes.io/provisioned-by";

export interface LocalVolumeOptions {
  /** Host directory holding one directory per volume. */
  readonly dir: string;
  /** Owner of each new volume's directory (hostPath volumes do not take a pod's fsGroup). Default 65532, the lab's non-root user. */
  readonly owner?: { readonly uid: number; readonly gid: number };
  readonly pollMs?: number;
  /** Reports a pass that failed (the next pass tries again). */
  readonly log?: (line: string) => void;
}

export interface LocalVolumeProvisioner {
  readonly storageClass: string;
  /** Ends the loop after the pass under way. Directories are left for the caller's directory removal. */
  stop(): Promise<void>;
}

const isConflict = (error: unknown) => error instanceof ApiException && error.code === 409;
const isNotFound = (error: unknown) => error instanceof ApiException && error.code === 404;

/** The StorageClass the lab's claims name: Immediate binding, volumes deleted with their claims. */
export const labStorageClass = () => ({
  apiVersion: "storage.k8s.io/v1",
  kind: "StorageClass",
  metadata: { name: LabStorageClass },
  provisioner: LabProvisioner,
  reclaimPolicy: "Delete",
  volumeBindingMode: "Immediate",
});

export const startLocalVolumeProvisioner = async (
  kubeConfig: KubeConfig,
  options: LocalVolumeOptions,
): Promise<LocalVolumeProvisioner> => {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const storage = kubeConfig.makeApiClient(StorageV1Api);
  const owner = options.owner ?? { uid: 65532, gid: 65532 };
  const say = options.log ?? (() => {});
  mkdirSync(options.dir, { recursive: true, mode: 0o755 });
  await storage.createStorageClass({ body: labStorageClass() }).catch((error: unknown) => {
    if (!isConflict(error)) throw error;
  });

  const volumeFor = (claim: V1PersistentVolumeClaim, path: string): V1PersistentVolume => ({
    apiVersion: "v1",
    kind: "PersistentVolume",
    metadata: { name: `pvc-${claim.metadata?.uid}`, annotations: { [ProvisionedBy]: LabProvisioner } },
    spec: {
      capacity: { storage: claim.spec?.resources?.requests?.storage ?? "1Gi" },
      accessModes: claim.spec?.accessModes ?? ["ReadWriteOnce"],
      // Retain: this provisioner, not the binder, deletes the volume and its directory once Released.
      persistentVolumeReclaimPolicy: "Retain",
      storageClassName: LabStorageClass,
      volumeMode: "Filesystem",
      claimRef: {
        apiVersion: "v1",
        kind: "PersistentVolumeClaim",
        namespace: claim.metadata?.namespace ?? "",
        name: claim.metadata?.name ?? "",
        uid: claim.metadata?.uid ?? "",
      },
      hostPath: { path, type: "Directory" },
    },
  });

  const provision = async (claim: V1PersistentVolumeClaim) => {
    const uid = claim.metadata?.uid ?? "";
    const path = join(options.dir, `pvc-${uid}`);
    mkdirSync(path, { recursive: true, mode: 0o750 });
    chownSync(path, owner.uid, owner.gid);
    try {
      await core.createPersistentVolume({ body: volumeFor(claim, path) });
    } catch (error) {
      if (!isConflict(error)) throw error;
    }
  };

  const release = async (volume: V1PersistentVolume) => {
    const path = volume.spec?.hostPath?.path;
    if (path?.startsWith(`${options.dir}/`)) rmSync(path, { recursive: true, force: true });
    try {
      await core.deletePersistentVolume({ name: volume.metadata?.name ?? "" });
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  };

  const pass = async () => {
    const claims = await core.listPersistentVolumeClaimForAllNamespaces();
    for (const claim of claims.items)
      if (
        claim.spec?.storageClassName === LabStorageClass &&
        (claim.spec.volumeName ?? "") === "" &&
        claim.metadata?.deletionTimestamp === undefined
      )
        await provision(claim);
    const volumes = await core.listPersistentVolume();
    for (const volume of volumes.items)
      if (
        volume.metadata?.annotations?.[ProvisionedBy] === LabProvisioner &&
        volume.status?.phase === "Released"
      )
        await release(volume);
  };

  let running = true;
  const pollMs = options.pollMs ?? 300;
  const loop = (async () => {
    while (running) {
      await pass().catch((error: unknown) => say(`local volumes: pass failed: ${String(error)}`));
      if (running) await new Promise((resolve) => setTimeout(resolve, pollMs));
    }
  })();

  return {
    storageClass: LabStorageClass,
    stop: async () => {
      running = false;
      await loop;
    },
  };
};
