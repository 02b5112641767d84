/**
 * examples/schedules/quota/'s ResourceQuota on a real kube-apiserver (issue 35 L4): applied in a
 * namespace, it refuses the TaskSchedule over its count, so the schedules the controller keeps (each
 * within twice --max-task-bytes) are bounded per namespace. No kube-controller-manager runs here: the
 * test plays the quota controller once, writing the quota's first status; from there the apiserver's
 * ResourceQuota admission counts every create itself.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ApiException, CoreV1Api, CustomObjectsApi, type V1ResourceQuota } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { createTestNamespace, druidCrds, repoRoot, useControlPlane } from "../support/cluster.ts";

const cluster = useControlPlane({
  crds: [...druidCrds, join(repoRoot, "deploy", "crds", "opstask.gardener.cloud_taskschedules.yaml")],
});
const quota = parse(
  readFileSync(join(repoRoot, "examples", "schedules", "quota", "taskschedule-quota.yaml"), "utf8"),
) as V1ResourceQuota;
const resource = "count/taskschedules.opstask.gardener.cloud";

describe("the TaskSchedule ResourceQuota example", () => {
  it("admits schedules up to its count and refuses the one over it", async () => {
    const admin = cluster().makeKubeConfig();
    const namespace = await createTestNamespace(admin, "sched-quota");
    const core = admin.makeApiClient(CoreV1Api);
    const created = await core.createNamespacedResourceQuota({ namespace, body: quota });
    const name = created.metadata?.name ?? "";
    await core.replaceNamespacedResourceQuotaStatus({
      namespace,
      name,
      body: { ...created, status: { hard: created.spec?.hard ?? {}, used: { [resource]: "0" } } },
    });
    const count = Number(quota.spec?.hard?.[resource]);
    expect(count).toBeGreaterThan(0);
    const createSchedule = (scheduleName: string) =>
      admin.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
        group: "opstask.gardener.cloud",
        version: "v1alpha1",
        plural: "taskschedules",
        namespace,
        body: {
          apiVersion: "opstask.gardener.cloud/v1alpha1",
          kind: "TaskSchedule",
          metadata: { name: scheduleName },
          spec: {
            taskKind: { apiVersion: "druid.gardener.cloud/v1alpha1", kind: "EtcdOpsTask" },
            taskTemplate: { spec: { etcdName: "etcd-main", config: { onDemandSnapshot: { type: "full" } } } },
            schedule: "0 3 * * *",
          },
        },
      });
    for (let index = 0; index < count; index += 1) await createSchedule(`snap-${index}`);
    const refused = await createSchedule("one-too-many").then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(ApiException);
    const { code, body } = refused as ApiException<unknown>;
    expect(code).toBe(403);
    expect(String(body)).toContain(`exceeded quota: ${name}, requested: ${resource}=1`);
  }, 120_000);
});
