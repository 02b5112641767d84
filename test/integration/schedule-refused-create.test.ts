/**
 * Issue 41 on a real kube-apiserver: a schedule whose run the apiserver refuses (here RBAC: the
 * controller's ServiceAccount may not create tasks) retries the create with backoff, as the task
 * controller's writes do, not once per status round trip. The attempts are counted for a few seconds
 * of wall time: with backoff (10 ms doubled, capped at 15 s) they are about ten; without, hundreds.
 */
import { join } from "node:path";
import { CustomObjectsApi, RbacAuthorizationV1Api } from "@kubernetes/client-node";
import { afterEach, describe, expect, it } from "vitest";
import { etcdOpsTaskKind } from "../../src/etcd/api/etcdopstask-kind.ts";
import { RequestCounter } from "../../src/kube/request-metrics.ts";
import { runScheduleController, type ScheduleController } from "../../src/schedule/schedule-controller.ts";
import { createTestNamespace, druidCrds, repoRoot, useControlPlane } from "../support/cluster.ts";
import { waitFor } from "../support/wait.ts";

const cluster = useControlPlane({
  crds: [...druidCrds, join(repoRoot, "deploy", "crds", "opstask.gardener.cloud_taskschedules.yaml")],
});
const minute = 60_000;

const running: ScheduleController[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((controller) => controller.stop()));
});

describe("a refused create backs off (issue 41)", () => {
  it("a schedule whose run is refused retries the create a few times in seconds, not hundreds", async () => {
    const plane = cluster();
    const admin = plane.makeKubeConfig();
    const namespace = await createTestNamespace(admin, "sched-refused");
    // Everything the schedule controller needs but `create` on the tasks.
    const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({
      namespace,
      body: {
        metadata: { name: "scheduler" },
        rules: [
          {
            apiGroups: ["opstask.gardener.cloud"],
            resources: ["taskschedules", "taskschedules/status"],
            verbs: ["get", "list", "watch", "patch"],
          },
          {
            apiGroups: ["druid.gardener.cloud"],
            resources: ["etcdopstasks"],
            verbs: ["get", "list", "watch"],
          },
          { apiGroups: ["", "events.k8s.io"], resources: ["events"], verbs: ["create", "patch"] },
        ],
      },
    });
    const token = await plane.serviceAccountToken(namespace, "scheduler");
    await rbac.createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name: "scheduler" },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "scheduler" },
        subjects: [{ kind: "ServiceAccount", name: "scheduler", namespace }],
      },
    });
    const schedule = (await admin.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
      group: "opstask.gardener.cloud",
      version: "v1alpha1",
      plural: "taskschedules",
      namespace,
      body: {
        apiVersion: "opstask.gardener.cloud/v1alpha1",
        kind: "TaskSchedule",
        metadata: { name: "refused" },
        spec: {
          taskKind: { apiVersion: "druid.gardener.cloud/v1alpha1", kind: "EtcdOpsTask" },
          taskTemplate: { spec: { etcdName: "etcd-main", config: { onDemandSnapshot: { type: "full" } } } },
          schedule: "* * * * *",
        },
      },
    })) as { metadata: { creationTimestamp: string } };
    const due = Math.floor(Date.parse(schedule.metadata.creationTimestamp) / minute) * minute + minute;
    const counter = new RequestCounter();
    const controller = await runScheduleController({
      kubeConfig: plane.kubeConfigForToken(token),
      targets: [{ kind: etcdOpsTaskKind }],
      namespace,
      now: () => due + 5_000,
      counter,
      logLevel: "none",
    });
    running.push(controller);
    await controller.synced;
    await waitFor("the first refused create", () => (counter.count("create", 403) > 0 ? true : undefined));
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    const refused = counter.count("create", 403);
    console.log(`${refused} refused creates in the 4 s after the first`);
    expect(refused).toBeGreaterThan(1);
    expect(refused).toBeLessThan(20);
  });
});
