/**
 * What the schedule controller's caches keep of a run and of a TaskSchedule (src/schedule/schedule-cache.ts),
 * issue 35 M1: only what the decisions read, each object within its bound.
 */
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../src/kube/object.ts";
import { oversizedOf } from "../../src/reconcile/oversized-task.ts";
import { scheduledTimeAnnotation, scheduleLabel } from "../../src/schedule/run-names.ts";
import { runCacheKeep, scheduleCacheKeep } from "../../src/schedule/schedule-cache.ts";

const maxTaskBytes = 64 * 1024;

const run = (extra: { annotation?: string; image?: string } = {}): KubeObject =>
  ({
    apiVersion: "druid.gardener.cloud/v1alpha1",
    kind: "EtcdOpsTask",
    metadata: {
      name: "snap-29937112",
      namespace: "ns",
      uid: "u1",
      resourceVersion: "7",
      creationTimestamp: "2026-12-02T12:00:01Z",
      labels: { [scheduleLabel]: "snap", team: "db" },
      annotations: {
        [scheduledTimeAnnotation]: "2026-12-02T12:00:00Z",
        ...(extra.annotation === undefined ? {} : { "example.com/bulk": extra.annotation }),
      },
      ownerReferences: [
        { apiVersion: "v1", kind: "ConfigMap", name: "other", uid: "x" },
        {
          apiVersion: "opstask.gardener.cloud/v1alpha1",
          kind: "TaskSchedule",
          name: "snap",
          uid: "s1",
          controller: true,
        },
      ],
    },
    spec: { etcdName: "etcd-main", config: { onDemandSnapshotCompaction: { image: extra.image ?? "" } } },
    status: { state: "Succeeded", lastTransitionTime: "2026-12-02T12:01:00Z" },
  }) as unknown as KubeObject;

describe("the run cache (M1)", () => {
  const keep = runCacheKeep(maxTaskBytes);

  it("keeps the schedule label, the scheduled time, the status, identity and the controlling owner's UID; no spec", () => {
    const kept = keep(run({ annotation: "a".repeat(250_000) }));
    expect(kept.metadata.labels).toEqual({ [scheduleLabel]: "snap" });
    expect(kept.metadata.annotations).toEqual({ [scheduledTimeAnnotation]: "2026-12-02T12:00:00Z" });
    expect(kept.metadata.ownerReferences).toEqual([{ uid: "s1", controller: true }]);
    expect(kept.status).toEqual({ state: "Succeeded", lastTransitionTime: "2026-12-02T12:01:00Z" });
    expect("spec" in kept).toBe(false);
    expect(JSON.stringify(kept).length).toBeLessThan(1_000);
  });

  it("a run over the bound is a stub without the label, which no schedule counts", () => {
    const status = { state: "Failed", message: "m".repeat(2 * maxTaskBytes) };
    const kept = keep({ ...run(), status } as unknown as KubeObject);
    expect(oversizedOf(kept)).toBeDefined();
    expect(kept.metadata.labels).toBeUndefined();
    expect(kept.metadata.ownerReferences).toBeUndefined();
  });
});

describe("the TaskSchedule cache (M1)", () => {
  const keep = scheduleCacheKeep(maxTaskBytes);
  const schedule = (bytes: number): KubeObject =>
    ({
      apiVersion: "opstask.gardener.cloud/v1alpha1",
      kind: "TaskSchedule",
      metadata: {
        name: "snap",
        namespace: "ns",
        uid: "s1",
        resourceVersion: "3",
        creationTimestamp: "2026-12-02T11:00:00Z",
        annotations: { "example.com/bulk": "a".repeat(250_000) },
      },
      spec: { schedule: "* * * * *", taskTemplate: { spec: { image: "i".repeat(bytes) } } },
    }) as unknown as KubeObject;

  it("keeps spec and identity, drops other annotations", () => {
    const kept = keep(schedule(100));
    expect(kept.metadata.annotations).toEqual({});
    expect((kept as unknown as { spec: unknown }).spec).toEqual(schedule(100).spec as unknown);
  });

  it("one over twice --max-task-bytes is a stub marked with its size", () => {
    const kept = keep(schedule(1_250_000));
    expect(oversizedOf(kept)).toMatchObject({ limit: 2 * maxTaskBytes, actionable: true });
    expect("spec" in kept).toBe(false);
  });
});
