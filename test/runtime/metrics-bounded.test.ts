/**
 * Security finding 3 (issue 16): task metrics cannot grow with what task authors write. Before the
 * fix, 5,000 rejected tasks with 1,000-character Etcd names made one /metrics answer 80 MiB.
 */
import { describe, expect, it } from "vitest";
import { makeControllerMetrics } from "../../src/runtime/metrics.ts";

const longName = (i: number, length: number) => `${String(i).padStart(6, "0")}-${"x".repeat(length - 7)}`;
const series = (text: string, name: string) =>
  text.split("\n").filter((line) => line.startsWith(`opstask_${name}{`));

describe("task metrics stay bounded (finding 3)", () => {
  it("5,000 rejected tasks with long, distinct Etcd names: /metrics stays small", async () => {
    const metrics = makeControllerMetrics();
    for (let i = 0; i < 5_000; i += 1) {
      metrics.observer.taskFinished(
        { type: "onDemandSnapshot", state: "Rejected", etcd: longName(i, 1_000), namespace: "shoot--a--b" },
        0.5,
        `uid-${i}`,
      );
    }
    const text = await metrics.registry.metrics();
    expect(series(text, "tasks_total")).toEqual([
      'opstask_tasks_total{type="onDemandSnapshot",state="Rejected",etcd="",namespace="shoot--a--b"} 5000',
    ]);
    expect(text.length).toBeLessThan(64 * 1024);
  });

  it("every label value is at most 63 characters, distinct values stay distinct", async () => {
    const metrics = makeControllerMetrics();
    for (const i of [1, 2]) {
      metrics.observer.taskFinished(
        { type: "onDemandSnapshot", state: "Succeeded", etcd: longName(i, 253), namespace: "ns" },
        1,
        `uid-${i}`,
      );
    }
    const lines = series(await metrics.registry.metrics(), "tasks_total");
    expect(lines).toHaveLength(2);
    for (const line of lines) {
      const values = [...line.matchAll(/="([^"]*)"/g)].map((match) => match[1] ?? "");
      for (const value of values) expect(value.length).toBeLessThanOrEqual(63);
    }
  });

  it("a series goes once the last task that counted in it is deleted", async () => {
    const metrics = makeControllerMetrics();
    const finish = (uid: string, etcd: string) =>
      metrics.observer.taskFinished(
        { type: "onDemandSnapshot", state: "Succeeded", etcd, namespace: "ns" },
        1,
        uid,
      );
    for (let i = 0; i < 2_000; i += 1) finish(`uid-${i}`, longName(i, 253));
    finish("peer", longName(0, 253));
    const full = await metrics.registry.metrics();
    expect(series(full, "tasks_total")).toHaveLength(2_000);

    for (let i = 0; i < 2_000; i += 1) metrics.observer.taskGone?.(`uid-${i}`);
    const after = await metrics.registry.metrics();
    // The series of etcd 0 stays while its peer task exists; every other one is gone.
    expect(series(after, "tasks_total")).toHaveLength(1);
    expect(series(after, "task_duration_seconds_count")).toHaveLength(1);
    metrics.observer.taskGone?.("peer");
    expect(series(await metrics.registry.metrics(), "tasks_total")).toEqual([]);
  });

  it("the series of a deleted Etcd go with it", async () => {
    const metrics = makeControllerMetrics();
    metrics.observer.taskFinished({ type: "t", state: "Succeeded", etcd: "e1", namespace: "ns" }, 1, "a");
    metrics.observer.taskFinished({ type: "t", state: "Failed", etcd: "e1", namespace: "ns" }, 1, "b");
    metrics.observer.taskFinished({ type: "t", state: "Failed", etcd: "e1", namespace: "other" }, 1, "c");
    metrics.observer.groupGone?.("ns", "e1");
    expect(series(await metrics.registry.metrics(), "tasks_total")).toEqual([
      'opstask_tasks_total{type="t",state="Failed",etcd="e1",namespace="other"} 1',
    ]);
    // Its tasks' later deletion changes nothing.
    metrics.observer.taskGone?.("a");
    expect(series(await metrics.registry.metrics(), "tasks_total")).toHaveLength(1);
  });
});
