/**
 * The lab with the real etcd-druid (by default the release scripts/testbin builds): druid (a process on
 * the host, its EtcdOpsTask controller kept off the tasks by deploy/coexistence's policy, its images from
 * the node through its image-vector override) deploys the 3-member etcd cluster from an Etcd object
 * instead of the lab's own fixture, and opstask, deployed from deploy/ as two pods, takes an on-demand
 * full snapshot of it.
 *
 * Runs where druid is built (`scripts/testbin druid`) or given (OPSTASK_DRUID_BINARY or
 * OPSTASK_DRUID_SOURCE); vitest.config.ts leaves this file out otherwise and says so. Starts the lab:
 * run it under /tmp/lab.lock.
 */
import { AppsV1Api, CustomObjectsApi } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { findDruid } from "../../src/devcluster/druid/peer.ts";
import { Finalizer } from "../../src/etcd/api/etcdopstask.ts";
import { waitFor } from "../support/wait.ts";
import { EtcdName, runTask, useLab } from "./support/lab.ts";
import { snapshotNames } from "./support/object-store.ts";

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
});
