/**
 * Issue 27 point 7: the per-task series go with their tasks (metric-series.ts), so a scrape after a
 * task's TTL deletion never saw it; `opstask_tasks_finished_total{kind,type,state}` counts it for good.
 */
import { describe, expect, it } from "vitest";
import { makeControllerMetrics } from "../../src/runtime/metrics.ts";

const lines = (text: string, name: string) =>
  text.split("\n").filter((line) => line.startsWith(`opstask_${name}{`));

describe("opstask_tasks_finished_total outlives the tasks it counts", () => {
  it("still counts a task after the task and its per-task series are gone", async () => {
    const metrics = makeControllerMetrics("opstask_", { groupLabel: "house" });
    metrics.observer.taskFinished(
      { kind: "Chore", type: "sweep", state: "Succeeded", etcd: "villa", namespace: "ns" },
      3,
      "uid-a",
    );
    metrics.observer.taskFinished(
      { kind: "Chore", type: "sweep", state: "Failed", etcd: "villa", namespace: "ns" },
      3,
      "uid-b",
    );
    metrics.observer.taskGone?.("uid-a");
    metrics.observer.taskGone?.("uid-b");
    metrics.observer.groupGone?.("ns", "villa");
    const text = await metrics.registry.metrics();
    expect(lines(text, "tasks_total")).toEqual([]);
    expect(lines(text, "tasks_finished_total")).toEqual([
      'opstask_tasks_finished_total{kind="Chore",type="sweep",state="Succeeded"} 1',
      'opstask_tasks_finished_total{kind="Chore",type="sweep",state="Failed"} 1',
    ]);
  });

  it("has one series per kind, type and state, whatever the tasks' groups, namespaces and names", async () => {
    const metrics = makeControllerMetrics();
    for (let i = 0; i < 1_000; i += 1)
      metrics.observer.taskFinished(
        {
          kind: "EtcdOpsTask",
          type: "onDemandSnapshot",
          state: "Rejected",
          etcd: `etcd-${i}`,
          namespace: `ns-${i}`,
        },
        1,
        `uid-${i}`,
      );
    expect(lines(await metrics.registry.metrics(), "tasks_finished_total")).toEqual([
      'opstask_tasks_finished_total{kind="EtcdOpsTask",type="onDemandSnapshot",state="Rejected"} 1000',
    ]);
  });
});
