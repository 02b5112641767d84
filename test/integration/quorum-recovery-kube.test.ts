/**
 * Issue 26 on a real kube-apiserver (no kubelet, no StatefulSet controller: the objects only): the
 * Kubernetes side of quorum-loss recovery and of resumable steps. The task's own annotations are
 * written with a merge patch carrying its UID, which the apiserver refuses for a namesake created
 * since; the QuorumCluster calls scale through the `scale` subresource, delete exactly the PVCs and
 * Leases with druid's labels, rewrite the ConfigMap and read a pod's readiness. The CLI verb
 * `recover-quorum` asks before it creates anything and creates a confirmed task.
 */

import { readdirSync } from "node:fs";
import { join } from "node:path";
import {
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
} from "@kubernetes/client-node";
import * as Effect from "effect/Effect";
import { beforeAll, describe, expect, it } from "vitest";
import { makeOpstaskCommands } from "../../src/cli/task/index.ts";
import { memberLeaseLabels, volumeLabels } from "../../src/etcd/recover-from-quorum-loss/cluster.ts";
import { makeKubernetesQuorumCluster } from "../../src/etcd/recover-from-quorum-loss/cluster-kubernetes.ts";
import { loadKubeClient } from "../../src/kube/kubeconfig-loader.ts";
import { kubeOwnTask } from "../../src/runtime/handler-context-kube.ts";
import { createTestNamespace, repoRoot, useControlPlane } from "../support/cluster.ts";
import { etcdStatefulSet, memberClaim } from "../support/etcd-member-objects.ts";
import { captureTaskIo } from "../support/task-io.ts";

const crds = readdirSync(join(repoRoot, "deploy", "crds"))
  .filter((file) => file.endsWith(".yaml"))
  .map((file) => join(repoRoot, "deploy", "crds", file));
const cluster = useControlPlane({ crds });
const tasks = { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcdopstasks" } as const;
const etcd = "etcd-main";

const task = (name: string, annotations: Record<string, string> = {}) => ({
  apiVersion: "druid.gardener.cloud/v1alpha1",
  kind: "EtcdOpsTask",
  metadata: { name, annotations },
  spec: { etcdName: etcd, config: { recoverFromQuorumLoss: {} } },
});

describe("quorum-loss recovery against a real kube-apiserver", () => {
  let kc: KubeConfig;
  let namespace: string;
  beforeAll(async () => {
    kc = cluster().makeKubeConfig();
    namespace = await createTestNamespace(kc, "quorum");
  });

  it("ownTask.annotate writes the task's annotations, and is refused once a namesake holds the name", async () => {
    const api = kc.makeApiClient(CustomObjectsApi);
    const client = await loadKubeClient(cluster().kubeconfigPath);
    const first = (await api.createNamespacedCustomObject({ ...tasks, namespace, body: task("t") })) as {
      metadata: { uid: string; resourceVersion: string };
    };
    const subject = {
      namespace,
      name: "t",
      uid: first.metadata.uid,
      resourceVersion: first.metadata.resourceVersion,
    };
    expect(await kubeOwnTask(client, tasks, subject).annotate({ "example.dev/step": "ScaleDown" })).toEqual({
      "example.dev/step": "ScaleDown",
    });
    // An empty patch reads them (what resumable steps do at each call), fresh from the API server.
    expect(await kubeOwnTask(client, tasks, subject).annotate({})).toEqual({
      "example.dev/step": "ScaleDown",
    });
    const read = (await api.getNamespacedCustomObject({ ...tasks, namespace, name: "t" })) as {
      metadata: { annotations?: Record<string, string> };
    };
    expect(read.metadata.annotations?.["example.dev/step"]).toBe("ScaleDown");
    await api.deleteNamespacedCustomObject({ ...tasks, namespace, name: "t" });
    await api.createNamespacedCustomObject({ ...tasks, namespace, body: task("t") });
    await expect(
      kubeOwnTask(client, tasks, subject).annotate({ "example.dev/step": "DeletePVCs" }),
    ).rejects.toThrow(/annotating .* failed/);
    const namesake = (await api.getNamespacedCustomObject({ ...tasks, namespace, name: "t" })) as {
      metadata: { annotations?: Record<string, string> };
    };
    expect(namesake.metadata.annotations?.["example.dev/step"]).toBeUndefined();
  });

  it("QuorumCluster: scale subresource, PVCs and Leases by druid's labels, the ConfigMap, a pod's readiness", async () => {
    const apps = kc.makeApiClient(AppsV1Api);
    const core = kc.makeApiClient(CoreV1Api);
    const coordination = kc.makeApiClient(CoordinationV1Api);
    await apps.createNamespacedStatefulSet({ namespace, body: etcdStatefulSet(etcd) });
    const claim = (name: string, labels: Record<string, string>) =>
      core.createNamespacedPersistentVolumeClaim({ namespace, body: memberClaim(name, labels) });
    for (const ordinal of [0, 1, 2]) await claim(`data-${etcd}-${ordinal}`, volumeLabels(etcd));
    await claim("someone-elses", { "app.kubernetes.io/part-of": "other" });
    for (const ordinal of [0, 1, 2])
      await coordination.createNamespacedLease({
        namespace,
        body: { metadata: { name: `${etcd}-${ordinal}`, labels: memberLeaseLabels(etcd) } },
      });
    await coordination.createNamespacedLease({ namespace, body: { metadata: { name: "leader-election" } } });
    await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: `${etcd}-config` }, data: { "etcd.conf.yaml": "name: x\n" } },
    });
    await core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: `${etcd}-0` },
        spec: { containers: [{ name: "etcd", image: "example.invalid/etcd:0" }] },
      },
    });

    const quorum = makeKubernetesQuorumCluster({
      kubeConfig: await loadKubeClient(cluster().kubeconfigPath),
    });
    const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect);
    expect(await run(quorum.statefulSet(namespace, etcd))).toEqual({ desired: 3, current: 0, ready: 0 });
    await run(quorum.scale(namespace, etcd, 0));
    expect((await apps.readNamespacedStatefulSet({ namespace, name: etcd })).spec?.replicas).toBe(0);
    expect(await run(quorum.deletePvcs(namespace, volumeLabels(etcd)))).toBe(3);
    const claims = await core.listNamespacedPersistentVolumeClaim({ namespace });
    // Deleting a PVC only marks it while the pvc-protection finalizer holds it; none of ours is left unmarked.
    expect(
      claims.items.filter((c) => c.metadata?.deletionTimestamp === undefined).map((c) => c.metadata?.name),
    ).toEqual(["someone-elses"]);
    expect(await run(quorum.deleteLeases(namespace, memberLeaseLabels(etcd)))).toBe(3);
    const leases = await coordination.listNamespacedLease({ namespace });
    expect(leases.items.map((lease) => lease.metadata?.name)).toEqual(["leader-election"]);
    expect(await run(quorum.configData(namespace, `${etcd}-config`, "etcd.conf.yaml"))).toBe("name: x\n");
    await run(quorum.writeConfigData(namespace, `${etcd}-config`, "etcd.conf.yaml", "name: y\n"));
    expect(
      (await core.readNamespacedConfigMap({ namespace, name: `${etcd}-config` })).data?.["etcd.conf.yaml"],
    ).toBe("name: y\n");
    expect(await run(quorum.podReady(namespace, `${etcd}-0`))).toBe(false);
    expect(await run(quorum.podReady(namespace, `${etcd}-9`))).toBe(false);
    expect(await run(quorum.statefulSet(namespace, "missing"))).toBeUndefined();
  });

  describe("opstask recover-quorum", () => {
    const runCli = async (args: ReadonlyArray<string>, answer: string | undefined) => {
      const { io, captured } = captureTaskIo();
      const commands = makeOpstaskCommands(() => ({ ...io, ask: async () => answer }));
      const code = await commands["recover-quorum"]?.([
        ...args,
        "--kubeconfig",
        cluster().kubeconfigPath,
        "-n",
        namespace,
      ]);
      return { code, ...captured };
    };
    const exists = async (name: string) =>
      kc
        .makeApiClient(CustomObjectsApi)
        .getNamespacedCustomObject({ ...tasks, namespace, name })
        .then(
          (object) => object as { metadata: { annotations?: Record<string, string> }; spec: unknown },
          () => undefined,
        );

    it("without a terminal and without --yes: exit 2, nothing created", async () => {
      const result = await runCli([etcd, "--name", "r-noterm"], undefined);
      expect(result.code).toBe(2);
      expect(result.err).toContain("pass --yes to confirm");
      expect(await exists("r-noterm")).toBeUndefined();
    });

    it("a wrong answer: exit 1, nothing created", async () => {
      const result = await runCli([etcd, "--name", "r-wrong"], "yes");
      expect(result.code).toBe(1);
      expect(result.err).toContain('not confirmed ("yes" is not "etcd-main")');
      expect(await exists("r-wrong")).toBeUndefined();
    });

    it("the Etcd's name typed: a confirmed recoverFromQuorumLoss task", async () => {
      const result = await runCli([etcd, "--name", "r-ok", "--pod-ready-timeout", "5m"], etcd);
      expect(result.err).toBe("");
      expect(result.code).toBe(0);
      expect(result.out).toBe("r-ok\n");
      const created = await exists("r-ok");
      expect(created?.metadata.annotations?.["druid.gardener.cloud/confirm-recovery"]).toBe("true");
      expect(created?.spec).toMatchObject({
        etcdName: etcd,
        config: { recoverFromQuorumLoss: { podReadyTimeout: "5m" } },
      });
    });

    it("--yes does not ask; a duration that is not one is exit 2", async () => {
      expect((await runCli([etcd, "--name", "r-yes", "--yes"], undefined)).code).toBe(0);
      expect(await exists("r-yes")).toBeDefined();
      const bad = await runCli([etcd, "--yes", "--scale-down-timeout", "soon"], undefined);
      expect(bad.code).toBe(2);
      expect(bad.err).toContain('invalid value "soon" for --scale-down-timeout');
    });
  });
});
