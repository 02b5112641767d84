/**
 * The opstask controller deployed on the lab cluster as users deploy it: deploy/ rendered through a
 * kustomize overlay (kustomize.ts, the subset of kustomize deploy/ uses) that changes
 * only what an operator changes — the image, two replicas, the compaction image and the compaction
 * Job policy's allowed images and store directory — applied server-side, then waited for until both
 * replicas are Ready (probes) and one holds the Lease.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import {
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  type KubeConfig,
  type V1Pod,
} from "@kubernetes/client-node";
import { parse, stringify } from "yaml";
import { applyManifests, deployDir } from "./apply-manifests.ts";
import { type KubeManifest, renderKustomization } from "./kustomize.ts";

export const ControllerNamespace = "opstask-system";
export const ControllerDeployment = "opstask";
export const LeaseName = "opstask-controller";

export interface LabControllerOptions {
  /** The controller's image as loaded into the node (`localhost/opstask-lab/opstask:<version>-<id>`). */
  readonly image: string;
  /** The etcd-backup-restore image of compaction Jobs. */
  readonly compactionImage: string;
  /**
   * A Local store's bucket directories on the node (the compaction Job policy's hostPathPrefixes).
   * Absent for a cloud store: the policy then admits no hostPath at all.
   */
  readonly storeHostPath?: string;
  readonly replicas?: number;
}

const compactionImageArgIndex = (): number => {
  const deployment = parse(readFileSync(join(deployDir, "deployment.yaml"), "utf8")) as {
    spec: { template: { spec: { containers: Array<{ args: string[] }> } } };
  };
  const args = deployment.spec.template.spec.containers[0]?.args ?? [];
  const index = args.findIndex((arg) => arg.startsWith("--compaction-image="));
  if (index < 0) throw new Error("deploy/deployment.yaml has no --compaction-image argument to replace");
  return index;
};

/** deploy/ with the operator's changes, as `kubectl kustomize <overlay>` renders it. */
export const renderLabController = (options: LabControllerOptions): KubeManifest[] => {
  const overlay = mkdtempSync(join(tmpdir(), "opstask-lab-overlay-"));
  try {
    const colon = options.image.lastIndexOf(":");
    const kustomization = {
      apiVersion: "kustomize.config.k8s.io/v1beta1",
      kind: "Kustomization",
      resources: [relative(overlay, deployDir)],
      images: [
        { name: "opstask", newName: options.image.slice(0, colon), newTag: options.image.slice(colon + 1) },
      ],
      patches: [
        {
          target: { kind: "Deployment", name: ControllerDeployment },
          patch: stringify([
            { op: "replace", path: "/spec/replicas", value: options.replicas ?? 2 },
            {
              op: "replace",
              path: `/spec/template/spec/containers/0/args/${compactionImageArgIndex()}`,
              value: `--compaction-image=${options.compactionImage}`,
            },
          ]),
        },
        {
          target: { kind: "ConfigMap", name: "opstask-compaction-job-policy" },
          patch: stringify([
            { op: "replace", path: "/data/images", value: `${options.compactionImage}\n` },
            {
              op: "replace",
              path: "/data/hostPathPrefixes",
              value: options.storeHostPath === undefined ? "" : `${options.storeHostPath}\n`,
            },
          ]),
        },
      ],
    };
    writeFileSync(join(overlay, "kustomization.yaml"), stringify(kustomization));
    return renderKustomization(overlay);
  } finally {
    rmSync(overlay, { recursive: true, force: true });
  }
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const podState = (pod: V1Pod): string =>
  `${pod.metadata?.name ?? "?"} ${pod.status?.phase ?? "?"} ${(pod.status?.containerStatuses ?? [])
    .map((status) => {
      const waiting = status.state?.waiting ?? status.state?.terminated;
      return `${status.name} ready=${status.ready} restarts=${status.restartCount}${waiting === undefined ? "" : ` ${waiting.reason ?? ""} ${waiting.message ?? ""}`}`;
    })
    .join(", ")}`;

/** The controller's pods, by name. */
export const controllerPods = async (kubeConfig: KubeConfig): Promise<V1Pod[]> =>
  (
    await kubeConfig.makeApiClient(CoreV1Api).listNamespacedPod({
      namespace: ControllerNamespace,
      labelSelector: "app.kubernetes.io/name=opstask,app.kubernetes.io/component=controller",
    })
  ).items;

/** The Lease's holder (a pod name followed by the controller's identity suffix), if any. */
export const leaseHolder = async (kubeConfig: KubeConfig): Promise<string | undefined> => {
  try {
    const lease = await kubeConfig
      .makeApiClient(CoordinationV1Api)
      .readNamespacedLease({ namespace: ControllerNamespace, name: LeaseName });
    return lease.spec?.holderIdentity ?? undefined;
  } catch {
    return undefined;
  }
};

/** The pod whose name the Lease's holder identity starts with. */
export const leaderPod = async (kubeConfig: KubeConfig): Promise<V1Pod | undefined> => {
  const holder = await leaseHolder(kubeConfig);
  if (holder === undefined) return undefined;
  return (await controllerPods(kubeConfig)).find((pod) => holder.startsWith(`${pod.metadata?.name ?? ""}_`));
};

/** The last lines the pod's controller container wrote (its previous run's when it restarted). */
const lastLog = async (kubeConfig: KubeConfig, pod: V1Pod | undefined): Promise<string> => {
  const name = pod?.metadata?.name;
  if (name === undefined) return "(no controller pod)";
  const restarted = (pod?.status?.containerStatuses?.[0]?.restartCount ?? 0) > 0;
  try {
    const log = await kubeConfig.makeApiClient(CoreV1Api).readNamespacedPodLog({
      namespace: ControllerNamespace,
      name,
      container: "controller",
      tailLines: 20,
      previous: restarted,
    });
    return `--- ${name}${restarted ? " (previous run)" : ""} ---\n${log}`;
  } catch (error) {
    return `(no log of ${name}: ${String(error)})`;
  }
};

/** Waits until the Deployment has `replicas` Ready pods and the Lease has a holder among them. */
export const waitForController = async (kubeConfig: KubeConfig, replicas: number, timeoutMs: number) => {
  const apps = kubeConfig.makeApiClient(AppsV1Api);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const deployment = await apps.readNamespacedDeployment({
      namespace: ControllerNamespace,
      name: ControllerDeployment,
    });
    const leader = await leaderPod(kubeConfig);
    if ((deployment.status?.readyReplicas ?? 0) >= replicas && leader !== undefined) return leader;
    if (Date.now() > deadline) {
      const pods = await controllerPods(kubeConfig);
      throw new Error(
        `the controller has ${deployment.status?.readyReplicas ?? 0}/${replicas} Ready replicas and lease holder ${String(await leaseHolder(kubeConfig))} after ${timeoutMs} ms: ${pods.map(podState).join(" | ")}\n${await lastLog(kubeConfig, pods[0])}`,
      );
    }
    await sleep(500);
  }
};

/** Renders, applies and waits for the controller; returns the leader pod's name. */
export const deployLabController = async (
  kubeConfig: KubeConfig,
  options: LabControllerOptions,
  timeoutMs = 180_000,
): Promise<string> => {
  await applyManifests(kubeConfig, renderLabController(options));
  const leader = await waitForController(kubeConfig, options.replicas ?? 2, timeoutMs);
  return leader.metadata?.name ?? "";
};
