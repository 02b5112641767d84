/**
 * The flagship's wiring: `opstask controller` (serveController, as the Deployment runs it) creates an
 * EtcdOpsTask snapshot from a TaskSchedule at the next real minute, the task runs through the real
 * snapshot handler against a backup-restore stand-in, and the schedule records its success. Waits
 * for up to one real minute (the cron's next tick).
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { CustomObjectsApi } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { serveController } from "../../src/cli/controller-command.ts";
import { readControllerOptions } from "../../src/cli/options.ts";
import { createReadyEtcd } from "../../src/devcluster/ready-etcd.ts";
import { scheduledTimeAnnotation, scheduleLabel } from "../../src/schedule/run-names.ts";
import { createTestNamespace, druidCrds, repoRoot, useControlPlane } from "../support/cluster.ts";
import { waitFor } from "../support/wait.ts";

const cluster = useControlPlane({
  crds: [...druidCrds, join(repoRoot, "deploy", "crds", "opstask.gardener.cloud_taskschedules.yaml")],
});
const tasks = { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcdopstasks" };
const schedules = { group: "opstask.gardener.cloud", version: "v1alpha1", plural: "taskschedules" };
const etcdName = "etcd-main";

/** A backup-restore stand-in: every snapshot POST is answered 200 and counted. */
const startSidecar = async () => {
  const seen = { posts: 0 };
  const server: Server = createServer((request, response) => {
    request.resume();
    seen.posts += 1;
    response.writeHead(200, { "content-type": "application/json" }).end("{}");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    seen,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
};

describe("opstask controller runs EtcdOpsTask schedules", () => {
  it("creates the scheduled snapshot at the next minute; it Succeeds and the schedule records it", async () => {
    const kc = cluster().makeKubeConfig();
    const api = kc.makeApiClient(CustomObjectsApi);
    const namespace = await createTestNamespace(kc, "schedule-etcd");
    const sidecar = await startSidecar();
    await createReadyEtcd(kc, { name: etcdName, namespace, backupPort: sidecar.port });
    const stop = new AbortController();
    const served = serveController(
      kc,
      readControllerOptions(
        [
          `--namespace=${namespace}`,
          `--resolve=${etcdName}-client.${namespace}:*:127.0.0.1`,
          "--metrics-address=0",
          "--probe-address=0",
          "--log-level=error",
        ],
        {},
      ),
      stop.signal,
    );
    try {
      await api.createNamespacedCustomObject({
        ...schedules,
        namespace,
        body: {
          apiVersion: "opstask.gardener.cloud/v1alpha1",
          kind: "TaskSchedule",
          metadata: { name: "snapshot-every-minute" },
          spec: {
            taskKind: { apiVersion: "druid.gardener.cloud/v1alpha1", kind: "EtcdOpsTask" },
            taskTemplate: { spec: { etcdName, config: { onDemandSnapshot: { type: "full" } } } },
            schedule: "* * * * *",
          },
        },
      });
      const run = await waitFor(
        "the scheduled snapshot to succeed",
        async () => {
          const list = (await api.listNamespacedCustomObject({
            ...tasks,
            namespace,
            labelSelector: `${scheduleLabel}=snapshot-every-minute`,
          })) as {
            items: Array<{ metadata: { annotations?: Record<string, string> }; status?: { state?: string } }>;
          };
          return list.items.find((item) => item.status?.state === "Succeeded");
        },
        90_000,
        250,
      );
      expect(run.metadata.annotations?.[scheduledTimeAnnotation]).toMatch(/:00Z$/u);
      expect(sidecar.seen.posts).toBe(1);
      const status = await waitFor("the schedule's lastSuccessfulTime", async () => {
        const object = (await api.getNamespacedCustomObject({
          ...schedules,
          namespace,
          name: "snapshot-every-minute",
        })) as { status?: { lastSuccessfulTime?: string; nextRunTime?: string } };
        return object.status?.lastSuccessfulTime === undefined ? undefined : object.status;
      });
      expect(Date.parse(status.nextRunTime ?? "")).toBeGreaterThan(
        Date.parse(status.lastSuccessfulTime ?? ""),
      );
    } finally {
      stop.abort();
      expect(await served).toBe("stopped");
      await sidecar.stop();
    }
  }, 150_000);
});
