/**
 * Security finding 3 (issue 16) through the real controller and a real kube-apiserver: tasks with
 * long Etcd names (for Etcds that do not exist) do not grow /metrics, and their series go with them.
 */
import { CustomObjectsApi, type KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { etcdHandlerLayer, etcdHandlers } from "../../src/etcd/registry.ts";
import { type ControllerMetrics, makeControllerMetrics } from "../../src/runtime/metrics.ts";
import { createTestNamespace, druidCrds, useControlPlane } from "../support/cluster.ts";
import { type RunningController, startControllerWith } from "../support/controller.ts";

const cluster = useControlPlane({ crds: druidCrds });
const tasks = { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcdopstasks" };
const count = 150;

describe("task metrics through the controller (finding 3)", () => {
  let kc: KubeConfig;
  let api: CustomObjectsApi;
  let namespace: string;
  let metrics: ControllerMetrics;
  let controller: RunningController;

  const taskSeries = async () =>
    (await metrics.registry.metrics()).split("\n").filter((line) => line.startsWith("opstask_tasks_total{"));

  const until = async (what: string, done: () => Promise<boolean>) => {
    const deadline = Date.now() + 90_000;
    while (!(await done())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  };

  beforeAll(async () => {
    kc = cluster().makeKubeConfig();
    api = kc.makeApiClient(CustomObjectsApi);
    namespace = await createTestNamespace(kc, "metrics");
    metrics = makeControllerMetrics();
    controller = await startControllerWith(
      kc,
      etcdHandlers,
      etcdHandlerLayer({ kubeConfig: kc }),
      {},
      namespace,
      metrics.observer,
    );
  }, 120_000);

  afterAll(async () => {
    await controller?.stop();
  });

  it(`${count} tasks with 253-character Etcd names: one short series, gone with the tasks`, async () => {
    const names: string[] = [];
    for (let i = 0; i < count; i += 1) {
      const name = `t${i}`;
      names.push(name);
      const config = { onDemandSnapshot: { type: "full" } };
      await api.createNamespacedCustomObject({
        ...tasks,
        namespace,
        body: {
          apiVersion: "druid.gardener.cloud/v1alpha1",
          kind: "EtcdOpsTask",
          metadata: { name, namespace },
          spec: { etcdName: `${String(i).padStart(4, "0")}${"e".repeat(249)}`, config },
        },
      });
    }
    await until(`${count} tasks Rejected`, async () => {
      const total = (await taskSeries()).reduce((sum, line) => sum + Number(line.split(" ").pop()), 0);
      return total === count;
    });
    const lines = await taskSeries();
    expect(lines).toEqual([
      `opstask_tasks_total{type="onDemandSnapshot",state="Rejected",etcd="",namespace="${namespace}"} ${count}`,
    ]);
    expect((await metrics.registry.metrics()).length).toBeLessThan(64 * 1024);

    for (const name of names) {
      await api
        .patchNamespacedCustomObject({
          ...tasks,
          namespace,
          name,
          body: [{ op: "remove", path: "/metadata/finalizers" }],
        })
        .catch(() => undefined);
      await api.deleteNamespacedCustomObject({ ...tasks, namespace, name });
    }
    await until("the series to go with their tasks", async () => (await taskSeries()).length === 0);
  }, 180_000);
});
