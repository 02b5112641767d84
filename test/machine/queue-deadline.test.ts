/** docs/contract.md §17: with a queue deadline, a task queued behind a peer ends Failed ERR_QUEUE_TIMEOUT on time. */
import { describe, expect, it } from "vitest";
import type { TaskStatus } from "../../src/api/status.ts";
import { fromWireTime } from "../../src/machine/time.ts";
import { completed, epoch, namespace, simulation, taskObject } from "../support/simulation.ts";

const statusOf = (server: ReturnType<typeof simulation>["server"], name: string): TaskStatus => {
  const stored = server.get(namespace, name);
  return stored.ok ? ((stored.value.status ?? {}) as TaskStatus) : {};
};

/** `first` polls for ever; `second` queues behind it. */
const queuedBehindPoller = (queueDeadlineMs?: number) => {
  const { server, controller } = simulation(
    (_task, phase) =>
      phase === "execute"
        ? { kind: "return", outcome: { kind: "retry", description: "still running", afterMs: 5_000 } }
        : completed(),
    { duplicatePolicy: "queue", ...(queueDeadlineMs === undefined ? {} : { queueDeadlineMs }) },
  );
  server.create(taskObject("first", { etcd: "e1", ttl: 600 }));
  server.create(taskObject("second", { etcd: "e1", ttl: 600 }));
  controller.runUntilIdle();
  return { server, controller };
};

describe("queue deadline", () => {
  it("says until when a queued task waits, and fails it ERR_QUEUE_TIMEOUT at that time", () => {
    const { server, controller } = queuedBehindPoller(60_000);
    controller.advanceAndRun(30_000);
    expect(statusOf(server, "second").state).toBe("Pending");
    expect(statusOf(server, "second").lastOperation?.description).toBe(
      "Waiting for EtcdOpsTask first on the same etcd to finish (waits until 2026-11-22T12:01:00Z)",
    );
    controller.advanceAndRun(40_000);
    const status = statusOf(server, "second");
    expect(status).toMatchObject({ state: "Failed", lastErrors: [{ code: "ERR_QUEUE_TIMEOUT" }] });
    // Ended by the deadline, not at a later poll (wire times are whole seconds).
    expect(fromWireTime(status.lastTransitionTime)).toBeLessThanOrEqual(epoch + 61_000);
    expect(statusOf(server, "first").state).toBe("InProgress");
  });

  it("waits as long as it takes without one (as before)", () => {
    const { server, controller } = queuedBehindPoller();
    controller.advanceAndRun(3_600_000);
    expect(statusOf(server, "second")).toMatchObject({
      state: "Pending",
      lastOperation: { description: "Waiting for EtcdOpsTask first on the same etcd to finish" },
    });
  });
});
