// What a deletion does to a handler call, in the memory interpreter (the same scheduler and pass
// protocol the cluster runtime runs): during the call, the task goes but the work holds its etcd until
// the call has ended (issue 16, finding 12); between the call's return and the write of its result, the
// result is written and the call is never repeated (issue 12). A label edit there changes nothing either.
import { describe, expect, it } from "vitest";
import type { Behaviour } from "../../src/interpreters/memory/controller.ts";
import type { Phase } from "../../src/machine/types.ts";
import type { TaskFacts } from "../../src/reconcile/task-kind.ts";
import { completed, namespace, simulation, taskObject, transient } from "../support/simulation.ts";

const stateOf = (sim: ReturnType<typeof simulation>, name: string) => {
  const stored = sim.server.get(namespace, name);
  return stored.ok ? (stored.value.status as { state?: string } | undefined)?.state : "gone";
};

describe("a deletion while a task's Execute call runs", () => {
  const hangFirst = (task: TaskFacts, phase: Phase): Behaviour =>
    task.metadata.name === "first" && phase === "execute" ? { kind: "hang" } : completed("ok");

  it("lets the task go at once, but admits no other task of its etcd until the call has ended", () => {
    const sim = simulation(hangFirst, { duplicatePolicy: "queue" });
    sim.server.create(taskObject("first", { etcd: "e1", ttl: 3600 }));
    sim.controller.runUntilIdle();
    expect(sim.controller.hanging()).toEqual(["first"]);

    sim.server.delete(namespace, "first");
    sim.controller.runUntilIdle();
    expect(stateOf(sim, "first")).toBe("gone");
    // The call runs on (a sidecar may still be snapshotting)...
    expect(sim.controller.hanging()).toEqual(["first"]);

    // ... so a new task for the same etcd waits: no Admit, no Execute.
    sim.server.create(taskObject("second", { etcd: "e1", ttl: 3600 }));
    sim.controller.advanceAndRun(60_000);
    expect(sim.controller.calls.filter((c) => c.name === "second")).toEqual([]);
    // A task of another etcd is not held.
    sim.server.create(taskObject("other", { etcd: "e2", ttl: 3600 }));
    sim.controller.runUntilIdle();
    expect(stateOf(sim, "other")).toBe("Succeeded");

    // The call ends: its result is discarded (nothing is written for the gone task), the etcd is free.
    const writes = sim.controller.writes.length;
    sim.controller.resolve(namespace, "first", { kind: "completed", description: "late" });
    const first = sim.controller.calls.find((c) => c.name === "first" && c.phase === "execute");
    expect(first?.dropped).toBe("cancelled");
    expect(first?.persisted).toBe(false);
    expect(sim.controller.writes.slice(writes).filter((w) => w.name === "first")).toEqual([]);
    expect(stateOf(sim, "second")).toBe("Succeeded");
    expect(sim.controller.calls.filter((c) => c.name === "second").map((c) => c.phase)).toEqual([
      "admit",
      "execute",
    ]);
  });
});

describe("a user's action between a handler's return and the status write of its result", () => {
  for (const action of ["delete", "label"] as const) {
    it(`${action}: the result is written, and the handler is not called again`, () => {
      const sim = simulation((_, phase) => {
        // Execute is being called: its result's status write is the next one that carries a result.
        if (phase === "execute")
          sim.controller.beforeNextResultWrite((ns, name) => {
            if (action === "delete") sim.server.delete(ns, name);
            else sim.server.patch(ns, name, { metadata: { labels: { edited: "yes" } } });
          });
        return completed("Snapshot created successfully");
      });
      sim.server.create(taskObject("t", { etcd: "e1", ttl: 3600 }));
      sim.controller.runUntilIdle();
      sim.controller.advanceAndRun(10_000);
      const states = sim.server.events
        .filter((e) => (e.object.metadata as { name?: string }).name === "t")
        .map((e) => (e.object.status as { state?: string } | undefined)?.state);
      expect(states).toContain("Succeeded");
      const calls = sim.controller.calls.map((c) => c.phase);
      expect(calls.filter((p) => p === "admit")).toHaveLength(1);
      expect(calls.filter((p) => p === "execute")).toHaveLength(1);
      expect(sim.controller.calls.every((c) => c.persisted)).toBe(true);
      if (action === "delete") expect(stateOf(sim, "t")).toBe("gone");
      else expect(stateOf(sim, "t")).toBe("Succeeded");
    });
  }
});

describe("a task deleted while InProgress that a foreign finalizer keeps", () => {
  it("blocks no queued task of its etcd once this controller has released it", () => {
    // first retries its Execute (InProgress); second waits behind it in the queue.
    const sim = simulation(
      (task, phase) => (task.metadata.name === "first" && phase === "execute" ? transient : completed("ok")),
      { duplicatePolicy: "queue" },
    );
    sim.server.create(taskObject("first", { etcd: "e1", ttl: 3600 }));
    sim.controller.runUntilIdle();
    expect(stateOf(sim, "first")).toBe("InProgress");
    const stored = sim.server.get(namespace, "first");
    const finalizers = stored.ok
      ? ((stored.value.metadata as { finalizers?: string[] }).finalizers ?? [])
      : [];
    sim.server.patch(namespace, "first", { metadata: { finalizers: [...finalizers, "example.com/keep"] } });
    sim.server.create(taskObject("second", { etcd: "e1", ttl: 3600 }));
    sim.controller.runUntilIdle();
    expect(stateOf(sim, "second")).toBe("Pending");

    // The user deletes first: its cleanup runs and our finalizer goes; example.com/keep keeps the object,
    // still InProgress, for ever.
    sim.server.delete(namespace, "first");
    sim.controller.advanceAndRun(60_000);
    const kept = sim.server.get(namespace, "first");
    expect(kept.ok && (kept.value.metadata as { finalizers?: string[] }).finalizers).toEqual([
      "example.com/keep",
    ]);
    expect(stateOf(sim, "first")).toBe("InProgress");

    // second is admitted and runs: the released task blocks nobody.
    expect(stateOf(sim, "second")).toBe("Succeeded");
  });
});
