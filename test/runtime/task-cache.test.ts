/**
 * What the controller's cache keeps of a task (src/runtime/task-cache.ts): what the lifecycle, the
 * decoder and the handlers read, nothing else a task author writes; and a task over the bound only as a
 * stub, which the lifecycle Rejects with ERR_TASK_TOO_LARGE naming its size, the limit and the fix.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { etcdOpsTaskKind } from "../../src/etcd/api/etcdopstask-kind.ts";
import type { KubeObject } from "../../src/kube/object.ts";
import { machineVersion } from "../../src/machine/task-events.ts";
import { lifecycleConfig } from "../../src/reconcile/defaults.ts";
import { observe } from "../../src/reconcile/observe.ts";
import { oversizedOf } from "../../src/reconcile/oversized-task.ts";
import { start } from "../../src/reconcile/pass.ts";
import { machineVersionAnnotation, readTask } from "../../src/reconcile/task-kind.ts";
import { cacheCopy } from "../../src/runtime/cache-object.ts";
import { taskCacheKeep } from "../../src/runtime/task-cache.ts";

const finalizer = etcdOpsTaskKind.finalizer;
const limit = 64 * 1024;

const task = (extra: { spec?: object; metadata?: object; status?: object } = {}): KubeObject => ({
  apiVersion: "druid.gardener.cloud/v1alpha1",
  kind: "EtcdOpsTask",
  metadata: {
    name: "snap",
    namespace: "shoot",
    uid: "u-1",
    resourceVersion: "42",
    generation: 1,
    creationTimestamp: "2026-01-01T00:00:00Z",
    finalizers: [finalizer],
    labels: { team: "db" },
    annotations: {
      [machineVersionAnnotation]: String(machineVersion),
      "kubectl.kubernetes.io/last-applied-configuration": "{}",
      "example.com/note": "hello",
    },
    ownerReferences: [{ apiVersion: "v1", kind: "ConfigMap", name: "c", uid: "x" }],
    managedFields: [{ manager: "kubectl", operation: "Update" }],
    ...extra.metadata,
  },
  spec: {
    etcdName: "etcd-main",
    ttlSecondsAfterFinished: 60,
    config: { onDemandSnapshot: { type: "full" } },
    ...extra.spec,
  },
  ...(extra.status === undefined ? {} : { status: extra.status }),
});

describe("the task cache keeps what the controller reads", () => {
  it("keeps spec, status, identity, finalizers and the lifecycle's annotation; drops labels, other annotations, ownerReferences, managedFields", () => {
    const input = task({ status: { state: "InProgress" } });
    const kept = taskCacheKeep({ maxBytes: limit })(input);
    expect(kept).toEqual({
      apiVersion: input.apiVersion,
      kind: input.kind,
      metadata: {
        name: "snap",
        namespace: "shoot",
        uid: "u-1",
        resourceVersion: "42",
        generation: 1,
        creationTimestamp: "2026-01-01T00:00:00Z",
        finalizers: [finalizer],
        annotations: { [machineVersionAnnotation]: String(machineVersion) },
      },
      spec: input.spec,
      status: { state: "InProgress" },
    });
    expect(oversizedOf(kept)).toBeUndefined();
    expect(readTask(etcdOpsTaskKind, kept)?.task).toBeDefined();
  });

  it("keeps the labels and annotations a kind names", () => {
    const kept = taskCacheKeep({
      maxBytes: limit,
      cachedMetadata: { labels: true, annotations: ["example.com/note"] },
    })(task());
    expect(kept.metadata.labels).toEqual({ team: "db" });
    expect(kept.metadata.annotations).toEqual({
      [machineVersionAnnotation]: String(machineVersion),
      "example.com/note": "hello",
    });
  });

  it("what is dropped never counts: a 250 KB annotation and a 1 MB ownerReference leave the task whole", () => {
    const input = task({
      metadata: {
        annotations: { bulk: "x".repeat(250_000) },
        ownerReferences: [{ apiVersion: "v1", kind: "X", name: "y".repeat(1_000_000), uid: "u" }],
      },
    });
    const kept = taskCacheKeep({ maxBytes: limit })(input);
    expect(oversizedOf(kept)).toBeUndefined();
    expect(JSON.stringify(kept).length).toBeLessThan(1_000);
  });

  it("measures about the JSON size of what it kept, without serialising it", () => {
    const value = fc.letrec((tie) => ({
      json: fc.oneof(
        { depthSize: "small" },
        fc.string({ maxLength: 300 }),
        fc.integer(),
        fc.boolean(),
        fc.constant(null),
        fc.array(tie("json"), { maxLength: 4 }),
        fc.dictionary(fc.string({ minLength: 1, maxLength: 10 }), tie("json"), { maxKeys: 4 }),
      ),
    })).json;
    fc.assert(
      fc.property(value, value, (spec, status) => {
        const copy = cacheCopy({ ...task(), spec, status });
        const json = JSON.stringify(copy.object).length;
        expect(copy.bytes).toBeGreaterThanOrEqual(json * 0.6);
        expect(copy.bytes).toBeLessThanOrEqual(json * 2 + 64);
      }),
    );
  });
});

describe("a task over the bound is kept as a stub and Rejected with ERR_TASK_TOO_LARGE", () => {
  const huge = task({
    spec: { etcdName: "e".repeat(1_400_000) },
    status: { state: "InProgress", startedAt: "2026-01-01T00:00:01Z" },
  });

  it("keeps identity, resourceVersion, finalizers, the lifecycle's annotation, a small status and the size", () => {
    const stub = taskCacheKeep({ maxBytes: limit })(huge);
    expect(stub).toEqual({
      apiVersion: huge.apiVersion,
      kind: huge.kind,
      metadata: {
        name: "snap",
        namespace: "shoot",
        uid: "u-1",
        resourceVersion: "42",
        generation: 1,
        creationTimestamp: "2026-01-01T00:00:00Z",
        finalizers: [finalizer],
        annotations: { [machineVersionAnnotation]: String(machineVersion) },
      },
      status: { state: "InProgress", startedAt: "2026-01-01T00:00:01Z" },
    });
    const mark = oversizedOf(stub);
    expect(mark?.limit).toBe(limit);
    expect(mark?.bytes).toBeGreaterThan(1_400_000);
    expect(mark?.actionable).toBe(true);
    // Kept again (a write's result goes through the keep, then the cache's upsert): still the stub.
    expect(taskCacheKeep({ maxBytes: limit })(stub)).toBe(stub);
  });

  it("a pass on the stub Rejects it with ERR_TASK_TOO_LARGE naming the size, the limit and the fix", () => {
    const stub = taskCacheKeep({ maxBytes: limit })({ ...huge, status: undefined });
    const read = readTask(etcdOpsTaskKind, stub);
    expect(read?.task).toBeUndefined();
    const facts = read?.facts;
    if (facts === undefined) throw new Error("the stub's facts do not read");
    const input = {
      task: observe(facts, ["onDemandSnapshot"]),
      peers: [],
      now: Date.parse("2026-01-01T00:01:00Z"),
      runId: "r1",
      retries: 0,
      config: lifecycleConfig(etcdOpsTaskKind),
    };
    const step = start(input);
    expect(step._tag).toBe("Request");
    const request = step._tag === "Request" ? step.request : undefined;
    expect(request?._tag).toBe("PatchStatus");
    const patch = request?._tag === "PatchStatus" ? request.patch : undefined;
    expect(patch?.state).toBe("Rejected");
    const error = patch?.lastErrors?.at(-1);
    expect(error?.code).toBe("ERR_TASK_TOO_LARGE");
    expect(error?.description).toMatch(
      /task too large, cause: the task holds about 1,3\d\d KiB .* limit of 64 KiB \(--max-task-bytes\): make the task smaller, or raise the limit$/,
    );
    expect(patch?.lastOperation?.description).toBe(
      "Task is too large for the controller; see lastErrors for its size and the limit",
    );
  });

  it("a task whose finalizers alone exceed half the bound is left alone: nothing to build a write from", () => {
    const finalizers = Array.from({ length: 400 }, (_, i) => `example.com/f-${i}-${"x".repeat(200)}`);
    const stub = taskCacheKeep({ maxBytes: limit })(task({ metadata: { finalizers } }));
    expect(oversizedOf(stub)?.actionable).toBe(false);
    expect(stub.metadata.finalizers).toBeUndefined();
    expect(JSON.stringify(stub).length).toBeLessThan(1_000);
    expect(readTask(etcdOpsTaskKind, stub)).toBeUndefined();
  });
});
