import * as Effect from "effect/Effect";
import { describe, expect, it } from "vitest";
import { Finalizer } from "../../src/etcd/api/etcdopstask.ts";
import type { EventSubject, TaskEvent } from "../../src/interpreters/kubernetes/event-recorder.ts";
import type { KubeObject } from "../../src/kube/object.ts";
import { MaxForeignManagers } from "../../src/runtime/foreign-writer-series.ts";
import {
  foreignWriteNote,
  foreignWrites,
  makeForeignWriterWatch,
  reportForeignWrites,
} from "../../src/runtime/foreign-writers.ts";
import { makeControllerMetrics } from "../../src/runtime/metrics.ts";

const options = { ownManagers: ["opstask"], finalizer: Finalizer };

/** managedFields as the apiserver records a merge/JSON patch (operation Update). */
const statusEntry = (manager: string) => ({
  manager,
  operation: "Update",
  apiVersion: "druid.gardener.cloud/v1alpha1",
  fieldsType: "FieldsV1",
  fieldsV1: { "f:status": { ".": {}, "f:state": {}, "f:lastOperation": { ".": {}, "f:type": {} } } },
  subresource: "status",
});
const finalizerEntry = (manager: string, finalizer: string) => ({
  manager,
  operation: "Update",
  apiVersion: "druid.gardener.cloud/v1alpha1",
  fieldsType: "FieldsV1",
  fieldsV1: { "f:metadata": { "f:finalizers": { ".": {}, [`v:${JSON.stringify(finalizer)}`]: {} } } },
});
const specEntry = (manager: string) => ({
  manager,
  operation: "Update",
  apiVersion: "druid.gardener.cloud/v1alpha1",
  fieldsType: "FieldsV1",
  fieldsV1: { "f:spec": { ".": {}, "f:etcdName": {}, "f:config": {} } },
});

const task = (uid: string, managedFields: unknown[]): KubeObject => ({
  apiVersion: "druid.gardener.cloud/v1alpha1",
  kind: "EtcdOpsTask",
  metadata: {
    name: `task-${uid}`,
    namespace: "shoot",
    uid,
    resourceVersion: "7",
    finalizers: [Finalizer],
    managedFields,
  },
});

describe("foreignWrites", () => {
  it("finds nothing in our own writes, a creator's spec, another finalizer, or a nameless writer", () => {
    const object = task("u-1", [
      specEntry("kubectl-create"),
      finalizerEntry("opstask", Finalizer),
      statusEntry("opstask"),
      finalizerEntry("kubectl-edit", "example.com/keep"),
      statusEntry(""),
      statusEntry("unknown"),
    ]);
    expect(foreignWrites(object, options)).toEqual([]);
    expect(foreignWrites(task("u-2", []), options)).toEqual([]);
    expect(
      foreignWrites(
        { ...task("u-3", []), metadata: { ...task("u-3", []).metadata, managedFields: undefined } },
        options,
      ),
    ).toEqual([]);
  });

  it("finds another manager's status write and another manager owning our finalizer", () => {
    const object = task("u-1", [
      specEntry("kubectl-create"),
      finalizerEntry("etcd-druid", Finalizer),
      statusEntry("etcd-druid"),
    ]);
    const found = foreignWrites(object, options);
    expect(found.map((write) => [write.manager, write.field])).toEqual([
      ["etcd-druid", "finalizer"],
      ["etcd-druid", "status"],
    ]);
    expect(found[0]?.task).toEqual({
      name: "task-u-1",
      namespace: "shoot",
      uid: "u-1",
      resourceVersion: "7",
    });
  });
});

describe("makeForeignWriterWatch", () => {
  it("reports each task, writer and field once, until the task is forgotten", () => {
    const watch = makeForeignWriterWatch(options);
    const druid = task("u-1", [statusEntry("etcd-druid")]);
    watch.inspect(druid);
    watch.inspect(druid);
    expect(watch.drain().map((write) => `${write.task.uid} ${write.manager} ${write.field}`)).toEqual([
      "u-1 etcd-druid status",
    ]);
    expect(watch.drain()).toEqual([]);

    // The same task, now also with druid's finalizer: only what is new is reported.
    watch.inspect(task("u-1", [statusEntry("etcd-druid"), finalizerEntry("etcd-druid", Finalizer)]));
    expect(watch.drain().map((write) => write.field)).toEqual(["finalizer"]);

    watch.inspect(task("u-2", [statusEntry("other-operator")]));
    watch.forget("u-1");
    watch.inspect(druid);
    expect(watch.drain().map((write) => `${write.task.uid} ${write.manager}`)).toEqual([
      "u-2 other-operator",
      "u-1 etcd-druid",
    ]);
  });

  it("stays bounded: beyond maxRemembered the oldest task may be reported again", () => {
    const watch = makeForeignWriterWatch({ ...options, maxRemembered: 2 });
    for (const uid of ["a", "b", "c"]) watch.inspect(task(uid, [statusEntry("etcd-druid")]));
    expect(watch.drain()).toHaveLength(3);
    watch.inspect(task("c", [statusEntry("etcd-druid")]));
    expect(watch.drain()).toHaveLength(0);
    watch.inspect(task("a", [statusEntry("etcd-druid")]));
    expect(watch.drain()).toHaveLength(1);
  });
});

describe("foreignWriteNote", () => {
  const write = (field: "status" | "finalizer") => ({
    field,
    manager: "someone-else",
    task: { name: "t", namespace: "ns", uid: "u", resourceVersion: "1" },
  });

  it("names the task's kind and this controller, and no other controller unless the kind has one", () => {
    const wording = { kind: "Chore", controller: "house.opstask.dev/chores-controller" };
    expect(foreignWriteNote(write("status"), wording)).toBe(
      'field manager "someone-else" wrote this Chore\'s status: another controller acts on it; house.opstask.dev/chores-controller does not fight over it. Keep one controller per Chore.',
    );
    expect(foreignWriteNote(write("finalizer"), wording)).toBe(
      'field manager "someone-else" added the finalizer house.opstask.dev/chores-controller uses: another controller acts on this Chore; house.opstask.dev/chores-controller does not fight over it. Keep one controller per Chore.',
    );
  });

  it("names the other controller and the guide the kind's controller passes (the flagship: etcd-druid)", () => {
    const wording = {
      kind: "EtcdOpsTask",
      controller: "opstask",
      other: { name: "etcd-druid's EtcdOpsTask controller", guide: "deploy/coexistence" },
    };
    expect(foreignWriteNote(write("status"), wording)).toBe(
      "field manager \"someone-else\" wrote this EtcdOpsTask's status: another controller acts on it (etcd-druid's EtcdOpsTask controller?); opstask does not fight over it. Keep one controller per EtcdOpsTask (see deploy/coexistence).",
    );
  });
});

const manager = (i: number) => `attacker-${String(i).padStart(3, "0")}-${"m".repeat(100)}`;
const series = (text: string) =>
  text.split("\n").filter((line) => line.startsWith("opstask_foreign_writes_total{"));

/** Inspects `objects` as the controller does, reports what it drains, and returns the Events recorded. */
const report = async (objects: ReadonlyArray<KubeObject>, metrics = makeControllerMetrics()) => {
  const watch = makeForeignWriterWatch(options);
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

/**
 * Issue 35, M8: a field manager's name is the writer's choice, so foreign writes cannot grow what the
 * controller keeps or says. Before the fix, 300 applies under 300 names gave 300 series of
 * `opstask_foreign_writes_total` (kept after their tasks were gone) and 300 Warning Events on one task.
 */
describe("foreign writers cannot grow the controller's metrics and Events (issue 35, M8)", () => {
  it("300 tasks written by 300 distinct managers: a bounded number of series, gone with the tasks", async () => {
    const tasks = Array.from({ length: 300 }, (_, i) => task(`u-${i}`, [statusEntry(manager(i))]));
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
      Array.from({ length: MaxForeignManagers }, (_, i) => task(`a-${i}`, [statusEntry(`early-${i}`)])),
      metrics,
    );
    for (let i = 0; i < MaxForeignManagers; i += 1) metrics.observer.taskGone?.(`a-${i}`);
    await report([task("b", [statusEntry("etcd-druid")])], metrics);
    expect(series(await metrics.registry.metrics())).toEqual([
      'opstask_foreign_writes_total{manager="etcd-druid",field="status"} 1',
    ]);
  });

  it("one task written by 300 distinct managers: a few Events and increments, each naming a bounded manager", async () => {
    const { events, metrics } = await report([
      task(
        "one",
        Array.from({ length: 300 }, (_, i) => statusEntry(manager(i))),
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
