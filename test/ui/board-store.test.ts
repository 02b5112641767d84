/**
 * The task board's memory (src/ui/board-store.ts): what it files where, and its bounds.
 */
import { describe, expect, it } from "vitest";
import { etcdOpsTaskKind } from "../../src/etcd/api/etcdopstask-kind.ts";
import { lifecycleConfig } from "../../src/reconcile/defaults.ts";
import { Answer, answer, type Pass, start } from "../../src/reconcile/pass.ts";
import type { TaskFacts } from "../../src/reconcile/task-kind.ts";
import { BoardStore } from "../../src/ui/board-store.ts";

const config = lifecycleConfig(etcdOpsTaskKind, {});
const now = Date.parse("2026-11-24T12:00:00Z");

const facts = (
  name: string,
  uid: string,
  description = "Task Execution phase is in progress",
): TaskFacts => ({
  metadata: {
    name,
    namespace: "ns",
    uid,
    resourceVersion: "1",
    creationTimestamp: "2026-11-24T11:59:00Z",
    finalizers: [config.finalizer],
  },
  ttlSeconds: 3600,
  group: "etcd-a",
  member: "onDemandSnapshot",
  status: {
    state: "InProgress",
    lastOperation: {
      type: "Execution",
      state: "InProgress",
      description,
      runID: "r0",
      lastUpdateTime: "2026-11-24T11:59:30Z",
    },
  },
});

/** A pass of an InProgress task whose Execute call completes. */
const executedPass = (task: TaskFacts): Pass => {
  const started = start({
    task: {
      namespace: task.metadata.namespace,
      name: task.metadata.name,
      uid: task.metadata.uid,
      createdAt: Date.parse(task.metadata.creationTimestamp),
      finalizers: task.metadata.finalizers ?? [],
      ttlSeconds: task.ttlSeconds,
      status: task.status,
    },
    peers: [],
    now,
    runId: "r1",
    retries: 0,
    config,
  });
  if (started._tag !== "Request" || started.request._tag !== "RunPhase")
    throw new Error(`expected a RunPhase request, got ${started._tag}`);
  return answer(
    started,
    Answer.Returned({ outcome: { kind: "completed", description: "Snapshot created successfully" }, now }),
  ).pass;
};

describe("the task board's store", () => {
  it("files a pass's handler calls, writes and Events under that pass, and counts tasks per state", () => {
    const store = new BoardStore();
    const task = facts("snap", "u1");
    store.observeFacts(task, now);
    store.record("u1", { _tag: "call", call: { phase: "execute", outcome: "running" } }, now);
    expect(store.summary("u1")?.machineState).toBe("execution.calling");
    expect(store.counts()).toEqual({ "execution.calling": 1 });
    store.record("u1", { _tag: "call", call: { phase: "execute", outcome: "completed", ms: 5 } }, now);
    store.record(
      "u1",
      { _tag: "write", write: { write: "PatchStatus", fields: ["state"], result: "ok" } },
      now,
    );
    store.record("u1", { _tag: "event", event: { type: "Normal", reason: "Succeeded", note: "done" } }, now);
    store.passEnded({ key: "ns/snap", uid: "u1", runId: "r1" }, executedPass(task), now);
    const detail = store.detail("ns/snap", () => "why", now);
    expect(detail?.history).toHaveLength(1);
    const pass = detail?.history[0];
    expect(pass?.calls).toEqual([{ phase: "execute", outcome: "completed", ms: 5 }]);
    expect(pass?.writes.map((write) => write.write)).toEqual(["PatchStatus"]);
    expect(pass?.events.map((event) => event.reason)).toEqual(["Succeeded"]);
    expect(pass?.transitions.map((step) => step.event)).toContain("phase.completed");
    expect(store.counts()).toEqual({ [pass?.state ?? "?"]: 1 });
  });

  it("keeps at most maxPasses passes per task and says how many it dropped", () => {
    const store = new BoardStore({ maxPasses: 3 });
    const task = facts("snap", "u1");
    store.observeFacts(task, now);
    for (let i = 0; i < 10; i++)
      store.passEnded({ key: "ns/snap", uid: "u1", runId: `r${i}` }, executedPass(task), now);
    const detail = store.detail("ns/snap", () => "", now);
    expect(detail?.history.map((pass) => pass.runId)).toEqual(["r7", "r8", "r9"]);
    expect(detail?.droppedPasses).toBe(7);
    expect(detail?.passes).toBe(10);
  });

  it("stays within maxBytes (and a quarter more for passes in flight), forgetting what was updated longest ago", () => {
    const maxBytes = 20_000;
    const store = new BoardStore({ maxBytes });
    for (let i = 0; i < 500; i++) {
      const task = facts(`snap-${i}`, `u${i}`, "x".repeat(2_000));
      store.observeFacts(task, now + i);
      store.passEnded({ key: `ns/snap-${i}`, uid: `u${i}`, runId: `r${i}` }, executedPass(task), now + i);
      // Tasks whose handler calls run long: their passes' activity waits in memory until they end.
      store.record(
        `busy-${i}`,
        { _tag: "event", event: { type: "Normal", reason: "Started", note: "y".repeat(400) } },
        now,
      );
      expect(store.bytes).toBeLessThanOrEqual(maxBytes * 1.25);
    }
    expect(store.size).toBeGreaterThan(0);
    expect(store.summary("u499")).toBeDefined();
    expect(store.summary("u0")).toBeUndefined();
  });

  it("cuts long texts to maxText characters", () => {
    const store = new BoardStore({ maxText: 100 });
    store.observeFacts(facts("snap", "u1", "y".repeat(10_000)), now);
    store.record(
      "u1",
      { _tag: "event", event: { type: "Normal", reason: "R", note: "z".repeat(10_000) } },
      now,
    );
    store.passEnded({ key: "ns/snap", uid: "u1", runId: "r1" }, executedPass(facts("snap", "u1")), now);
    const detail = store.detail("ns/snap", () => "", now);
    expect(detail?.status.lastOperation?.description.length).toBeLessThanOrEqual(101);
    expect(detail?.history[0]?.events[0]?.note.length).toBeLessThanOrEqual(101);
  });

  it("leaves a released task out of the counts and ignores later reports of its UID", () => {
    const store = new BoardStore();
    store.observeFacts(facts("snap", "u1"), now);
    const pass = executedPass(facts("snap", "u1"));
    store.passEnded(
      { key: "ns/snap", uid: "u1", runId: "r1" },
      { ...pass, snapshot: { ...pass.snapshot, value: "released" } },
      now,
    );
    expect(store.summary("u1")?.released).toBe(true);
    expect(store.counts()).toEqual({});
    store.observeFacts(facts("snap", "u1"), now + 1);
    expect(store.summary("u1")?.released).toBe(true);
  });
});
