/**
 * The lab's etcd cluster deployed by the real etcd-druid instead of the lab's own fixture
 * (src/devcluster/etcd-cluster), when druid is given (src/devcluster/druid/peer.ts). druid is an
 * external reference: nothing here is needed without it.
 *
 * druid runs as a process on the host against the lab's kube-apiserver, set up as its chart sets it
 * up (src/devcluster/druid/process.ts), with:
 * - its EtcdOpsTask controller kept off the tasks: druid (≥ v0.34) registers that controller
 *   unconditionally, so deploy/coexistence's ValidatingAdmissionPolicy refuses every write its
 *   ServiceAccount makes to an EtcdOpsTask (as users run opstask beside druid) but the create of its
 *   Etcd controller's presync snapshot task (before hibernation or an etcd upgrade); opstask runs them;
 * - its images from the node through its image-vector override (IMAGEVECTOR_OVERWRITE, merged by
 *   name over druid's internal/images/images.yaml): etcd-wrapper (and -next) → the lab's stand-in
 *   for etcd-wrapper (testbin/etcd-wrapper-lab, etcd 3.5 inside), etcd-backup-restore (and -next) →
 *   the lab's etcdbrctl image, alpine (init containers, Local stores only) → the lab's busybox.
 *
 * The Etcd names no image, so druid takes them from that vector. It has 3 replicas, TLS for clients,
 * peers and the backup-restore server from the lab's Secrets (src/devcluster/etcd-cluster/pki.ts), and
 * the lab's S3 store. druid then creates the StatefulSet, Services, ConfigMap, member
 * ServiceAccount/Role/RoleBinding, PodDisruptionBudget and Leases; the sidecars renew the member
 * Leases, from which druid writes the Etcd's Ready and AllMembersReady. (Its BackupReady stays Unknown
 * until the delta-snapshot Lease is first renewed, by the first periodic delta snapshot: a new
 * cluster's sidecar takes a full one at start, and druid's check wants both Leases.)
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from "@kubernetes/client-node";
import { parseAllDocuments, stringify } from "yaml";
import type { ControlPlane } from "../control-plane.ts";
import type { DruidPeer } from "../druid/peer.ts";
import { installDruid, type RunningDruid, startDruid } from "../druid/process.ts";
import { snapshotLocation, waitForBackupLeader } from "../etcd-cluster/deploy.ts";
import type { RunningEtcdCluster } from "../etcd-cluster/index.ts";
import { type EtcdClusterSpec, etcdObject, secretNames, secrets } from "../etcd-cluster/manifests.ts";
import { applyManifests, deployDir } from "./apply-manifests.ts";
import type { KubeManifest } from "./kustomize.ts";

const etcds = { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcds" };

/** druid's CRDs the lab adds to deploy/crds (identical there) when druid runs: its informers need them. */
export const druidExtraCrdFiles = (peer: DruidPeer): string[] => [
  join(peer.sourceDir, "charts", "crds", "druid.gardener.cloud_etcdcopybackupstasks.yaml"),
];

export interface DruidImages {
  /** The lab's etcd-wrapper stand-in image. */
  readonly etcdWrapper: string;
  readonly etcdbrctl: string;
  readonly busybox: string;
}

/** One image-vector entry: druid splits a reference into repository and tag. */
const entry = (name: string, ref: string) => {
  const colon = ref.lastIndexOf(":");
  return { name, repository: ref.slice(0, colon), tag: ref.slice(colon + 1) };
};

/** The override file's contents (druid's image names, internal/images/images.yaml). */
export const imageVectorOverride = (images: DruidImages): string =>
  stringify({
    images: [
      entry("etcd-wrapper", images.etcdWrapper),
      entry("etcd-wrapper-next", images.etcdWrapper),
      entry("etcd-backup-restore", images.etcdbrctl),
      entry("etcd-backup-restore-next", images.etcdbrctl),
      entry("alpine", images.busybox),
    ],
  });

/** The Etcd as a user writes it for druid: the lab's spec, no image (the vector decides), peer TLS too. */
export const druidEtcdObject = (spec: EtcdClusterSpec) => {
  const object = etcdObject(spec);
  const { image: _etcdImage, ...etcd } = object.spec.etcd;
  const { image: _backupImage, ...backup } = object.spec.backup;
  const names = secretNames(spec.name);
  return {
    ...object,
    spec: {
      ...object.spec,
      etcd: {
        ...etcd,
        // The server certificate names the members (`*.<etcd>-peer.<ns>.svc`) and allows clientAuth.
        peerUrlTls: {
          tlsCASecretRef: { name: names.ca, dataKey: "bundle.crt" },
          serverTLSSecretRef: { name: names.etcdServer },
        },
      },
      backup,
    },
  };
};

const coexistencePolicy = (): KubeManifest[] =>
  ["validatingadmissionpolicy.yaml", "validatingadmissionpolicybinding.yaml"].flatMap((file) =>
    parseAllDocuments(readFileSync(join(deployDir, "coexistence", file), "utf8"))
      .map((document) => document.toJS() as KubeManifest | null)
      .filter((object): object is KubeManifest => object !== null),
  );

interface EtcdView {
  readonly status?: {
    readonly ready?: boolean;
    readonly conditions?: ReadonlyArray<{
      type?: string;
      status?: string;
      reason?: string;
      message?: string;
    }>;
  };
}

const conditionTrue = (etcd: EtcdView, type: string): boolean =>
  (etcd.status?.conditions ?? []).some((c) => c.type === type && c.status === "True");

export interface DruidEtcdOptions {
  readonly peer: DruidPeer;
  readonly images: DruidImages;
  /** Where the image-vector override and druid's kubeconfig and configuration are written. */
  readonly dir: string;
  readonly timeoutMs?: number;
  readonly log?: (line: string) => void;
}

export interface DruidEtcd {
  readonly etcd: RunningEtcdCluster;
  readonly druid: RunningDruid;
}

/**
 * Installs and starts druid, creates the Secrets and the Etcd, and waits until druid reports the Etcd
 * Ready with all members ready and a backup leader taking requests. On failure druid is stopped and
 * the error names the Etcd's conditions.
 */
export const startDruidEtcd = async (
  plane: ControlPlane,
  kubeConfig: KubeConfig,
  spec: EtcdClusterSpec,
  options: DruidEtcdOptions,
): Promise<DruidEtcd> => {
  const started = Date.now();
  const say = options.log ?? (() => {});
  await installDruid(plane, options.peer);
  await applyManifests(kubeConfig, coexistencePolicy(), "opstask-lab");
  const vector = join(options.dir, "druid-image-vector.yaml");
  writeFileSync(vector, imageVectorOverride(options.images));
  const druid = await startDruid(plane, options.peer, { imageVectorFile: vector });
  say(`lab: etcd-druid ${options.peer.revision.slice(0, 12)} running (pid ${druid.pid})`);
  try {
    const core = kubeConfig.makeApiClient(CoreV1Api);
    for (const secret of secrets(spec))
      await core.createNamespacedSecret({ namespace: spec.namespace, body: secret });
    const custom = kubeConfig.makeApiClient(CustomObjectsApi);
    const created = (await custom.createNamespacedCustomObject({
      ...etcds,
      namespace: spec.namespace,
      body: druidEtcdObject(spec),
    })) as { metadata?: { uid?: string } };
    const uid = created.metadata?.uid ?? "";
    const timeoutMs = options.timeoutMs ?? 600_000;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const etcd = (await custom.getNamespacedCustomObject({
        ...etcds,
        namespace: spec.namespace,
        name: spec.name,
      })) as EtcdView;
      if (
        etcd.status?.ready === true &&
        ["Ready", "AllMembersReady"].every((type) => conditionTrue(etcd, type))
      )
        break;
      if (Date.now() > deadline)
        throw new Error(
          `Etcd ${spec.namespace}/${spec.name} deployed by etcd-druid not Ready after ${timeoutMs} ms: ${JSON.stringify(etcd.status?.conditions ?? [])}\netcd-druid's last lines:\n${druid.process.tail(30)}`,
        );
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
    // druid's Ready says nothing of the backup leader either (deploy.ts's waitForBackupLeader says why).
    await waitForBackupLeader(kubeConfig, spec, Math.max(0, deadline - Date.now()));
    return {
      etcd: { uid, spec, snapshotDir: snapshotLocation(spec), readyMs: Date.now() - started },
      druid,
    };
  } catch (error) {
    await druid.stop();
    throw error;
  }
};
