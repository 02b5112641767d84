/**
 * The lab: the local cluster with a node (src/devcluster/node), the images loaded
 * (src/devcluster/images), an S3-compatible object store (object-store.ts), a 3-member etcd cluster
 * laid out as druid lays it out whose snapshots go to that store (src/devcluster/etcd-cluster), in a
 * namespace that enforces the restricted Pod Security level, and the opstask controller deployed
 * from deploy/ (controller.ts).
 * Given the real etcd-druid (`druid`), druid deploys that etcd cluster from an Etcd object instead of
 * the lab's own fixture (druid-etcd.ts); its pods then fall short of the restricted level (no seccomp
 * profile, capabilities not dropped), so the namespace enforces `baseline` instead.
 * `opstask dev --cluster`, the e2e tests and the bench scripts start this same lab.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CoreV1Api, type KubeConfig, PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import type { DruidPeer } from "../druid/peer.ts";
import type { RunningDruid } from "../druid/process.ts";
import { buildEtcdWrapperImage } from "../etcd-cluster/etcd-wrapper-image.ts";
import { labEtcdClusterSpec, type RunningEtcdCluster, startEtcdCluster } from "../etcd-cluster/index.ts";
import {
  buildLabImagesWithOpstask,
  defaultImageCacheDir,
  type LabImagesWithOpstask,
  resolveImageBinaries,
} from "../images/index.ts";
import { type LocalCluster, startLocalCluster } from "../node/local-cluster.ts";
import { deployCrdFiles } from "./apply-manifests.ts";
import { deployLabController } from "./controller.ts";
import { druidExtraCrdFiles, startDruidEtcd } from "./druid-etcd.ts";
import { type LocalVolumeProvisioner, startLocalVolumeProvisioner } from "./local-volumes.ts";
import { type ObjectStore, startObjectStore } from "./object-store.ts";

export interface Lab {
  readonly cluster: LocalCluster;
  readonly kubeConfig: KubeConfig;
  readonly images: LabImagesWithOpstask;
  readonly etcd: RunningEtcdCluster;
  /** The S3-compatible store of the etcd's snapshots, in the etcd's namespace. */
  readonly objectStore: ObjectStore;
  /** The Lease holder's pod once the controller was Ready. */
  readonly leaderPod: string;
  /** Host directory of the members' volumes (`volumes/`); removed by stop(). */
  readonly dir: string;
  /** Figures of the bring-up, in ms. */
  readonly timings: Readonly<Record<string, number>>;
  /** Who deployed the etcd cluster: the lab's own fixture, or the real etcd-druid from its Etcd. */
  readonly etcdFixture: EtcdFixture;
  /** The Pod Security level the etcd's namespace enforces. */
  readonly podSecurity: string;
  /** etcd-druid, when it was given. */
  readonly druid?: RunningDruid;
}

export type EtcdFixture = "lab" | "etcd-druid";

export const EtcdName = "etcd-main";

/** The Pod Security level the etcd's namespace enforces: every pod there, the compaction Job's too. */
export const EtcdNamespacePodSecurity = "restricted";
/** The level under etcd-druid, whose etcd pods set no seccomp profile and drop no capabilities. */
export const DruidEtcdNamespacePodSecurity = "baseline";

const enforcePodSecurity = (kubeConfig: KubeConfig, namespace: string, level: string) =>
  kubeConfig.makeApiClient(CoreV1Api).patchNamespace(
    {
      name: namespace,
      body: { metadata: { labels: { "pod-security.kubernetes.io/enforce": level } } },
    },
    setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
  );

export interface StartingLab {
  /** Settles with the lab, or with the first step's error. */
  readonly ready: Promise<Lab>;
  /** Stops whatever was started (also while starting or after a failed step) and removes the directory. */
  stop(): Promise<void>;
}

export interface LabOptions {
  /** Where the admin kubeconfig is written (default: inside the control plane's temporary directory). */
  readonly kubeconfigPath?: string;
  /** Progress lines (default: none beyond the cluster's own). */
  readonly log?: (line: string) => void;
  /**
   * Members start under the lab's etcd-wrapper (src/devcluster/etcd-cluster/etcd-wrapper-image.ts), as
   * under druid: a member whose data is gone restores it from the store, a new member joins as a
   * learner. Default false: etcd starts from flags.
   */
  readonly etcdWrapper?: boolean;
  /**
   * The real etcd-druid (src/devcluster/druid/peer.ts `findDruid`): it runs on the host and deploys
   * the etcd cluster from an Etcd (druid-etcd.ts), under the lab's etcd-wrapper stand-in.
   */
  readonly druid?: DruidPeer;
}

export const startLab = (options: LabOptions = {}): StartingLab => {
  const dir = mkdtempSync(join(tmpdir(), "opstask-lab-"));
  const say = options.log ?? (() => {});
  let cluster: LocalCluster | undefined;
  let volumes: LocalVolumeProvisioner | undefined;
  let druid: RunningDruid | undefined;
  const timings: Record<string, number> = {};
  const timed = async <A>(name: string, step: () => Promise<A>): Promise<A> => {
    const started = Date.now();
    const result = await step();
    timings[name] = Date.now() - started;
    say(`lab: ${name} ready in ${timings[name]} ms`);
    return result;
  };
  const ready = (async (): Promise<Lab> => {
    const images = await timed("images", () => buildLabImagesWithOpstask());
    const wrapper =
      options.etcdWrapper === true || options.druid !== undefined
        ? await timed("etcd-wrapper image", async () =>
            buildEtcdWrapperImage((await resolveImageBinaries()).etcd, defaultImageCacheDir()),
          )
        : undefined;
    cluster = await timed("cluster", () =>
      startLocalCluster({
        ...(options.kubeconfigPath === undefined ? {} : { kubeconfigPath: options.kubeconfigPath }),
        ...(options.log === undefined ? {} : { log: options.log }),
        crds:
          options.druid === undefined
            ? deployCrdFiles
            : [...deployCrdFiles, ...druidExtraCrdFiles(options.druid)],
        sandboxImage: images.pause,
        images: [
          images.busybox.archive,
          images.etcd.archive,
          images.etcdbrctl.archive,
          images.objectStore.archive,
          images.opstask.archive,
          ...(wrapper === undefined ? [] : [wrapper.archive]),
        ],
      }),
    );
    const running = cluster;
    const kubeConfig = running.makeKubeConfig();
    const namespace = await running.createNamespace("etcd-lab");
    const podSecurity =
      options.druid === undefined ? EtcdNamespacePodSecurity : DruidEtcdNamespacePodSecurity;
    await enforcePodSecurity(kubeConfig, namespace, podSecurity);
    const objectStore = await timed("object store", () =>
      startObjectStore(kubeConfig, { namespace, image: images.objectStore.ref }),
    );
    volumes = await startLocalVolumeProvisioner(kubeConfig, { dir: join(dir, "volumes"), log: say });
    const spec = labEtcdClusterSpec({
      name: EtcdName,
      namespace,
      store: objectStore,
      images: { etcd: images.etcd.ref, etcdbrctl: images.etcdbrctl.ref },
      storageClass: volumes.storageClass,
      ...(wrapper === undefined ? {} : { etcdWrapperImage: wrapper.ref }),
    });
    const peer = options.druid;
    const etcd =
      peer === undefined || wrapper === undefined
        ? await timed("etcd", () =>
            startEtcdCluster(kubeConfig, spec, {
              // Under the etcd-wrapper a new cluster's sidecars first wait for members that are not up yet.
              timeoutMs: wrapper === undefined ? 180_000 : 420_000,
            }),
          )
        : await timed("etcd (etcd-druid)", async () => {
            const deployed = await startDruidEtcd(running.controlPlane, kubeConfig, spec, {
              peer,
              images: {
                etcdWrapper: wrapper.ref,
                etcdbrctl: images.etcdbrctl.ref,
                busybox: images.busybox.ref,
              },
              dir,
              log: say,
            });
            druid = deployed.druid;
            return deployed.etcd;
          });
    const leaderPod = await timed("controller", () =>
      deployLabController(kubeConfig, {
        image: images.opstask.ref,
        compactionImage: images.etcdbrctl.ref,
      }),
    );
    return {
      cluster: running,
      kubeConfig,
      images,
      etcd,
      objectStore,
      leaderPod,
      dir,
      timings,
      etcdFixture: druid === undefined ? "lab" : "etcd-druid",
      podSecurity,
      ...(druid === undefined ? {} : { druid }),
    };
  })();
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      await ready.catch(() => undefined);
      await druid?.stop();
      await volumes?.stop();
      await cluster?.stop();
      rmSync(dir, { recursive: true, force: true });
    })();
    return stopping;
  };
  return { ready, stop };
};
