/**
 * H1 of the third security round on a real kube-apiserver: `recoverFromQuorumLoss` under the cluster
 * controller (runController, the Kubernetes QuorumCluster and Etcd reader) takes no progress a task
 * author writes. A task created carrying `…-last-completed-step: WaitScaleDown` with `allowDataLoss`
 * and no confirmation is Rejected with ERR_FORGED_PROGRESS, the cluster untouched (on main 083b415 it
 * ran steps 6–9 at once). A task whose step is rewound mid-run (the annotation patched back to
 * WaitScaleDown while it waits at WaitPodReady) runs no step again: a volume made after DeletePVCs
 * survives. The progress lives in the controller's record, a ConfigMap in its own namespace, which
 * Cleanup removes with the task. No kubelet and no StatefulSet controller: the test plays them (pod
 * readiness, the Etcd's conditions) through the status subresources.
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import {
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from "@kubernetes/client-node";
import { Effect, Exit, Layer, Scope } from "effect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { etcdOpsTaskKind } from "../../src/etcd/api/etcdopstask-kind.ts";
import { kubernetesObjectReaderLayer } from "../../src/etcd/object-reader-kubernetes.ts";
import { memberLeaseLabels, volumeLabels } from "../../src/etcd/recover-from-quorum-loss/cluster.ts";
import { kubernetesQuorumClusterLayer } from "../../src/etcd/recover-from-quorum-loss/cluster-kubernetes.ts";
import { recoverFromQuorumLossHandler } from "../../src/etcd/recover-from-quorum-loss/handler.ts";
import { kubernetesLayer } from "../../src/interpreters/kubernetes/layer.ts";
import { lifecycleConfig } from "../../src/reconcile/defaults.ts";
import { runController } from "../../src/runtime/controller.ts";
import { ownRecordName } from "../../src/runtime/own-record-kube.ts";
import { createTestNamespace, repoRoot, useControlPlane } from "../support/cluster.ts";
import { waitFor } from "../support/wait.ts";

const crds = readdirSync(join(repoRoot, "deploy", "crds"))
  .filter((file) => file.endsWith(".yaml"))
  .map((file) => join(repoRoot, "deploy", "crds", file));
const cluster = useControlPlane({ crds });
const druid = { group: "druid.gardener.cloud", version: "v1alpha1" };
const tasks = { ...druid, plural: "etcdopstasks" };
const etcds = { ...druid, plural: "etcds" };
const etcd = "etcd-main";
const stepKey = "druid.gardener.cloud/quorum-recovery-last-completed-step";
const waitKey = "druid.gardener.cloud/quorum-recovery-wait-start";
const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
const config = [
  `initial-cluster: ${[0, 1, 2].map((n) => `${etcd}-${n}=https://${etcd}-${n}.${etcd}-peer:2380`).join(",")}`,
  "initial-cluster-state: existing",
  "advertise-client-urls:",
  `  ${etcd}-0:`,
  `  - https://${etcd}-0.${etcd}-peer:2379`,
  "",
].join("\n");

const condition = (type: string, status: string, reason: string) => ({
  type,
  status,
  reason,
  message: "set by the test",
  lastTransitionTime: new Date().toISOString(),
  lastUpdateTime: new Date().toISOString(),
});

type Task = {
  metadata: { uid: string; annotations?: Record<string, string> };
  status?: {
    state?: string;
    lastOperation?: { description?: string };
    lastErrors?: Array<{ code: string; description: string }>;
  };
};

describe("recoverFromQuorumLoss takes no progress its author writes (H1), on a real kube-apiserver", () => {
  let kc: KubeConfig;
  let namespace: string;
  let records: string;
  const scope = Scope.makeUnsafe();
  const api = () => kc.makeApiClient(CustomObjectsApi);
  const core = () => kc.makeApiClient(CoreV1Api);
  const apps = () => kc.makeApiClient(AppsV1Api);
  const readTask = async (name: string) =>
    (await api().getNamespacedCustomObject({ ...tasks, namespace, name })) as Task;
  const finished = (name: string, description?: string) =>
    waitFor(
      `${name} to finish${description === undefined ? "" : ` or show "${description}"`}`,
      async () => {
        const task = await readTask(name);
        const state = task.status?.state;
        if (state === "Succeeded" || state === "Failed" || state === "Rejected") return task;
        return description !== undefined && task.status?.lastOperation?.description?.startsWith(description)
          ? task
          : undefined;
      },
      90_000,
    );
  const liveVolumes = async () =>
    (await core().listNamespacedPersistentVolumeClaim({ namespace })).items
      .filter((claim) => claim.metadata?.deletionTimestamp === undefined)
      .map((claim) => claim.metadata?.name)
      .sort();
  const setEtcdConditions = (conditions: ReturnType<typeof condition>[]) =>
    api().patchNamespacedCustomObjectStatus(
      { ...etcds, namespace, name: etcd, body: { status: { conditions } } },
      mergePatch,
    );

  beforeAll(async () => {
    kc = cluster().makeKubeConfig();
    namespace = await createTestNamespace(kc, "h1");
    records = await createTestNamespace(kc, "records");
    const created = (await api().createNamespacedCustomObject({
      ...etcds,
      namespace,
      body: {
        apiVersion: "druid.gardener.cloud/v1alpha1",
        kind: "Etcd",
        metadata: { name: etcd, namespace },
        spec: { replicas: 3, labels: { app: etcd }, etcd: {}, backup: {} },
      },
    })) as { metadata: { uid: string } };
    await setEtcdConditions([condition("Ready", "False", "QuorumLost")]);
    await apps().createNamespacedStatefulSet({
      namespace,
      body: {
        metadata: {
          name: etcd,
          ownerReferences: [
            {
              apiVersion: "druid.gardener.cloud/v1alpha1",
              kind: "Etcd",
              name: etcd,
              uid: created.metadata.uid,
              controller: true,
            },
          ],
        },
        spec: {
          replicas: 3,
          serviceName: `${etcd}-peer`,
          selector: { matchLabels: { app: etcd } },
          template: {
            metadata: { labels: { app: etcd } },
            spec: { containers: [{ name: "etcd", image: "example.invalid/etcd:0" }] },
          },
        },
      },
    });
    for (const ordinal of [0, 1, 2]) {
      await core().createNamespacedPersistentVolumeClaim({
        namespace,
        body: {
          metadata: { name: `data-${etcd}-${ordinal}`, labels: volumeLabels(etcd) },
          spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
        },
      });
      await kc.makeApiClient(CoordinationV1Api).createNamespacedLease({
        namespace,
        body: { metadata: { name: `${etcd}-${ordinal}`, labels: memberLeaseLabels(etcd) } },
      });
    }
    await core().createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: `${etcd}-config` }, data: { "etcd.conf.yaml": config } },
    });
    const services = Layer.mergeAll(
      kubernetesLayer({ kubeConfig: kc, resource: etcdOpsTaskKind.resource }),
      kubernetesObjectReaderLayer({ kubeConfig: kc }),
      kubernetesQuorumClusterLayer({ kubeConfig: kc }),
    );
    await Effect.runPromise(
      runController({
        kind: etcdOpsTaskKind,
        handlers: { recoverFromQuorumLoss: recoverFromQuorumLossHandler },
        config: lifecycleConfig(etcdOpsTaskKind, { backoffBaseMs: 50, backoffCapMs: 500 }),
        kubeConfig: kc,
        concurrency: 2,
        namespace,
        progressNamespace: records,
      }).pipe(
        Effect.tap((handle) => handle.synced),
        Effect.provide(services),
        Scope.provide(scope),
      ),
    );
  });
  afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)));

  it("a task created at WaitScaleDown, unconfirmed: Rejected with ERR_FORGED_PROGRESS, nothing touched", async () => {
    await api().createNamespacedCustomObject({
      ...tasks,
      namespace,
      body: {
        apiVersion: "druid.gardener.cloud/v1alpha1",
        kind: "EtcdOpsTask",
        metadata: { name: "forged", annotations: { [stepKey]: "WaitScaleDown" } },
        spec: {
          etcdName: etcd,
          ttlSecondsAfterFinished: 3600,
          config: { recoverFromQuorumLoss: { allowDataLoss: true } },
        },
      },
    });
    const task = await finished("forged");
    expect(task.status?.state, JSON.stringify(task.status)).toBe("Rejected");
    const error = task.status?.lastErrors?.at(-1);
    expect(error?.code).toBe("ERR_FORGED_PROGRESS");
    expect(error?.description).toContain(`create the task without ${stepKey}`);
    expect(await liveVolumes()).toEqual([0, 1, 2].map((n) => `data-${etcd}-${n}`));
    expect((await apps().readNamespacedStatefulSet({ namespace, name: etcd })).spec?.replicas).toBe(3);
    const leases = await kc.makeApiClient(CoordinationV1Api).listNamespacedLease({ namespace });
    expect(leases.items).toHaveLength(3);
    const etcdObject = (await api().getNamespacedCustomObject({ ...etcds, namespace, name: etcd })) as {
      metadata: { annotations?: Record<string, string> };
    };
    expect(etcdObject.metadata.annotations ?? {}).toEqual({});
    await api().deleteNamespacedCustomObject({ ...tasks, namespace, name: "forged" });
  });

  it("a step rewound mid-run runs no step again; the record goes with the task", async () => {
    await api().createNamespacedCustomObject({
      ...tasks,
      namespace,
      body: {
        apiVersion: "druid.gardener.cloud/v1alpha1",
        kind: "EtcdOpsTask",
        metadata: { name: "r", annotations: { "druid.gardener.cloud/confirm-recovery": "true" } },
        spec: {
          etcdName: etcd,
          ttlSecondsAfterFinished: 3600,
          config: { recoverFromQuorumLoss: { allowDataLoss: true } },
        },
      },
    });
    const waiting = await finished("r", "Step 10/13 WaitPodReady");
    expect(waiting.status?.state).toBe("InProgress");
    const record = await core().readNamespacedConfigMap({
      namespace: records,
      name: ownRecordName(waiting.metadata.uid),
    });
    expect(record.data?.lastCompletedStep).toBe("ScaleUp");
    expect(await liveVolumes()).toEqual([]);
    // A volume made after DeletePVCs, with druid's labels: a DeletePVCs run again would delete it.
    await core().createNamespacedPersistentVolumeClaim({
      namespace,
      body: {
        metadata: { name: `fresh-${etcd}-0`, labels: volumeLabels(etcd) },
        spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
      },
    });
    // The author rewinds the step.
    await api().patchNamespacedCustomObject(
      {
        ...tasks,
        namespace,
        name: "r",
        body: { metadata: { annotations: { [stepKey]: "WaitScaleDown", [waitKey]: null } } },
      },
      mergePatch,
    );
    // Member 0 comes up, then druid reports every member ready.
    await core().createNamespacedPod({
      namespace,
      body: {
        metadata: { name: `${etcd}-0` },
        spec: { containers: [{ name: "etcd", image: "example.invalid/etcd:0" }] },
      },
    });
    await core().patchNamespacedPodStatus(
      {
        namespace,
        name: `${etcd}-0`,
        body: { status: { conditions: [{ type: "Ready", status: "True" }] } },
      },
      mergePatch,
    );
    await finished("r", "Step 12/13 WaitEtcdReady");
    await setEtcdConditions([
      condition("Ready", "True", "Quorate"),
      condition("AllMembersReady", "True", "AllMembersReady"),
    ]);
    const done = await finished("r");
    expect(done.status?.state, JSON.stringify(done.status)).toBe("Succeeded");
    expect(await liveVolumes()).toEqual([`fresh-${etcd}-0`]);
    expect((await apps().readNamespacedStatefulSet({ namespace, name: etcd })).spec?.replicas).toBe(1);
    expect(done.metadata.annotations?.[stepKey]).toBe("ReenableComponentProtection");
    await api().deleteNamespacedCustomObject({ ...tasks, namespace, name: "r" });
    await waitFor("the task and its record to be gone", async () => {
      const task = await readTask("r").catch(() => undefined);
      const left = await core()
        .readNamespacedConfigMap({ namespace: records, name: ownRecordName(done.metadata.uid) })
        .catch(() => undefined);
      return task === undefined && left === undefined ? true : undefined;
    });
  });
});
