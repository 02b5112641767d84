/**
 * opstask notices another controller on its tasks (src/runtime/foreign-writers.ts), end to end: the
 * controller process as deployed (bundled CLI, deploy/'s RBAC) on a real apiserver, a task whose status
 * and finalizer another field manager (`etcd-druid`) wrote, and one it runs alone. The other writer is
 * reported once per task and field — a Warning Event, the metric and a log line — and nothing is
 * reported for opstask's own writes or for a creator's spec.
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import {
  CustomObjectsApi,
  EventsV1Api,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Finalizer } from "../../src/etcd/api/etcdopstask.ts";
import { createTestNamespace, repoRoot, useControlPlane } from "../support/cluster.ts";
import { installOpstask, type RunningOpstask, startOpstask } from "../support/opstask-process.ts";

const crdDir = join(repoRoot, "deploy", "crds");
const cluster = useControlPlane({
  crds: readdirSync(crdDir)
    .filter((file) => file.endsWith(".yaml"))
    .map((file) => join(crdDir, file)),
});
const tasks = { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcdopstasks" };
const merge = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const waitFor = async <A>(
  what: string,
  probe: () => Promise<A | undefined>,
  timeoutMs: number,
): Promise<A> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(200);
  }
};

describe("opstask notices another controller writing its tasks", () => {
  let kc: KubeConfig;
  let api: CustomObjectsApi;
  let namespace: string;
  let opstask: RunningOpstask;

  const createTask = (name: string) =>
    api.createNamespacedCustomObject({
      ...tasks,
      namespace,
      body: {
        apiVersion: "druid.gardener.cloud/v1alpha1",
        kind: "EtcdOpsTask",
        metadata: { name, namespace },
        spec: {
          etcdName: `etcd-${name}`,
          ttlSecondsAfterFinished: 3600,
          config: { onDemandSnapshot: { type: "full" } },
        },
      },
    });
  const foreignWriterEvents = async () =>
    (await kc.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace })).items.filter(
      (event) => event.reason === "ForeignWriter",
    );

  beforeAll(async () => {
    const plane = cluster();
    kc = plane.makeKubeConfig();
    api = kc.makeApiClient(CustomObjectsApi);
    await installOpstask(plane);
    namespace = await createTestNamespace(kc, "foreign");
    // Before opstask runs, "etcd-druid" takes the task: its finalizer and a status, as druid writes them.
    await createTask("taken");
    await api.patchNamespacedCustomObject(
      {
        ...tasks,
        namespace,
        name: "taken",
        body: { metadata: { finalizers: [Finalizer] } },
        fieldManager: "etcd-druid",
      },
      merge,
    );
    const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
    await api.patchNamespacedCustomObjectStatus(
      {
        ...tasks,
        namespace,
        name: "taken",
        body: { status: { state: "Pending", lastTransitionTime: now } },
        fieldManager: "etcd-druid",
      },
      merge,
    );
    opstask = await startOpstask(plane, { namespaces: [namespace] });
  }, 120_000);

  afterAll(async () => {
    await opstask?.stop();
  });

  it("reports the other writer once per task and field: a Warning Event, the metric and a log line", async () => {
    await createTask("alone");
    // opstask runs "alone" to its end (Rejected: its Etcd does not exist), writing finalizer and status.
    await waitFor(
      "task alone to be Rejected",
      async () => {
        const task = (await api.getNamespacedCustomObject({ ...tasks, namespace, name: "alone" })) as {
          status?: { state?: string };
        };
        return task.status?.state === "Rejected" ? true : undefined;
      },
      30_000,
    );
    const events = await waitFor(
      "two ForeignWriter Events",
      async () => {
        const found = await foreignWriterEvents();
        return found.length >= 2 ? found : undefined;
      },
      30_000,
    );
    expect(events.map((event) => [event.regarding?.name, event.type]).sort()).toEqual([
      ["taken", "Warning"],
      ["taken", "Warning"],
    ]);
    const notes = events.map((event) => event.note ?? "").sort();
    expect(notes[0]).toMatch(/^field manager "etcd-druid" added the finalizer opstask uses/);
    expect(notes[1]).toMatch(/^field manager "etcd-druid" wrote this EtcdOpsTask's status/);
    // The flagship names etcd-druid's controller and where to read how to keep it off.
    for (const note of notes)
      expect(note).toMatch(/\(etcd-druid's EtcdOpsTask controller\?\).*\(see deploy\/coexistence\)\.$/);

    // Later changes to the task (a label, opstask's own writes) report nothing new.
    await api.patchNamespacedCustomObject(
      { ...tasks, namespace, name: "taken", body: { metadata: { labels: { edited: "yes" } } } },
      merge,
    );
    await sleep(3_000);
    expect(await foreignWriterEvents()).toHaveLength(2);

    const metrics = await (await fetch(opstask.metricsUrl)).text();
    expect(metrics).toContain('opstask_foreign_writes_total{manager="etcd-druid",field="status"} 1');
    expect(metrics).toContain('opstask_foreign_writes_total{manager="etcd-druid",field="finalizer"} 1');
    const logged = opstask.lines().filter((line) => line.includes("another controller writes this task"));
    expect(logged).toHaveLength(2);
    expect(logged.every((line) => line.includes('"etcd-druid"') && line.includes("taken"))).toBe(true);
  }, 90_000);
});
