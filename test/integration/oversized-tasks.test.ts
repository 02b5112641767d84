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
 *
 * The schedule controller's caches and the history read are in it too (issue 35 M1, M2): every task
 * carries the schedule label (any author may set it), so the schedules' run cache sees them all; half
 * as many TaskSchedules of the apiserver's largest size as make the heap are there, each answered with
 * `Ready` False `TooLarge`; and a forged history ConfigMap of 1 MiB (thousands of entries) is skipped
 * with a warning at takeover, exports no series, and is replaced by the controller's next write.
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { BatchV1Api, CoreV1Api, CustomObjectsApi, type KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { historyConfigMapName, historyLabel } from "../../src/history/history-store.ts";
import { scheduleLabel } from "../../src/schedule/run-names.ts";
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

const schedules = { group: "opstask.gardener.cloud", version: "v1alpha1", plural: "taskschedules" } as const;
const historyName = historyConfigMapName({ plural: "etcdopstasks" });

/** A task of `bulkyTask`'s making that also names a schedule, as any task author may label one. */
const labelledTask = (namespace: string, name: string, bytes: number, claimed: boolean) => {
  const task = bulkyTask(namespace, name, bytes, claimed);
  return {
    ...task,
    metadata: { ...task.metadata, labels: { ...task.metadata.labels, [scheduleLabel]: "snap" } },
  };
};

/** A suspended TaskSchedule of about `bytes` of JSON, its bulk in the template's spec. */
const bulkySchedule = (namespace: string, name: string, bytes: number) => ({
  apiVersion: "opstask.gardener.cloud/v1alpha1",
  kind: "TaskSchedule",
  metadata: { name, namespace },
  spec: {
    taskKind: { apiVersion: "druid.gardener.cloud/v1alpha1", kind: "EtcdOpsTask" },
    taskTemplate: {
      spec: { etcdName: "etcd-local", config: { onDemandSnapshotCompaction: { image: "i".repeat(bytes) } } },
    },
    schedule: "* * * * *",
    suspend: true,
  },
});

/** A history ConfigMap as a forger could leave it: ~1 MiB of entries, which the controller never writes. */
const forgedHistory = (namespace: string) => {
  const entries: unknown[] = [];
  let bytes = 0;
  for (let i = 0; bytes < 1_000_000; i++) {
    const entry = {
      target: `etcd-${i}`,
      type: "onDemandSnapshot",
      lastOutcome: { state: "Succeeded", time: "2026-11-01T00:00:00.000Z", durationSeconds: 1 },
      lastSuccessTime: "2026-11-01T00:00:00.000Z",
    };
    bytes += JSON.stringify(entry).length + 2;
    entries.push(entry);
  }
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: historyName, namespace, labels: { [historyLabel]: "etcdopstasks" } },
    data: { "entries.json": JSON.stringify(entries) },
  };
};

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
  /** TaskSchedules of about the largest size, as many as make one and a half heaps. */
  let scheduleCount = 0;

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

  /** The schedule's Ready condition once it is TooLarge (read whole: one is ~1.5 MB). */
  const tooLarge = async (name: string) => {
    const schedule = (await api.getNamespacedCustomObject({ ...schedules, namespace, name })) as {
      status?: { conditions?: Array<{ type: string; status: string; reason: string; message: string }> };
    };
    const ready = schedule.status?.conditions?.find((condition) => condition.type === "Ready");
    return ready?.reason === "TooLarge" ? ready : undefined;
  };
  const sampledSchedules = () =>
    [...Array.from({ length: 5 }, (_, i) => Math.floor((i * scheduleCount) / 5)), scheduleCount - 1].map(
      (index) => `sched-${index}`,
    );

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
    scheduleCount = Math.ceil((1.5 * heap) / largest);
    await kc
      .makeApiClient(CoreV1Api)
      .createNamespacedConfigMap({ namespace, body: forgedHistory(namespace) });
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

  /** The controller's warnings that it skipped the forged history ConfigMap (one per takeover). */
  const skipped: string[] = [];
  const noteSkipped = (line: string) => {
    if (line.includes("history ConfigMap is larger than this controller writes")) skipped.push(line);
  };

  it("the controller stays up under its memory limit, Rejects them as too large, and still runs a small task", async () => {
    opstask = await startOpstask(cluster(), { namespaces: [namespace], onLine: noteSkipped });

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
          // Below the largest by room for the schedule label.
          body: labelledTask(namespace, `big-${index}`, largest - 1_024, index % 10 !== 0),
        });
        alive();
      }
    };
    let nextSchedule = 0;
    const scheduleCreator = async () => {
      while (nextSchedule < scheduleCount) {
        const index = nextSchedule++;
        await api.createNamespacedCustomObject({
          ...schedules,
          namespace,
          body: bulkySchedule(namespace, `sched-${index}`, largest - 4_096),
        });
        alive();
      }
    };
    await Promise.all([creator(), creator(), creator(), scheduleCreator()]);
    await waitFor(`all ${count} tasks to be Rejected`, allRejected, 300_000);
    for (const name of sampledSchedules())
      await waitFor(`${name} to be TooLarge`, () => tooLarge(name), 300_000);
    const watchedPeak = peakRss();

    // Listed: a restarted controller reads them all at once.
    await opstask.stop();
    opstask = await startOpstask(cluster(), { namespaces: [namespace], onLine: noteSkipped });

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

    // A sample of the schedules says why and what to do.
    for (const name of sampledSchedules()) {
      const ready = await waitFor(`${name} to be TooLarge`, () => tooLarge(name), 60_000);
      expect(ready.status).toBe("False");
      expect(ready.message).toMatch(/the TaskSchedule holds about 1,\d{3} KiB .* limit of 128 KiB/);
    }

    // The forged history: skipped with a warning at both takeovers, no series, replaced by the write
    // of the small task's outcome.
    expect(skipped).toHaveLength(2);
    const metrics = await (await fetch(opstask.metricsUrl)).text();
    const series = metrics
      .split("\n")
      .filter((line) => line.startsWith("opstask_task_last_success_timestamp_seconds{"));
    expect(series.map((line) => line.replace(/.*target="([^"]*)".*/, "$1"))).toEqual(["etcd-local"]);
    const history = await waitFor(
      "the history write to replace the forged ConfigMap",
      async () => {
        const configMap = await kc
          .makeApiClient(CoreV1Api)
          .readNamespacedConfigMap({ namespace, name: historyName });
        const text = configMap.data?.["entries.json"] ?? "";
        return text.length < 10_000 ? text : undefined;
      },
      60_000,
    );
    expect(JSON.parse(history).map((entry: { target: string }) => entry.target)).toEqual(["etcd-local"]);
  }, 900_000);
});
