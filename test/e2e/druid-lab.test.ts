/**
 * The lab with the real etcd-druid (by default the release scripts/testbin builds): druid (a process on
 * the host, its EtcdOpsTask controller kept off the tasks by deploy/coexistence's policy, its images from
 * the node through its image-vector override) deploys the 3-member etcd cluster from an Etcd object
 * instead of the lab's own fixture, and opstask, deployed from deploy/ as two pods, takes an on-demand
 * full snapshot of it. Last, the Etcd is hibernated while a snapshot task is InProgress (its POST held
 * by frozen sidecars): druid's Etcd controller creates its presync snapshot task, opstask runs it to
 * Succeeded, and only then does druid scale the StatefulSet to 0.
 *
 * Runs where druid is built (`scripts/testbin druid`) or given (OPSTASK_DRUID_BINARY or
 * OPSTASK_DRUID_SOURCE); vitest.config.ts leaves this file out otherwise and says so. Starts the lab:
 * run it under /tmp/lab.lock.
 */
import {
  ApiException,
  AppsV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
} from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { sleep } from "../../src/devcluster/deadline.ts";
import { findDruid } from "../../src/devcluster/druid/peer.ts";
import { Finalizer } from "../../src/etcd/api/etcdopstask.ts";
import { waitFor } from "../support/wait.ts";
import { EtcdName, runTask, useLab, waitForTask } from "./support/lab.ts";
import { snapshotNames } from "./support/object-store.ts";
import { sidecarProcesses, unreadRequests } from "./support/sidecars.ts";

const lookup = await findDruid((line) => process.stderr.write(`${line}\n`));
if (!lookup.found) throw new Error(lookup.reason);
const lab = useLab({ druid: lookup.peer, log: (line) => process.stderr.write(`${line}\n`) });

interface EtcdView {
  readonly status?: {
    readonly ready?: boolean;
    readonly readyReplicas?: number;
    readonly conditions?: ReadonlyArray<{ type?: string; status?: string }>;
  };
}

describe("etcd-druid deploys the lab's etcd cluster from an Etcd, and opstask snapshots it", () => {
  it("druid made the StatefulSet from the Etcd, with the lab's images from its image vector, and reports the Etcd Ready", async () => {
    const { kubeConfig, etcd, images, etcdFixture } = lab();
    expect(etcdFixture).toBe("etcd-druid");
    const set = await kubeConfig
      .makeApiClient(AppsV1Api)
      .readNamespacedStatefulSet({ namespace: etcd.spec.namespace, name: EtcdName });
    expect(set.metadata?.ownerReferences?.map((owner) => `${owner.kind}/${owner.uid}`)).toEqual([
      `Etcd/${etcd.uid}`,
    ]);
    expect(set.status?.readyReplicas).toBe(3);
    const containers = new Map((set.spec?.template.spec?.containers ?? []).map((c) => [c.name, c]));
    // druid's etcd container runs etcd-wrapper's `start-etcd`; the vector points it at the stand-in.
    expect(containers.get("etcd")?.args?.[0]).toBe("start-etcd");
    expect(containers.get("etcd")?.image).toContain("etcd-wrapper-lab");
    expect(containers.get("backup-restore")?.image).toBe(images.etcdbrctl.ref);
    const object = (await kubeConfig.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({
      group: "druid.gardener.cloud",
      version: "v1alpha1",
      plural: "etcds",
      namespace: etcd.spec.namespace,
      name: EtcdName,
    })) as EtcdView;
    expect(object.status?.ready).toBe(true);
    expect(object.status?.readyReplicas).toBe(3);
    const conditions = Object.fromEntries((object.status?.conditions ?? []).map((c) => [c.type, c.status]));
    expect(conditions).toMatchObject({ Ready: "True", AllMembersReady: "True" });
  });

  it("opstask's pods take an on-demand full snapshot of druid's etcd: Succeeded, and the snapshot is in the store", async () => {
    const { kubeConfig, etcd } = lab();
    const before = await snapshotNames(lab());
    const started = Date.now();
    const status = await runTask(kubeConfig, etcd.spec.namespace, "full", {
      onDemandSnapshot: { type: "full" },
    });
    process.stderr.write(`full snapshot task: ${status.state} in ${Date.now() - started} ms\n`);
    expect(status.state, JSON.stringify(status)).toBe("Succeeded");
    const added = (await snapshotNames(lab())).filter((file) => !before.includes(file));
    expect(added.filter((file) => file.startsWith("Full-"))).toHaveLength(1);
  }, 240_000);

  it("druid's EtcdOpsTask controller saw the task, and the coexistence policy refused its writes: only opstask wrote it", async () => {
    const { kubeConfig, etcd, druid } = lab();
    if (druid === undefined) throw new Error("the lab ran without etcd-druid");
    // The lab's only task. druid's first write on it (its finalizer) is refused by the policy, whose
    // message druid logs; it retries with its backoff, capped at its requeue interval (15 s).
    await waitFor(
      "druid's refused write on the task in its log",
      async () =>
        druid.lines().some((line) => line.includes("EtcdOpsTasks are run by opstask in this cluster"))
          ? true
          : undefined,
      60_000,
      500,
    );
    const task = (await kubeConfig.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({
      group: "druid.gardener.cloud",
      version: "v1alpha1",
      plural: "etcdopstasks",
      namespace: etcd.spec.namespace,
      name: "full",
    })) as { metadata?: { finalizers?: string[]; managedFields?: Array<{ manager?: string }> } };
    expect(task.metadata?.finalizers ?? []).toEqual([Finalizer]);
    expect((task.metadata?.managedFields ?? []).map((field) => field.manager)).not.toContain("etcd-druid");
    expect(druid.process.exited()).toBeUndefined();
  }, 90_000);

  it("hibernating the Etcd while a scheduled snapshot task is InProgress: druid's presync snapshot task Succeeds, and only then does druid scale the StatefulSet to 0", async () => {
    const { kubeConfig, etcd, druid } = lab();
    if (druid === undefined) throw new Error("the lab ran without etcd-druid");
    const namespace = etcd.spec.namespace;
    const custom = kubeConfig.makeApiClient(CustomObjectsApi);
    const apps = kubeConfig.makeApiClient(AppsV1Api);
    const before = await snapshotNames(lab());
    const presync = "presync-snapshot-hibernation-0";
    const schedules = { group: "opstask.gardener.cloud", version: "v1alpha1", plural: "taskschedules" };
    // A full snapshot every minute; its run is suspended once it is InProgress.
    await custom.createNamespacedCustomObject({
      ...schedules,
      namespace,
      body: {
        apiVersion: "opstask.gardener.cloud/v1alpha1",
        kind: "TaskSchedule",
        metadata: { name: "snapshot", namespace },
        spec: {
          taskKind: { apiVersion: "druid.gardener.cloud/v1alpha1", kind: "EtcdOpsTask" },
          taskTemplate: { spec: { etcdName: EtcdName, config: { onDemandSnapshot: { type: "full" } } } },
          schedule: "* * * * *",
        },
      },
    });
    // Freeze every sidecar (SIGSTOP) just before the next minute: the scheduled run's POST then waits
    // unanswered until they are thawed. A sidecar frozen for long stops renewing its member Lease.
    const untilMinute = () => 60_000 - (Date.now() % 60_000);
    if (untilMinute() < 10_000) await sleep(untilMinute() + 1_000);
    await sleep(untilMinute() - 3_000);
    const sidecars = sidecarProcesses(lab());
    expect(sidecars).toHaveLength(3);
    for (const pid of sidecars) process.kill(pid, "SIGSTOP");
    let scheduled = "";
    try {
      scheduled = await waitFor(
        "the scheduled run InProgress with its POST waiting at a frozen sidecar",
        async () => {
          const runs = (await custom.listNamespacedCustomObject({
            group: "druid.gardener.cloud",
            version: "v1alpha1",
            plural: "etcdopstasks",
            namespace,
            labelSelector: "opstask.gardener.cloud/schedule=snapshot",
          })) as { items: { metadata: { name: string }; status?: { state?: string } }[] };
          const running = runs.items.find((run) => run.status?.state === "InProgress");
          return running !== undefined && unreadRequests(sidecars) > 0 ? running.metadata.name : undefined;
        },
        60_000,
        100,
      );
      await custom.patchNamespacedCustomObject(
        { ...schedules, namespace, name: "snapshot", body: { spec: { suspend: true } } },
        setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
      );
      // Hibernation as Gardener asks for it: no replicas, and the reconcile annotation (druid's chart
      // leaves spec auto-reconcile off).
      await custom.patchNamespacedCustomObject(
        {
          group: "druid.gardener.cloud",
          version: "v1alpha1",
          plural: "etcds",
          namespace,
          name: EtcdName,
          body: {
            metadata: { annotations: { "gardener.cloud/operation": "reconcile" } },
            spec: { replicas: 0 },
          },
        },
        setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
      );
      await waitFor(
        `druid's ${presync}`,
        () =>
          custom
            .getNamespacedCustomObject({
              group: "druid.gardener.cloud",
              version: "v1alpha1",
              plural: "etcdopstasks",
              namespace,
              name: presync,
            })
            .catch((error: unknown) => {
              // Not there yet: druid creates it when its Etcd controller reconciles the hibernation.
              if (error instanceof ApiException && error.code === 404) return undefined;
              throw error;
            }),
        60_000,
        250,
      );
      const set = await apps.readNamespacedStatefulSet({ namespace, name: EtcdName });
      expect(set.spec?.replicas).toBe(3);
    } finally {
      for (const pid of sidecars) process.kill(pid, "SIGCONT");
    }
    const run = await waitForTask(kubeConfig, namespace, scheduled, 240_000);
    expect(run.state, JSON.stringify(run)).toBe("Succeeded");
    const status = await waitForTask(kubeConfig, namespace, presync, 240_000);
    expect(status.state, JSON.stringify(status)).toBe("Succeeded");
    await waitFor(
      "druid to scale the StatefulSet to 0",
      async () =>
        (await apps.readNamespacedStatefulSet({ namespace, name: EtcdName })).spec?.replicas === 0
          ? true
          : undefined,
      120_000,
      500,
    );
    // druid scales to 0 after a presync task Succeeded, or after its third failed: it took the first
    // and made no other.
    const names = (
      (await custom.listNamespacedCustomObject({
        group: "druid.gardener.cloud",
        version: "v1alpha1",
        plural: "etcdopstasks",
        namespace,
      })) as { items: { metadata: { name: string } }[] }
    ).items.map((task) => task.metadata.name);
    expect(names.filter((name) => name.startsWith("presync-snapshot-"))).toEqual([presync]);
    // One full snapshot each for the two tasks (the sidecars may add one of their own as etcd stops).
    const added = (await snapshotNames(lab())).filter((file) => !before.includes(file));
    expect(added.filter((file) => file.startsWith("Full-")).length).toBeGreaterThanOrEqual(2);
  }, 600_000);
});
