/**
 * Issue 28's "done when" on a real kube-apiserver: a snapshot schedule with a one-minute cron, driven
 * by an injected clock (the apiserver, the CRDs and every write are real; only the minutes are
 * simulated), through an outage of the controller. No task controller runs here: the test finishes
 * runs by writing their status, as the task controller would.
 *
 * Checked: no scheduled minute gets two runs, the outage of three hours yields exactly one catch-up
 * run (the most recent minute), recorded as superseding the rest; two controllers started together
 * (a failover's overlap) still create one run per minute; the history limit deletes the oldest
 * succeeded runs.
 */
import { join } from "node:path";
import { CustomObjectsApi, type KubeConfig } from "@kubernetes/client-node";
import { afterEach, describe, expect, it } from "vitest";
import { etcdOpsTaskKind } from "../../src/etcd/api/etcdopstask-kind.ts";
import { runName, scheduledTimeAnnotation } from "../../src/schedule/run-names.ts";
import { runScheduleController, type ScheduleController } from "../../src/schedule/schedule-controller.ts";
import { createTestNamespace, druidCrds, repoRoot, useControlPlane } from "../support/cluster.ts";
import { waitFor } from "../support/wait.ts";

const cluster = useControlPlane({
  crds: [...druidCrds, join(repoRoot, "deploy", "crds", "opstask.gardener.cloud_taskschedules.yaml")],
});
const tasks = { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcdopstasks" };
const schedules = { group: "opstask.gardener.cloud", version: "v1alpha1", plural: "taskschedules" };
const minute = 60_000;

interface Run {
  readonly name: string;
  readonly scheduledTime: string;
  readonly state?: string;
  readonly deleting: boolean;
}

const listRuns = async (kc: KubeConfig, namespace: string): Promise<Run[]> => {
  const list = (await kc
    .makeApiClient(CustomObjectsApi)
    .listNamespacedCustomObject({ ...tasks, namespace })) as {
    items: Array<{
      metadata: { name: string; annotations?: Record<string, string>; deletionTimestamp?: string };
      status?: { state?: string };
    }>;
  };
  return list.items
    .map((item) => ({
      name: item.metadata.name,
      scheduledTime: item.metadata.annotations?.[scheduledTimeAnnotation] ?? "",
      ...(item.status?.state === undefined ? {} : { state: item.status.state }),
      deleting: item.metadata.deletionTimestamp !== undefined,
    }))
    .sort((a, b) => a.scheduledTime.localeCompare(b.scheduledTime));
};

const succeed = async (kc: KubeConfig, namespace: string, name: string, at: number) => {
  const time = new Date(Math.floor(at / 1000) * 1000).toISOString().replace(".000Z", "Z");
  await kc.makeApiClient(CustomObjectsApi).patchNamespacedCustomObjectStatus(
    {
      ...tasks,
      namespace,
      name,
      body: [
        {
          op: "add",
          path: "/status",
          value: { state: "Succeeded", lastTransitionTime: time, startedAt: time },
        },
      ],
    },
    { headers: { "Content-Type": "application/json-patch+json" } } as never,
  );
};

const getSchedule = async (kc: KubeConfig, namespace: string, name: string) =>
  (await kc.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({ ...schedules, namespace, name })) as {
    metadata: { resourceVersion: string };
    status?: { lastScheduleTime?: string; skippedRuns?: Array<{ reason: string; message: string }> };
  };

const running: ScheduleController[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((controller) => controller.stop()));
});

describe("a one-minute snapshot schedule through an outage of the controller", () => {
  it("creates no duplicate, one catch-up run after three hours down, and keeps the history limit", async () => {
    const kc = cluster().makeKubeConfig();
    const namespace = await createTestNamespace(kc, "schedule");
    const objects = kc.makeApiClient(CustomObjectsApi);
    await objects.createNamespacedCustomObject({
      ...schedules,
      namespace,
      body: {
        apiVersion: "opstask.gardener.cloud/v1alpha1",
        kind: "TaskSchedule",
        metadata: { name: "etcd-main-snapshot" },
        spec: {
          taskKind: { apiVersion: "druid.gardener.cloud/v1alpha1", kind: "EtcdOpsTask" },
          taskTemplate: {
            metadata: { labels: { team: "db" } },
            spec: { etcdName: "etcd-main", config: { onDemandSnapshot: { type: "full" } } },
          },
          schedule: "* * * * *",
          successfulRunsHistoryLimit: 2,
        },
      },
    });
    // The injected clock starts at the schedule's creation, on the second it was stored.
    let clock = Date.now();
    const start = (count = 1) =>
      Promise.all(
        Array.from({ length: count }, async () => {
          const controller = await runScheduleController({
            kubeConfig: kc,
            targets: [{ kind: etcdOpsTaskKind }],
            namespace,
            now: () => clock,
            logLevel: "none",
          });
          running.push(controller);
          await controller.synced;
          return controller;
        }),
      );
    const tick = async (controllers: ReadonlyArray<ScheduleController>, ms: number) => {
      clock += ms;
      await Promise.all(controllers.map((controller) => controller.resync()));
    };
    const runsNamed = (names: ReadonlyArray<string>) =>
      waitFor(`runs ${names.join(", ")}`, async () => {
        const runs = await listRuns(kc, namespace);
        const live = runs.filter((run) => !run.deleting).map((run) => run.name);
        return names.every((name) => live.includes(name)) ? runs : undefined;
      });

    // Three minutes with the controller up: one run a minute; each finishes before the next (Forbid).
    let controllers = await start();
    const created: string[] = [];
    for (let i = 0; i < 3; i += 1) {
      await tick(controllers, minute);
      const name = runName("etcd-main-snapshot", Math.floor(clock / minute) * minute);
      await runsNamed([name]);
      created.push(name);
      await succeed(kc, namespace, name, clock);
    }
    // The history limit (2 succeeded) deletes the oldest once a fourth minute passes.
    await tick(controllers, minute);
    const fourth = runName("etcd-main-snapshot", Math.floor(clock / minute) * minute);
    await runsNamed([fourth]);
    await waitFor("the oldest run deleted", async () =>
      (await listRuns(kc, namespace)).some((run) => run.name === created[0]) ? undefined : true,
    );
    await succeed(kc, namespace, fourth, clock);

    // The outage: the controller stops; three hours pass.
    await Promise.all(running.splice(0).map((controller) => controller.stop()));
    clock += 3 * 60 * minute;
    const catchUp = runName("etcd-main-snapshot", Math.floor(clock / minute) * minute);
    // Two controllers come back at once (a failover's overlap) and both decide.
    controllers = await start(2);
    await tick(controllers, 0);
    await runsNamed([catchUp]);
    await tick(controllers, 0);
    // Give both a moment to do anything more they would do; then count.
    await waitFor("the schedule's status to record the catch-up", async () => {
      const status = (await getSchedule(kc, namespace, "etcd-main-snapshot")).status;
      return status?.lastScheduleTime ===
        new Date(Math.floor(clock / minute) * minute).toISOString().replace(".000Z", "Z")
        ? status
        : undefined;
    });
    const runs = await listRuns(kc, namespace);
    const times = runs.map((run) => run.scheduledTime);
    expect(new Set(times).size).toBe(times.length);
    // One catch-up run: nothing between the fourth run and the catch-up.
    expect(runs.filter((run) => run.name > fourth).map((run) => run.name)).toEqual([catchUp]);
    expect(runs.filter((run) => run.name !== catchUp).every((run) => run.state === "Succeeded")).toBe(true);
    // History: 2 succeeded kept (the third and fourth), the first two deleted.
    expect(runs.filter((run) => !run.deleting).map((run) => run.name)).toEqual([created[2], fourth, catchUp]);
    const status = (await getSchedule(kc, namespace, "etcd-main-snapshot")).status;
    expect(status?.skippedRuns?.map((skip) => skip.reason)).toEqual(["Superseded"]);
    // Deciding again with nothing new (same clock, same runs) leaves the schedule as it is.
    const settled = (await getSchedule(kc, namespace, "etcd-main-snapshot")).metadata.resourceVersion;
    await tick(controllers, 0);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect((await getSchedule(kc, namespace, "etcd-main-snapshot")).metadata.resourceVersion).toBe(settled);
    expect(status?.skippedRuns?.[0]?.message).toMatch(/^20 or more scheduled time\(s\)/u);
  });
});
