// The per-key core's own rules (src/reconcile/core.ts), through the memory interpreter: it drives the
// same core as the cluster runtime, so each rule that saves a pass, a decode or a repeated call on a
// cluster is checked here.
import { describe, expect, it } from "vitest";
import type { EtcdOpsTask } from "../../src/etcd/api/etcdopstask.ts";
import { etcdOpsTaskKind } from "../../src/etcd/api/etcdopstask-kind.ts";
import type { TaskKind } from "../../src/reconcile/task-kind.ts";
import {
  completed,
  namespace,
  simulation,
  taskObject,
  transient,
  transientHttpFailure,
} from "../support/simulation.ts";

const versionOf = (object: unknown): string =>
  String((object as { metadata?: { resourceVersion?: string } }).metadata?.resourceVersion);

describe("an echo of the controller's own write", () => {
  it("runs no pass: a task whose Execute keeps failing takes one pass per backoff, not one per write", () => {
    const { server, controller } = simulation((_, phase) => (phase === "execute" ? transient : completed()));
    server.create(taskObject("t1", { etcd: "e1" }));
    controller.runUntilIdle();
    // AddFinalizer, Admit's status, Execute's failure: three echoes, none of them a pass.
    expect(controller.writes.map((w) => w.effect)).toEqual(["AddFinalizer", "PatchStatus", "PatchStatus"]);
    expect(controller.passes).toHaveLength(1);
    const stored = server.get(namespace, "t1");
    expect(stored.ok && (stored.value.status as { lastErrors?: unknown[] }).lastErrors).toHaveLength(1);
  });

  it("still lets someone else's edit run a pass", () => {
    const { server, controller } = simulation((_, phase) => (phase === "execute" ? transient : completed()));
    server.create(taskObject("t1", { etcd: "e1" }));
    controller.runUntilIdle();
    server.patch(namespace, "t1", { metadata: { labels: { edited: "yes" } } });
    controller.runUntilIdle();
    expect(controller.passes).toHaveLength(2);
    expect(transientHttpFailure.kind).toBe("retry");
  });
});

describe("a task released by the removal of its last finalizer", () => {
  it("gets no pass from the copy the watch has not updated yet: Cleanup runs once, and nothing after it", () => {
    const { server, controller } = simulation(() => completed());
    server.create(taskObject("t1", { etcd: "e1" }));
    controller.runUntilIdle();
    server.delete(namespace, "t1");
    controller.catchUp();
    // Cleanup runs and removes the finalizer: the object is gone, but the watch does not say so yet.
    controller.lagWatch();
    controller.runUntilIdle();
    expect(server.get(namespace, "t1").ok).toBe(false);
    const passes = controller.passes.length;
    controller.resync();
    controller.runUntilIdle();
    expect(controller.passes).toHaveLength(passes);
    controller.catchUp();
    controller.runUntilIdle();
    expect(server.get(namespace, "t1").ok).toBe(false);
    expect(controller.calls.filter((call) => call.phase === "cleanup")).toHaveLength(1);
    expect(controller.writes.filter((w) => w.effect === "RemoveFinalizer")).toHaveLength(1);
  });
});

describe("a settled task (finished, waiting for its TTL)", () => {
  it("costs no machine run when a resync or a restart looks at it; its TTL deletion still comes", () => {
    const { server, controller } = simulation(() => completed());
    server.create(taskObject("t1", { ttl: 60 }));
    controller.runUntilIdle();
    expect(controller.passes).toHaveLength(1);
    controller.resync();
    controller.runUntilIdle();
    controller.crash();
    controller.runUntilIdle();
    expect(controller.passes).toHaveLength(1);
    controller.advanceAndRun(60_000);
    expect(server.get(namespace, "t1").ok).toBe(false);
  });
});

describe("a change's decode", () => {
  it("is the one the pass it wakes uses: each version of a task is decoded once", () => {
    const decoded: string[] = [];
    const kind: TaskKind<EtcdOpsTask> = {
      ...etcdOpsTaskKind,
      decode: (object) => {
        decoded.push(versionOf(object));
        return etcdOpsTaskKind.decode(object);
      },
    };
    const { server, controller } = simulation(
      (_, phase) => (phase === "execute" ? transient : completed()),
      {},
      kind,
    );
    server.create(taskObject("t1", { etcd: "e1" }));
    controller.runUntilIdle();
    server.patch(namespace, "t1", { metadata: { labels: { edited: "yes" } } });
    controller.runUntilIdle();
    expect(controller.passes).toHaveLength(2);
    expect(decoded.length).toBeGreaterThan(0);
    expect(new Set(decoded).size).toBe(decoded.length);
  });
});
