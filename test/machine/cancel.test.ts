/** docs/contract.md "Cancel": a cancel bound to the task's UID ends it Failed ERR_CANCELLED before its next handler call. */
import { describe, expect, it } from "vitest";
import type { TaskStatus } from "../../src/api/status.ts";
import type { Phase } from "../../src/machine/types.ts";
import { cancelAnnotation, cancelledByAnnotation } from "../../src/reconcile/task-kind.ts";
import { completed, namespace, simulation, taskObject } from "../support/simulation.ts";

const waiting = {
  kind: "return",
  outcome: { kind: "retry", description: "Step 1/2 ScaleDown: waiting", afterMs: 5_000 },
} as const;

const statusOf = (server: ReturnType<typeof simulation>["server"]): TaskStatus => {
  const stored = server.get(namespace, "t");
  return stored.ok ? ((stored.value.status ?? {}) as TaskStatus) : {};
};
const uidOf = (server: ReturnType<typeof simulation>["server"]): string => {
  const stored = server.get(namespace, "t");
  return stored.ok ? String((stored.value.metadata as { uid: string }).uid) : "";
};

/** Execute waits until told otherwise; every call is counted. */
const running = () => {
  const calls: Phase[] = [];
  let finish = false;
  const { server, controller } = simulation((_task, phase) => {
    calls.push(phase);
    return phase === "execute" && !finish ? waiting : completed();
  });
  server.create(taskObject("t", { etcd: "e1", ttl: 600 }));
  controller.runUntilIdle();
  return { server, controller, calls, finishNext: () => (finish = true) };
};

describe("cancel", () => {
  it("ends a running task Failed ERR_CANCELLED naming who asked and after what; no handler call follows", () => {
    const { server, controller, calls } = running();
    expect(statusOf(server).state).toBe("InProgress");
    server.patch(namespace, "t", {
      metadata: { annotations: { [cancelAnnotation]: uidOf(server), [cancelledByAnnotation]: "alice" } },
    });
    controller.runUntilIdle();
    const executes = calls.filter((phase) => phase === "execute").length;
    controller.advanceAndRun(60_000);
    expect(calls.filter((phase) => phase === "execute").length).toBe(executes);
    const status = statusOf(server);
    expect(status.state).toBe("Failed");
    expect(status.lastOperation?.description).toBe("Task cancelled by alice");
    expect(status.lastErrors?.at(-1)).toMatchObject({
      code: "ERR_CANCELLED",
      description: expect.stringContaining("after: Step 1/2 ScaleDown: waiting"),
    });
    // The record stays until its TTL.
    expect(server.get(namespace, "t").ok).toBe(true);
  });

  it("ignores a cancel that names another task's UID", () => {
    const { server, controller, finishNext } = running();
    server.patch(namespace, "t", { metadata: { annotations: { [cancelAnnotation]: "some-other-uid" } } });
    finishNext();
    controller.advanceAndRun(10_000);
    expect(statusOf(server).state).toBe("Succeeded");
  });

  it("cancels a queued task before its Admit", () => {
    const { server, controller } = simulation(
      () => ({ kind: "return", outcome: { kind: "retry", description: "waiting", afterMs: 5_000 } }),
      { duplicatePolicy: "queue" },
    );
    server.create(taskObject("first", { etcd: "e1", ttl: 600 }));
    controller.runUntilIdle();
    server.create(taskObject("t", { etcd: "e1", ttl: 600 }));
    controller.runUntilIdle();
    expect(statusOf(server).state).toBe("Pending");
    server.patch(namespace, "t", {
      metadata: { annotations: { [cancelAnnotation]: uidOf(server), [cancelledByAnnotation]: "bob" } },
    });
    controller.runUntilIdle();
    expect(statusOf(server)).toMatchObject({ state: "Failed", lastErrors: [{ code: "ERR_CANCELLED" }] });
  });

  it("aborts the handler call in flight; its retry answer then ends the task ERR_CANCELLED", () => {
    const signals: AbortSignal[] = [];
    const { server, controller } = simulation((_task, phase, call?: { signal: AbortSignal }) => {
      if (phase !== "execute") return completed();
      if (call !== undefined) signals.push(call.signal);
      return { kind: "hang" };
    });
    server.create(taskObject("t", { etcd: "e1", ttl: 600 }));
    controller.runUntilIdle();
    expect(signals.map((signal) => signal.aborted)).toEqual([false]);
    server.patch(namespace, "t", {
      metadata: { annotations: { [cancelAnnotation]: uidOf(server), [cancelledByAnnotation]: "carol" } },
    });
    controller.runUntilIdle();
    expect(signals.map((signal) => signal.aborted)).toEqual([true]);
    controller.resolve(namespace, "t", { kind: "retry", description: "Step 2/3 Wait: aborted" });
    controller.runUntilIdle();
    expect(statusOf(server)).toMatchObject({ state: "Failed", lastErrors: [{ code: "ERR_CANCELLED" }] });
    expect(signals).toHaveLength(1);
  });

  it("keeps the outcome of a call that completed after the cancel arrived", () => {
    const { server, controller } = simulation((_task, phase) =>
      phase === "execute" ? { kind: "hang" } : completed(),
    );
    server.create(taskObject("t", { etcd: "e1", ttl: 600 }));
    controller.runUntilIdle();
    server.patch(namespace, "t", { metadata: { annotations: { [cancelAnnotation]: uidOf(server) } } });
    controller.runUntilIdle();
    controller.resolve(namespace, "t", { kind: "completed", description: "Snapshot created successfully" });
    controller.runUntilIdle();
    expect(statusOf(server).state).toBe("Succeeded");
  });
});
