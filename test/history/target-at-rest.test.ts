/**
 * `opstask_target_at_rest` (src/history/history-metrics.ts): for each target the history shows, 1 while
 * it takes no tasks by design, else 0; `opstask controller` reads "at rest" from its Etcd cache as a
 * hibernated Etcd (`spec.replicas: 0`), which the snapshot-age alert leaves out (deploy/monitoring).
 */
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { etcdAtRest, keepEtcd, makeEtcdCache } from "../../src/etcd/object-reader-cached.ts";
import type { HistoryEntry } from "../../src/history/history-entry.ts";
import { makeHistoryMetrics } from "../../src/history/history-metrics.ts";
import type { KubeObject } from "../../src/kube/object.ts";

const entry = (target: string, type = "onDemandSnapshot"): HistoryEntry => ({
  target,
  type,
  last: { state: "Succeeded", at: 1_000, durationSeconds: 1 },
  lastSuccessAt: 1_000,
});

const atRestLines = async (registry: Registry) =>
  (await registry.metrics()).split("\n").filter((line) => line.startsWith("opstask_target_at_rest{"));

const etcd = (name: string, replicas: number): KubeObject =>
  keepEtcd({
    apiVersion: "druid.gardener.cloud/v1alpha1",
    kind: "Etcd",
    metadata: { name, namespace: "ns", uid: `${name}-uid`, resourceVersion: "1" },
    spec: { replicas, labels: { app: name }, etcd: {}, backup: {} },
  } as KubeObject);

describe("opstask_target_at_rest", () => {
  it("is 1 for a shown target that is at rest, 0 for one that is not, and goes with its last entry", async () => {
    const registry = new Registry();
    const resting = new Set(["ns/etcd-sleeping"]);
    const metrics = makeHistoryMetrics(
      registry,
      "EtcdOpsTask",
      () => 0,
      "opstask_",
      (namespace, target) => resting.has(`${namespace}/${target}`),
    );
    metrics.show("ns", entry("etcd-sleeping"));
    metrics.show("ns", entry("etcd-sleeping", "onDemandMaintenance"));
    metrics.show("ns", entry("etcd-awake"));
    expect(await atRestLines(registry)).toEqual([
      'opstask_target_at_rest{kind="EtcdOpsTask",namespace="ns",target="etcd-sleeping"} 1',
      'opstask_target_at_rest{kind="EtcdOpsTask",namespace="ns",target="etcd-awake"} 0',
    ]);
    resting.delete("ns/etcd-sleeping");
    metrics.forget("ns", { target: "etcd-sleeping", type: "onDemandSnapshot" });
    metrics.forget("ns", { target: "etcd-awake", type: "onDemandSnapshot" });
    expect(await atRestLines(registry)).toEqual([
      'opstask_target_at_rest{kind="EtcdOpsTask",namespace="ns",target="etcd-sleeping"} 0',
    ]);
  });

  it("is not exported without atRest", async () => {
    const registry = new Registry();
    makeHistoryMetrics(registry, "EtcdOpsTask", () => 0).show("ns", entry("etcd-main"));
    expect(await atRestLines(registry)).toEqual([]);
  });

  it("opstask controller's atRest: the cached Etcd has spec.replicas 0", () => {
    const objects = new Map<string, KubeObject>([
      ["ns/etcd-sleeping", etcd("etcd-sleeping", 0)],
      ["ns/etcd-awake", etcd("etcd-awake", 3)],
    ]);
    const etcds = makeEtcdCache();
    etcds.attach((namespace, name) => objects.get(`${namespace}/${name}`));
    const atRest = etcdAtRest(etcds);
    expect(atRest("ns", "etcd-sleeping")).toBe(true);
    expect(atRest("ns", "etcd-awake")).toBe(false);
    expect(atRest("ns", "etcd-unknown")).toBe(false);
  });
});
