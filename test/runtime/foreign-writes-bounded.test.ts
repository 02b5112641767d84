/**
 * Issue 35, M8: a field manager's name is the writer's choice, so foreign writes cannot grow what the
 * controller keeps or says. Before the fix, 300 applies under 300 names gave 300 series of
 * `opstask_foreign_writes_total` (kept after their tasks were gone) and 300 Warning Events on one task.
 */
import * as Effect from "effect/Effect";
import { describe, expect, it } from "vitest";
import { Finalizer } from "../../src/etcd/api/etcdopstask.ts";
import type { EventSubject, TaskEvent } from "../../src/interpreters/kubernetes/event-recorder.ts";
import type { KubeObject } from "../../src/kube/object.ts";
import { MaxForeignManagers } from "../../src/runtime/foreign-writer-series.ts";
import { makeForeignWriterWatch, reportForeignWrites } from "../../src/runtime/foreign-writers.ts";
import { makeControllerMetrics } from "../../src/runtime/metrics.ts";

const statusEntry = (manager: string) => ({
  manager,
  operation: "Apply",
  apiVersion: "druid.gardener.cloud/v1alpha1",
  fieldsType: "FieldsV1",
  fieldsV1: { "f:status": { "f:state": {} } },
  subresource: "status",
});
const task = (uid: string, managers: ReadonlyArray<string>): KubeObject => ({
  apiVersion: "druid.gardener.cloud/v1alpha1",
  kind: "EtcdOpsTask",
  metadata: {
    name: `task-${uid}`,
    namespace: "shoot",
    uid,
    resourceVersion: "7",
    finalizers: [Finalizer],
    managedFields: managers.map(statusEntry),
  },
});
const manager = (i: number) => `attacker-${String(i).padStart(3, "0")}-${"m".repeat(100)}`;
const series = (text: string) =>
  text.split("\n").filter((line) => line.startsWith("opstask_foreign_writes_total{"));

/** Inspects `objects` as the controller does, reports what it drains, and returns the Events recorded. */
const report = async (objects: ReadonlyArray<KubeObject>, metrics = makeControllerMetrics()) => {
  const watch = makeForeignWriterWatch({ ownManagers: ["opstask"], finalizer: Finalizer });
  const events: Array<{ subject: EventSubject; event: TaskEvent }> = [];
  const recorder = {
    record: (subject: EventSubject, event: TaskEvent) =>
      Effect.sync(() => void events.push({ subject, event })),
  };
  for (const object of objects) watch.inspect(object);
  await Effect.runPromise(
    reportForeignWrites(watch.drain(), recorder, metrics.observer, {
      kind: "EtcdOpsTask",
      controller: "opstask",
    }),
  );
  return { events, metrics };
};

describe("foreign writers cannot grow the controller's metrics and Events (issue 35, M8)", () => {
  it("300 tasks written by 300 distinct managers: a bounded number of series, gone with the tasks", async () => {
    const tasks = Array.from({ length: 300 }, (_, i) => task(`u-${i}`, [manager(i)]));
    const { metrics, events } = await report(tasks);
    const lines = series(await metrics.registry.metrics());
    expect(lines).toHaveLength(MaxForeignManagers + 1);
    expect(lines.filter((line) => line.includes('manager="other"'))).toEqual([
      `opstask_foreign_writes_total{manager="other",field="status"} ${300 - MaxForeignManagers}`,
    ]);
    for (const line of lines)
      for (const [, value] of line.matchAll(/="([^"]*)"/g)) expect(value?.length).toBeLessThanOrEqual(63);
    expect(events).toHaveLength(300);
    for (let i = 0; i < 300; i += 1) metrics.observer.taskGone?.(`u-${i}`);
    expect(series(await metrics.registry.metrics())).toEqual([]);
  });

  it("a freed slot goes to the next writer: a series per manager again once the earlier tasks are gone", async () => {
    const metrics = makeControllerMetrics();
    await report(
      Array.from({ length: MaxForeignManagers }, (_, i) => task(`a-${i}`, [`early-${i}`])),
      metrics,
    );
    for (let i = 0; i < MaxForeignManagers; i += 1) metrics.observer.taskGone?.(`a-${i}`);
    await report([task("b", ["etcd-druid"])], metrics);
    expect(series(await metrics.registry.metrics())).toEqual([
      'opstask_foreign_writes_total{manager="etcd-druid",field="status"} 1',
    ]);
  });

  it("one task written by 300 distinct managers: a few Events and increments, each naming a bounded manager", async () => {
    const { events, metrics } = await report([
      task(
        "one",
        Array.from({ length: 300 }, (_, i) => manager(i)),
      ),
    ]);
    expect(events).toHaveLength(3);
    for (const { event } of events) {
      expect(event.reason).toBe("ForeignWriter");
      expect(event.note.length).toBeLessThan(400);
    }
    const lines = series(await metrics.registry.metrics());
    expect(lines.reduce((sum, line) => sum + Number(line.split(" ").at(-1)), 0)).toBe(3);
  });
});
