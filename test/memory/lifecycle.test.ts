import { describe, expect, it } from "vitest";
import { completed, namespace, simulation, taskObject } from "../support/simulation.ts";

describe("a task's lifecycle in the memory interpreter", () => {
  it("runs a happy-path task to deletion in 5 writes", () => {
    const { server, controller } = simulation(() => completed("Snapshot created successfully"));
    server.create(taskObject("t1", { etcd: "e1", ttl: 10 }));
    controller.runUntilIdle();
    const stored = server.get(namespace, "t1");
    expect(stored.ok && (stored.value.status as { state?: string }).state).toBe("Succeeded");
    controller.advanceAndRun(10_000);
    expect(server.get(namespace, "t1").ok).toBe(false);
    expect(controller.writes.map((w) => w.effect)).toEqual([
      "AddFinalizer",
      "PatchStatus",
      "PatchStatus",
      "DeleteTask",
      "RemoveFinalizer",
    ]);
  });
});
