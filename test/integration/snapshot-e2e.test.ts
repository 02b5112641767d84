/**
 * End to end with real parts only: the controller with its real OnDemandSnapshot handler, a real
 * kube-apiserver + etcd with druid's CRDs, and a real etcd-backup-restore (etcdbrctl) with the Local
 * store in front of a real etcd 3.5. Each task must leave a real snapshot file in the store.
 */
import { CustomObjectsApi, type KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TaskStatus } from "../../src/api/status.ts";
import { type BackupRestore, startBackupRestore } from "../../src/devcluster/backup-restore.ts";
import { createReadyEtcd } from "../../src/devcluster/ready-etcd.ts";
import { etcdHandlerLayer, etcdHandlers } from "../../src/etcd/registry.ts";
import { createTestNamespace, druidCrds, useControlPlane } from "../support/cluster.ts";
import { type RunningController, startControllerWith } from "../support/controller.ts";

const cluster = useControlPlane({ crds: druidCrds });
const tasks = { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcdopstasks" };
const etcdName = "etcd-e2e";

describe("on-demand snapshots through a real etcd-backup-restore", () => {
  let kc: KubeConfig;
  let api: CustomObjectsApi;
  let namespace: string;
  let backupRestore: BackupRestore;
  let controller: RunningController;

  const waitForTerminal = async (name: string): Promise<TaskStatus> => {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const task = (await api.getNamespacedCustomObject({ ...tasks, namespace, name })) as {
        status?: TaskStatus;
      };
      const state = task.status?.state;
      if (state === "Succeeded" || state === "Failed" || state === "Rejected") return task.status ?? {};
      if (Date.now() > deadline)
        throw new Error(`${name} not terminal after 30 s: ${JSON.stringify(task.status)}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  };

  const snapshot = async (name: string, config: Record<string, unknown>): Promise<TaskStatus> => {
    await api.createNamespacedCustomObject({
      ...tasks,
      namespace,
      body: {
        apiVersion: "druid.gardener.cloud/v1alpha1",
        kind: "EtcdOpsTask",
        metadata: { name, namespace },
        spec: { etcdName, ttlSecondsAfterFinished: 3600, config: { onDemandSnapshot: config } },
      },
    });
    return waitForTerminal(name);
  };

  beforeAll(async () => {
    kc = cluster().makeKubeConfig();
    api = kc.makeApiClient(CustomObjectsApi);
    namespace = await createTestNamespace(kc, "e2e");
    backupRestore = await startBackupRestore({ deltaSnapshotPeriod: "1h" });
    await createReadyEtcd(kc, {
      name: etcdName,
      namespace,
      backupPort: backupRestore.port,
      storePrefix: "e2e",
      message: "e2e",
    });
    const resolve = [{ host: `${etcdName}-client.${namespace}`, port: "*" as const, address: "127.0.0.1" }];
    controller = await startControllerWith(
      kc,
      etcdHandlers,
      etcdHandlerLayer({ kubeConfig: kc, resolve }),
      {},
      namespace,
    );
  }, 120_000);

  afterAll(async () => {
    await controller?.stop();
    await backupRestore?.stop();
  });

  it("a full snapshot task leaves a new full snapshot in the store", async () => {
    await backupRestore.putKeys(3);
    const before = await backupRestore.listSnapshots();
    const status = await snapshot("full", { type: "full" });
    expect(status.state).toBe("Succeeded");
    expect(status.lastOperation?.description).toBe("Snapshot created successfully");
    const added = (await backupRestore.listSnapshots()).filter((file) => !before.includes(file));
    expect(added.some((file) => /Full-.*\.gz$/.test(file))).toBe(true);
  });

  it("a final full snapshot task leaves a .final snapshot", async () => {
    await backupRestore.putKeys(1);
    const before = await backupRestore.listSnapshots();
    const status = await snapshot("final", { type: "full", isFinal: true });
    expect(status.state).toBe("Succeeded");
    const added = (await backupRestore.listSnapshots()).filter((file) => !before.includes(file));
    expect(added.some((file) => file.endsWith(".final"))).toBe(true);
  });

  it("a delta snapshot task after writes leaves an Incr snapshot; with nothing new it is skipped", async () => {
    await backupRestore.putKeys(5);
    // etcd-backup-restore takes etcd's changes asynchronously; ask for a delta once it has them.
    for (let waited = 0; !(await backupRestore.deltaPending()) && waited < 10_000; waited += 100) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const before = await backupRestore.listSnapshots();
    const status = await snapshot("delta", { type: "delta" });
    expect(status.state).toBe("Succeeded");
    expect(status.lastOperation?.description).toBe("Snapshot created successfully");
    const added = (await backupRestore.listSnapshots()).filter((file) => !before.includes(file));
    expect(added.some((file) => /Incr-/.test(file))).toBe(true);

    const skipped = await snapshot("delta-again", { type: "delta" });
    expect(skipped.state).toBe("Succeeded");
    expect(skipped.lastOperation?.description).toBe("Delta snapshot was skipped by backup-restore server");
  });
});
