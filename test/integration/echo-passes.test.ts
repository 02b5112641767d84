/**
 * The controller's own writes come back as watch events (design-traps 5). On a real apiserver the
 * event of a write often arrives before the write's response, so the informer cannot always know it
 * as ours; the scheduler then sees that the object is where the task's last pass left it and skips
 * the pass. A happy task costs one pass: no pass decodes an echo and decides nothing.
 */
import { CustomObjectsApi } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { createTestNamespace, druidCrds, useControlPlane } from "../support/cluster.ts";
import { scriptedHandlers, startController } from "../support/controller.ts";
import { waitFor } from "../support/wait.ts";

const cluster = useControlPlane({ crds: druidCrds });
const group = { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcdopstasks" };

describe("echoes of the controller's own writes", () => {
  it("cause no passes: each task to Succeeded is one pass (3 writes)", async () => {
    const kc = cluster().makeKubeConfig();
    const api = kc.makeApiClient(CustomObjectsApi);
    const namespace = await createTestNamespace(kc, "echoes");
    const controller = await startController(kc, scriptedHandlers().registry, {}, namespace);
    const tasks = 20;
    try {
      for (let i = 0; i < tasks; i += 1)
        await api.createNamespacedCustomObject({
          ...group,
          namespace,
          body: {
            apiVersion: "druid.gardener.cloud/v1alpha1",
            kind: "EtcdOpsTask",
            metadata: { name: `t${i}`, namespace },
            spec: {
              etcdName: `e${i}`,
              ttlSecondsAfterFinished: 3600,
              config: { onDemandSnapshot: { type: "full" } },
            },
          },
        });
      await waitFor(
        "every task Succeeded",
        async () => {
          const list = (await api.listNamespacedCustomObject({ ...group, namespace })) as {
            items: Array<{ status?: { state?: string } }>;
          };
          return list.items.filter((task) => task.status?.state === "Succeeded").length === tasks
            ? true
            : undefined;
        },
        60_000,
      );
      // Every write's event has come back once the queue is idle and the writes are all counted.
      await waitFor("the controller to be idle", () => {
        const queue = controller.handle.queue();
        return queue.depth === 0 && queue.inFlight === 0 && controller.handle.stats().inFlightCalls === 0
          ? true
          : undefined;
      });
      const stats = controller.handle.stats();
      expect(stats.writes).toEqual({ AddFinalizer: tasks, PatchStatus: 2 * tasks });
      expect(stats.passes).toBe(tasks);
    } finally {
      await controller.stop();
    }
  });
});
