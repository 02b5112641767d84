/**
 * The lifecycle against the contract (docs/contract.md; § numbers are its sections), one rule per test, run in
 * the memory interpreter with scripted handlers.
 */
import { describe, expect, it } from "vitest";
import type { TaskStatus } from "../../src/api/status.ts";
import type { Behaviour } from "../../src/interpreters/memory/controller.ts";
import type { JsonObject } from "../../src/interpreters/memory/merge-patch.ts";
import type { Phase } from "../../src/machine/types.ts";
import {
  completed,
  namespace,
  type Script,
  simulation,
  taskObject,
  transient,
} from "../support/simulation.ts";

const doneText: Record<Phase, string> = {
  admit: "Admit check passed",
  execute: "Snapshot created successfully",
  cleanup: "Cleanup completed",
};

/** Per-phase behaviour lists; a phase with nothing left completes. */
const scripted = (plan: Partial<Record<Phase, ReadonlyArray<Behaviour>>>): Script => {
  const queues = {
    admit: [...(plan.admit ?? [])],
    execute: [...(plan.execute ?? [])],
    cleanup: [...(plan.cleanup ?? [])],
  };
  return (_task, phase) => queues[phase].shift() ?? completed(doneText[phase]);
};

const statusOf = (server: ReturnType<typeof simulation>["server"], name: string): TaskStatus => {
  const stored = server.get(namespace, name);
  return stored.ok ? ((stored.value.status ?? {}) as TaskStatus) : {};
};
const metaOf = (server: ReturnType<typeof simulation>["server"], name: string): JsonObject | undefined => {
  const stored = server.get(namespace, name);
  return stored.ok ? (stored.value.metadata as JsonObject) : undefined;
};

describe("§5 the happy path", () => {
  it("writes finalizer, InProgress, Succeeded, DELETE, finalizer removal — 5 writes, one runID per pass", () => {
    const { server, controller } = simulation(scripted({}));
    server.create(taskObject("t", { etcd: "e1", ttl: 10 }));
    controller.runUntilIdle();
    const writes = server.events
      .filter((e) => e.type === "MODIFIED")
      .map((e) => e.object.status as TaskStatus | undefined);
    const inProgress = writes.find((s) => s?.state === "InProgress");
    expect(inProgress?.startedAt).toBe(inProgress?.lastTransitionTime);
    expect(inProgress?.lastOperation).toMatchObject({
      type: "Execution",
      state: "InProgress",
      description: "Task Execution phase is in progress",
    });
    const done = statusOf(server, "t");
    expect(done.state).toBe("Succeeded");
    expect(done.lastOperation).toMatchObject({
      type: "Execution",
      state: "Completed",
      description: "Snapshot created successfully",
    });
    expect(done.lastOperation?.runID).toBe(inProgress?.lastOperation?.runID);
    controller.advanceAndRun(10_000);
    expect(server.get(namespace, "t").ok).toBe(false);
    expect(controller.writes.map((w) => w.effect)).toEqual([
      "AddFinalizer",
      "PatchStatus",
      "PatchStatus",
      "DeleteTask",
      "RemoveFinalizer",
    ]);
    expect(controller.events.map((e) => e.reason)).toEqual(["Started", "Succeeded", "Expired"]);
  });

  it("writes nothing when a settled task is reconciled again", () => {
    const { server, controller } = simulation(scripted({}));
    server.create(taskObject("t", { etcd: "e1" }));
    controller.runUntilIdle();
    const before = controller.writes.length;
    server.patch(namespace, "t", { metadata: { labels: { touched: "yes" } } });
    controller.runUntilIdle();
    expect(controller.writes.length).toBe(before);
  });
});

describe("§8 admission", () => {
  it("rejects a later task for the same etcd with ERR_DUPLICATE_TASK and druid's texts", () => {
    const { server, controller } = simulation(scripted({ execute: [{ kind: "hang" }] }));
    server.create(taskObject("first", { etcd: "e1" }));
    controller.runUntilIdle();
    server.create(taskObject("second", { etcd: "e1" }));
    controller.runUntilIdle();
    const status = statusOf(server, "second");
    expect(status.state).toBe("Rejected");
    expect(status.startedAt).toBeUndefined();
    expect(status.lastOperation).toMatchObject({
      type: "Admit",
      state: "Failed",
      description: "EtcdOpsTask for the same etcd is already in progress",
    });
    expect(status.lastErrors?.map((e) => e.description)).toEqual([
      "[Operation: Admit, Code: ERR_DUPLICATE_TASK] message: duplicate task found, cause: an EtcdOpsTask for etcd default/e1 is already present (task: first)",
    ]);
  });

  it("lets exactly the oldest of simultaneous tasks proceed (creationTimestamp, then name)", () => {
    const hang: Behaviour = { kind: "hang" };
    const { server, controller } = simulation(scripted({ execute: [hang, hang, hang] }));
    for (const name of ["c", "a", "b"]) server.create(taskObject(name, { etcd: "e1" }));
    controller.runUntilIdle();
    expect(["a", "b", "c"].map((name) => statusOf(server, name).state)).toEqual([
      "InProgress",
      "Rejected",
      "Rejected",
    ]);
  });

  it("queue policy: later tasks wait, naming the task ahead, and run in creation order", () => {
    const { server, controller } = simulation(scripted({ execute: [{ kind: "hang" }] }), {
      duplicatePolicy: "queue",
    });
    server.create(taskObject("a", { etcd: "e1", ttl: 1 }));
    server.create(taskObject("b", { etcd: "e1", ttl: 1 }));
    const order: string[] = [];
    server.watch((event) => {
      const status = event.object.status as TaskStatus | undefined;
      const name = String((event.object.metadata as JsonObject).name);
      if (status?.state === "InProgress" && !order.includes(name)) order.push(name);
    });
    let waiting: TaskStatus | undefined;
    server.watch((event) => {
      const status = event.object.status as TaskStatus | undefined;
      if ((event.object.metadata as JsonObject).name === "b" && status?.state === "Pending") waiting = status;
    });
    controller.runUntilIdle();
    expect(order).toEqual(["a"]);
    controller.resolve(namespace, "a", { kind: "completed", description: "Snapshot created successfully" });
    expect(order).toEqual(["a", "b"]);
    expect(waiting?.lastOperation?.description).toBe("Waiting for EtcdOpsTask a on the same etcd to finish");
  });

  it("rejects a config member without a handler with ERR_UNSUPPORTED_TASK, and can still delete it", () => {
    const { server, controller } = simulation(scripted({}));
    server.create(taskObject("t", { etcd: "e1", member: "onDemandQuorumRecovery" }));
    controller.runUntilIdle();
    expect(statusOf(server, "t").lastErrors?.[0]?.code).toBe("ERR_UNSUPPORTED_TASK");
    server.delete(namespace, "t");
    controller.runUntilIdle();
    expect(server.get(namespace, "t").ok).toBe(false);
  });
});

describe("bad input", () => {
  it("rejects a task that does not decode with ERR_INVALID_TASK naming the field, and deletes it after the TTL", () => {
    const { server, controller } = simulation(scripted({}));
    // The API server does not enforce int32 on CRD fields; the controller must still say what is wrong.
    const object = taskObject("t", { etcd: "e1" });
    server.create({
      ...object,
      spec: { ...(object.spec as JsonObject), ttlSecondsAfterFinished: 2_147_483_648 },
    });
    controller.runUntilIdle();
    const status = statusOf(server, "t");
    expect(status.state).toBe("Rejected");
    expect(status.lastOperation?.description).toBe("Task is invalid; see lastErrors for the fields to fix");
    expect(status.lastErrors?.[0]?.code).toBe("ERR_INVALID_TASK");
    expect(status.lastErrors?.[0]?.description).toContain("spec.ttlSecondsAfterFinished");
    expect(controller.calls).toHaveLength(0);
    controller.advanceAndRun(3_600_000);
    expect(server.get(namespace, "t").ok).toBe(false);
  });
});

describe("§7 and §13 D6: transient errors", () => {
  it("back off exponentially, keep the newest 10 errors, and keep them after success", () => {
    const { server, controller } = simulation(
      scripted({ execute: Array.from({ length: 12 }, () => transient) }),
    );
    server.create(taskObject("t", { etcd: "e1", ttl: 3600 }));
    controller.advanceAndRun(60_000);
    const status = statusOf(server, "t");
    expect(status.state).toBe("Succeeded");
    expect(status.lastErrors).toHaveLength(10);
    expect(status.lastErrors?.every((e) => e.code === "ERR_EXECUTE_HTTP_REQUEST")).toBe(true);
    const gaps = controller.passes
      .filter((p) => p.end?._tag === "RequeueAfter" && p.end.reason === "backoff")
      .map((p) => (p.end?._tag === "RequeueAfter" ? p.end.delayMs : 0));
    expect(gaps.slice(0, 4)).toEqual([10, 20, 40, 80]);
    expect(Math.max(...gaps)).toBe(15_000);
  });

  it("end in Failed with ERR_DEADLINE_EXCEEDED once the phase deadline passes", () => {
    const { server, controller } = simulation(
      scripted({ execute: Array.from({ length: 100 }, () => transient) }),
      { phaseDeadlineMs: 30_000 },
    );
    server.create(taskObject("t", { etcd: "e1", ttl: 3600 }));
    controller.advanceAndRun(60_000);
    const status = statusOf(server, "t");
    expect(status.state).toBe("Failed");
    expect(status.lastErrors?.at(-1)?.code).toBe("ERR_DEADLINE_EXCEEDED");
    expect(status.lastOperation).toMatchObject({
      type: "Execution",
      state: "Failed",
      description: "Task Execution phase exceeded its deadline",
    });
  });
});

describe("§11 deletion", () => {
  it("deletes at lastTransitionTime + TTL even for a 1 s TTL (the timer is never lost)", () => {
    const { server, controller, clock } = simulation(scripted({}));
    clock.set(clock.now() + 999);
    server.create(taskObject("t", { etcd: "e1", ttl: 1 }));
    controller.runUntilIdle();
    expect(statusOf(server, "t").state).toBe("Succeeded");
    controller.advanceAndRun(1_000);
    expect(server.get(namespace, "t").ok).toBe(false);
  });

  for (const [state, plan] of [
    ["Pending", { admit: [{ kind: "hang" } as const] }],
    ["InProgress", { execute: [{ kind: "hang" } as const] }],
    ["Succeeded", {}],
  ] as const) {
    it(`removes the task when the user deletes it in ${state}`, () => {
      const { server, controller } = simulation(scripted(plan));
      server.create(taskObject("t", { etcd: "e1" }));
      controller.runUntilIdle();
      server.delete(namespace, "t");
      controller.runUntilIdle();
      expect(server.get(namespace, "t").ok).toBe(false);
      expect(controller.calls.filter((c) => c.dropped === "cancelled").length).toBe(
        state === "Succeeded" ? 0 : 1,
      );
    });
  }

  it("records a failed DELETE on the cleanup (ERR_DELETE_ETCD_OPS_TASK) and deletes on the next attempt", () => {
    const { server, controller } = simulation(scripted({}));
    server.create(taskObject("t", { etcd: "e1", ttl: 1 }));
    controller.runUntilIdle();
    controller.failNextDelete();
    controller.advanceAndRun(1_000);
    const failed = controller.passes.find((p) => p.transitions.some((t) => t.event === "delete.failed"));
    expect(failed?.end).toMatchObject({ _tag: "RequeueAfter", reason: "backoff" });
    const written = server.events
      .map((e) => e.object.status as TaskStatus | undefined)
      .find((s) => s?.lastErrors?.some((e) => e.code === "ERR_DELETE_ETCD_OPS_TASK"));
    expect(written?.state).toBe("Succeeded");
    expect(written?.lastOperation).toMatchObject({
      type: "Cleanup",
      state: "InProgress",
      description: "Task Cleanup phase is in progress",
    });
    expect(written?.lastErrors?.at(-1)?.description).toBe(
      "[Operation: Cleanup, Code: ERR_DELETE_ETCD_OPS_TASK] message: failed to delete EtcdOpsTask resource, cause: the server is currently unable to handle the request (delete etcdopstasks)",
    );
    controller.advanceAndRun(1_000);
    expect(server.get(namespace, "t").ok).toBe(false);
  });

  it("keeps foreign finalizers, and leaves a visible Cleanup/Completed record while they hold the task", () => {
    const { server, controller } = simulation(scripted({}));
    server.create(taskObject("t", { etcd: "e1" }));
    controller.runUntilIdle();
    const finalizers = metaOf(server, "t")?.finalizers as string[];
    server.patch(namespace, "t", { metadata: { finalizers: [...finalizers, "example.com/keep"] } });
    server.delete(namespace, "t");
    controller.runUntilIdle();
    expect(metaOf(server, "t")?.finalizers).toEqual(["example.com/keep"]);
    expect(statusOf(server, "t").lastOperation).toMatchObject({
      type: "Cleanup",
      state: "Completed",
      description: "Cleanup completed",
    });
  });

  it("releases the finalizer with a CleanupFailed warning when cleanup fails for good", () => {
    const failing: Behaviour = {
      kind: "return",
      outcome: {
        kind: "failed",
        description: "Could not delete the Job",
        error: { code: "ERR_DELETE_JOB", message: "failed to delete job", cause: "forbidden" },
      },
    };
    const { server, controller } = simulation(scripted({ cleanup: [failing] }));
    server.create(taskObject("t", { etcd: "e1" }));
    controller.runUntilIdle();
    server.delete(namespace, "t");
    controller.runUntilIdle();
    expect(server.get(namespace, "t").ok).toBe(false);
    expect(controller.events.at(-1)).toMatchObject({ eventType: "Warning", reason: "CleanupFailed" });
  });
});

describe("§13 D2: a handler call is never repeated for a write that did not need it", () => {
  it("a label edit during an Execute call does not repeat the call", () => {
    const { server, controller } = simulation(scripted({ execute: [{ kind: "hang" }] }));
    server.create(taskObject("t", { etcd: "e1" }));
    controller.runUntilIdle();
    server.patch(namespace, "t", { metadata: { labels: { edited: "during-call" } } });
    controller.runUntilIdle();
    controller.resolve(namespace, "t", { kind: "completed", description: "Snapshot created successfully" });
    expect(statusOf(server, "t").state).toBe("Succeeded");
    expect(controller.calls.filter((c) => c.phase === "execute")).toHaveLength(1);
  });

  it("a failed status write after a result persists that result later without calling again", () => {
    const { server, controller } = simulation(scripted({}));
    server.create(taskObject("t", { etcd: "e1" }));
    controller.failNextStatusWrite();
    controller.runUntilIdle();
    controller.advanceAndRun(1_000);
    expect(statusOf(server, "t").state).toBe("Succeeded");
    expect(controller.calls.filter((c) => c.phase === "admit")).toHaveLength(1);
  });
});
