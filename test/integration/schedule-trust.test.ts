/**
 * Issue 35 on a real kube-apiserver: a schedule trusts only runs the controller can have made, and
 * decides nothing before its run cache holds its first LIST. The schedule controller runs with an
 * injected clock (the apiserver, the CRDs and every write are real); no task controller runs.
 *
 * - M4: a task author who may not edit the TaskSchedule creates a task with its label, a controlling
 *   owner reference to its UID and `scheduled-time: 2099-01-01T00:00:00Z`; the schedule still creates
 *   its run for the minute that is due.
 * - L3: with a run active (Forbid) and the run LIST slowed down by a proxy, a restarted controller
 *   waits for that run rather than creating another on the empty cache it would have had.
 */

import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { CustomObjectsApi, KubeConfig } from "@kubernetes/client-node";
import { afterEach, describe, expect, it } from "vitest";
import { etcdOpsTaskKind } from "../../src/etcd/api/etcdopstask-kind.ts";
import { rfc3339, runName, scheduledTimeAnnotation, scheduleLabel } from "../../src/schedule/run-names.ts";
import { runScheduleController, type ScheduleController } from "../../src/schedule/schedule-controller.ts";
import { forwardToApiserver } from "../support/apiserver-forward.ts";
import { createTestNamespace, druidCrds, repoRoot, useControlPlane } from "../support/cluster.ts";
import { waitFor } from "../support/wait.ts";

const cluster = useControlPlane({
  crds: [...druidCrds, join(repoRoot, "deploy", "crds", "opstask.gardener.cloud_taskschedules.yaml")],
});
const tasks = { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcdopstasks" };
const schedules = { group: "opstask.gardener.cloud", version: "v1alpha1", plural: "taskschedules" };
const minute = 60_000;
const scheduleName = "etcd-main-snapshot";

const running: Array<{ readonly stop: () => Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((one) => one.stop()));
});

/**
 * A plain-HTTP proxy to the apiserver on 127.0.0.1 that holds every LIST of tasks for `holdMs` before
 * forwarding it (a slow LIST); everything else passes at once.
 */
const slowTaskListProxy = async (holdMs: number) => {
  const plane = cluster();
  const target = new URL(plane.server);
  const timers = new Set<NodeJS.Timeout>();
  const server = createServer((incoming, outgoing) => {
    const url = new URL(incoming.url ?? "/", "http://proxy");
    const slow = url.pathname.endsWith(`/${tasks.plural}`) && url.searchParams.get("watch") !== "true";
    const forward = () =>
      forwardToApiserver(target, plane.caPem, incoming, outgoing, (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      });
    if (!slow) return forward();
    incoming.pause();
    const timer = setTimeout(() => {
      timers.delete(timer);
      forward();
      incoming.resume();
    }, holdMs);
    timers.add(timer);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const kc = new KubeConfig();
  kc.loadFromOptions({
    // client-node takes plain HTTP (the proxy on 127.0.0.1) only with skipTLSVerify.
    clusters: [{ name: "proxy", server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: "admin", token: plane.token }],
    contexts: [{ name: "proxy", cluster: "proxy", user: "admin" }],
    currentContext: "proxy",
  });
  const proxy = {
    kc,
    stop: () =>
      new Promise<void>((resolve) => {
        for (const timer of timers) clearTimeout(timer);
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  running.push(proxy);
  return proxy;
};

const createSchedule = async (kc: KubeConfig, namespace: string) =>
  (await kc.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
    ...schedules,
    namespace,
    body: {
      apiVersion: "opstask.gardener.cloud/v1alpha1",
      kind: "TaskSchedule",
      metadata: { name: scheduleName },
      spec: {
        taskKind: { apiVersion: "druid.gardener.cloud/v1alpha1", kind: "EtcdOpsTask" },
        taskTemplate: { spec: { etcdName: "etcd-main", config: { onDemandSnapshot: { type: "full" } } } },
        schedule: "* * * * *",
      },
    },
  })) as { metadata: { uid: string; creationTimestamp: string } };

const runNames = async (kc: KubeConfig, namespace: string) => {
  const list = (await kc
    .makeApiClient(CustomObjectsApi)
    .listNamespacedCustomObject({ ...tasks, namespace })) as { items: Array<{ metadata: { name: string } }> };
  return list.items.map((item) => item.metadata.name).sort();
};

const scheduleStatus = async (kc: KubeConfig, namespace: string) => {
  const schedule = (await kc
    .makeApiClient(CustomObjectsApi)
    .getNamespacedCustomObject({ ...schedules, namespace, name: scheduleName })) as {
    status?: { lastScheduleTime?: string; nextRunTime?: string };
  };
  return schedule.status?.lastScheduleTime === undefined ? undefined : schedule.status;
};

const readyOf = async (kc: KubeConfig, namespace: string) => {
  const schedule = (await kc
    .makeApiClient(CustomObjectsApi)
    .getNamespacedCustomObject({ ...schedules, namespace, name: scheduleName })) as {
    status?: { conditions?: Array<{ type: string; reason: string; message: string }> };
  };
  return schedule.status?.conditions?.find((condition) => condition.type === "Ready");
};

const start = async (kc: KubeConfig, namespace: string, now: () => number): Promise<ScheduleController> => {
  const controller = await runScheduleController({
    kubeConfig: kc,
    targets: [{ kind: etcdOpsTaskKind }],
    namespace,
    now,
    logLevel: "none",
  });
  running.push(controller);
  await controller.synced;
  return controller;
};

describe("a schedule trusts only runs the controller can have made (issue 35 M4)", () => {
  it("a forged run for 2099 neither silences the schedule nor counts as its run", async () => {
    const kc = cluster().makeKubeConfig();
    const namespace = await createTestNamespace(kc, "sched-trust");
    const schedule = await createSchedule(kc, namespace);
    // What a task author may create: the schedule's label, a controlling owner reference to its UID,
    // and a scheduled time far ahead.
    await kc.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
      ...tasks,
      namespace,
      body: {
        apiVersion: "druid.gardener.cloud/v1alpha1",
        kind: "EtcdOpsTask",
        metadata: {
          name: "silencer",
          labels: { [scheduleLabel]: scheduleName },
          annotations: { [scheduledTimeAnnotation]: "2099-01-01T00:00:00Z" },
          ownerReferences: [
            {
              apiVersion: "opstask.gardener.cloud/v1alpha1",
              kind: "TaskSchedule",
              name: scheduleName,
              uid: schedule.metadata.uid,
              controller: true,
            },
          ],
        },
        spec: { etcdName: "etcd-main", config: { onDemandSnapshot: { type: "full" } } },
      },
    });
    const due = Math.floor(Date.parse(schedule.metadata.creationTimestamp) / minute) * minute + minute;
    const clock = due + 5_000;
    await start(kc, namespace, () => clock);
    const expected = runName(scheduleName, due);
    await waitFor(`the run ${expected}`, async () =>
      (await runNames(kc, namespace)).includes(expected) ? true : undefined,
    );
    // The schedule's clock is its own: the due minute is its last, the next minute its next.
    const status = await waitFor("the schedule's status", () => scheduleStatus(kc, namespace));
    expect(status.lastScheduleTime).toBe(rfc3339(due));
    expect(status.nextRunTime).toBe(rfc3339(due + minute));
    expect(await runNames(kc, namespace)).toEqual([expected, "silencer"].sort());
  });
});

describe("a schedule decides nothing before its run cache is filled (issue 35 L3)", () => {
  it("a restarted controller behind a slow run LIST waits for the active run (Forbid), creating none", async () => {
    const kc = cluster().makeKubeConfig();
    const namespace = await createTestNamespace(kc, "sched-sync");
    const schedule = await createSchedule(kc, namespace);
    const first = Math.floor(Date.parse(schedule.metadata.creationTimestamp) / minute) * minute + minute;
    let clock = first + 5_000;
    const controller = await start(kc, namespace, () => clock);
    const firstRun = runName(scheduleName, first);
    await waitFor(`the run ${firstRun}`, async () =>
      (await runNames(kc, namespace)).includes(firstRun) ? true : undefined,
    );
    await controller.stop();

    // A minute later the first run is still active; the next controller's run LIST is slow.
    clock += minute;
    const proxy = await slowTaskListProxy(3_000);
    await start(proxy.kc, namespace, () => clock);
    const ready = await waitFor("the schedule to wait for the active run", async () => {
      const condition = await readyOf(kc, namespace);
      return condition?.reason === "WaitingForActiveRun" ? condition : undefined;
    });
    expect(ready.message).toContain(firstRun);
    expect(await runNames(kc, namespace)).toEqual([firstRun]);
    expect(rfc3339(first + minute)).toBe(ready.message.match(/the run for (\S+) waits/)?.[1]);
  });
});
