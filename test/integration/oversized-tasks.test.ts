/**
 * A task author cannot take the controller down by the size of their tasks (docs/security.md): the
 * controller process as deployed (the production bundle, the Deployment's NODE_OPTIONS with its 128 MiB
 * heap, deploy/'s RBAC) on a real apiserver, and tasks of the largest size the apiserver stores (etcd's
 * request limit, found by trying), their bulk wherever an author can put it: a 250 KB annotation (which
 * the cache drops) and the rest in a spec string the CRD does not bound (the compaction image, which
 * the cache must keep, so the task is over the bound). So many that together they are three times the
 * heap:
 *
 * - they arrive while the controller watches (one watch event each), then the controller is
 *   restarted and LISTs them all (pages bounded in bytes);
 * - it never exits, and its peak RSS (VmHWM) stays under the Deployment's memory limit;
 * - every oversized task is Rejected with ERR_TASK_TOO_LARGE naming its size and the limit;
 * - a small task created afterwards runs to Succeeded (a compaction whose Job the test completes, as
 *   no Job controller runs here).
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { BatchV1Api, CustomObjectsApi, type KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bulkyTask, createLargestTask, taskStates, tasks } from "../support/bulky-tasks.ts";
import { createTestNamespace, repoRoot, useControlPlane } from "../support/cluster.ts";
import { succeededJobStatus } from "../support/job-succeeded.ts";
import { installOpstask, type RunningOpstask, startOpstask } from "../support/opstask-process.ts";
import { procSample } from "../support/proc-stats.ts";

const crdDir = join(repoRoot, "deploy", "crds");
const cluster = useControlPlane({
  crds: readdirSync(crdDir)
    .filter((file) => file.endsWith(".yaml"))
    .map((file) => join(crdDir, file)),
  // Room for the revisions of a few hundred 1.5 MB objects (each write stores the object again).
  etcdArgs: ["--quota-backend-bytes=8589934592"],
});

/** The controller's heap (deploy/deployment.yaml: --max-old-space-size=128). */
const heap = 128 * 1024 * 1024;
/** deploy/deployment.yaml's memory limit: above it the pod is OOM-killed. */
const memoryLimit = 160 * 1024 * 1024;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface TaskView {
  metadata: { name: string };
  status?: { state?: string; lastErrors?: Array<{ code: string; description: string }> };
}

describe("tasks of the apiserver's largest size, three times the heap", () => {
  let kc: KubeConfig;
  let api: CustomObjectsApi;
  let namespace: string;
  let opstask: RunningOpstask | undefined;
  /** The largest task the apiserver stores, in bytes of the JSON sent; "big-0" is one. */
  let largest = 0;
  /** As many as make three heaps. */
  let count = 0;

  /** The controller is alive: fail at once, with its last lines, when it is not. */
  const alive = (): void => {
    const exited = opstask?.process.exited();
    if (exited !== undefined)
      throw new Error(
        `the controller exited (${exited.code ?? exited.signal}):\n${opstask?.process.tail(30)}`,
      );
  };

  const waitFor = async <A>(what: string, probe: () => Promise<A | undefined>, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      alive();
      const value = await probe().catch(() => undefined);
      if (value !== undefined) return value;
      if (Date.now() > deadline)
        throw new Error(
          `timed out after ${timeoutMs} ms waiting for ${what}; the controller's last lines:\n${opstask?.process.tail(30)}`,
        );
      await sleep(1_000);
    }
  };

  const getTask = async (name: string) =>
    (await api.getNamespacedCustomObject({ ...tasks, namespace, name })) as TaskView;

  const allRejected = async () => {
    const states = await taskStates(cluster(), namespace);
    return [...states.values()].filter((state) => state === "Rejected").length === count ? true : undefined;
  };

  const peakRss = (): number => {
    const sample = opstask === undefined ? undefined : procSample(opstask.pid);
    if (sample === undefined) throw new Error("the controller's /proc entry is gone");
    return sample.peakRss;
  };

  beforeAll(async () => {
    const plane = cluster();
    kc = plane.makeKubeConfig();
    api = kc.makeApiClient(CustomObjectsApi);
    await installOpstask(plane);
    namespace = await createTestNamespace(kc, "oversized");
    const found = await createLargestTask(api, namespace, "big-0");
    largest = found.stored;
    // Within 4 KiB of etcd's request limit: a task 4 KiB larger is refused.
    expect(found.refused).toBe(largest + 4_096);
    count = Math.ceil((3 * heap) / largest);
    await api.createNamespacedCustomObject({
      ...tasks,
      plural: "etcds",
      namespace,
      body: {
        apiVersion: "druid.gardener.cloud/v1alpha1",
        kind: "Etcd",
        metadata: { name: "etcd-local", namespace },
        spec: {
          replicas: 1,
          labels: { app: "etcd-local" },
          etcd: {},
          backup: { store: { provider: "Local", prefix: "etcd-local", container: "bucket" } },
        },
      },
    });
  }, 120_000);

  afterAll(async () => {
    await opstask?.stop();
  });

  it("the controller stays up under its memory limit, Rejects them as too large, and still runs a small task", async () => {
    opstask = await startOpstask(cluster(), { namespaces: [namespace] });

    // Watched: created while the controller runs, four at a time. Most carry the controller's
    // finalizer already (one write each to Reject, not two: the apiserver's time per write of 1.5 MB
    // is what this test waits for); every tenth goes the whole way.
    let next = 1;
    const creator = async () => {
      while (next < count) {
        const index = next++;
        await api.createNamespacedCustomObject({
          ...tasks,
          namespace,
          body: bulkyTask(namespace, `big-${index}`, largest, index % 10 !== 0),
        });
        alive();
      }
    };
    await Promise.all([creator(), creator(), creator(), creator()]);
    await waitFor(`all ${count} tasks to be Rejected`, allRejected, 300_000);
    const watchedPeak = peakRss();

    // Listed: a restarted controller reads them all at once.
    await opstask.stop();
    opstask = await startOpstask(cluster(), { namespaces: [namespace] });

    // Served: a small task runs to its end.
    await api.createNamespacedCustomObject({
      ...tasks,
      namespace,
      body: {
        apiVersion: "druid.gardener.cloud/v1alpha1",
        kind: "EtcdOpsTask",
        metadata: { name: "small", namespace },
        spec: { etcdName: "etcd-local", config: { onDemandSnapshotCompaction: { timeoutSeconds: 600 } } },
      },
    });
    const batch = kc.makeApiClient(BatchV1Api);
    const job = await waitFor(
      "the small task's compaction Job",
      () => batch.readNamespacedJob({ namespace, name: "small-compact" }),
      60_000,
    );
    job.status = succeededJobStatus();
    await batch.replaceNamespacedJobStatus({ namespace, name: "small-compact", body: job });
    await waitFor(
      "the small task to succeed",
      async () => ((await getTask("small")).status?.state === "Succeeded" ? true : undefined),
      60_000,
    );
    const listedPeak = peakRss();
    alive();

    // Every oversized task is still Rejected, with the error that says why and what to do (read whole
    // for a sample: each is 1.5 MB).
    expect(await allRejected()).toBe(true);
    for (let index = 0; index < count; index += Math.ceil(count / 10)) {
      const task = await getTask(`big-${index}`);
      const error = task.status?.lastErrors?.at(-1);
      expect(error?.code, task.metadata.name).toBe("ERR_TASK_TOO_LARGE");
      expect(error?.description).toMatch(
        /the task holds about 1,\d{3} KiB .* limit of 64 KiB \(--max-task-bytes\)/,
      );
    }
    console.log(
      `${count} tasks of ${largest} bytes (${Math.round((count * largest) / 1e6)} MB): controller peak RSS ${Math.round(watchedPeak / 1024)} KiB watching them arrive, ${Math.round(listedPeak / 1024)} KiB after a restart listed them`,
    );
    expect(watchedPeak).toBeLessThan(memoryLimit);
    expect(listedPeak).toBeLessThan(memoryLimit);
  }, 480_000);
});
