/**
 * The whole task lifecycle on a real kube-apiserver + etcd with etcd-druid's CRDs, run by the real
 * controller with scripted (stub) handlers. Timing budgets are druid's (docs/contract.md §7).
 */
import { CustomObjectsApi, type KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TaskStatus } from "../../src/api/status.ts";
import { createTestNamespace, druidCrds, useControlPlane } from "../support/cluster.ts";
import { type RunningController, scriptedHandlers, startController } from "../support/controller.ts";
import { transientHttpFailure } from "../support/simulation.ts";
import { waitFor } from "../support/wait.ts";

const cluster = useControlPlane({ crds: druidCrds });
const group = { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcdopstasks" };
const finalizer = "druid.gardener.cloud/etcd-ops-task";

interface Task {
  metadata: {
    name: string;
    uid: string;
    finalizers?: string[];
    deletionTimestamp?: string;
    labels?: Record<string, string>;
  };
  status?: TaskStatus;
}

const taskBody = (namespace: string, name: string, etcdName: string, ttl: number) => ({
  apiVersion: "druid.gardener.cloud/v1alpha1",
  kind: "EtcdOpsTask",
  metadata: { name, namespace },
  spec: {
    etcdName,
    ttlSecondsAfterFinished: ttl,
    config: { onDemandSnapshot: { type: "full", timeoutSecondsFull: 150 } },
  },
});

const transient = { outcome: transientHttpFailure };

describe("task lifecycle against a real API server", () => {
  let kc: KubeConfig;
  let api: CustomObjectsApi;
  let namespace: string;
  let controller: RunningController;
  const handlers = scriptedHandlers();

  const create = (name: string, etcdName = "etcd-a", ttl = 2) =>
    api.createNamespacedCustomObject({ ...group, namespace, body: taskBody(namespace, name, etcdName, ttl) });
  const read = async (name: string): Promise<Task | undefined> => {
    try {
      return (await api.getNamespacedCustomObject({ ...group, namespace, name })) as Task;
    } catch {
      return undefined;
    }
  };
  const stateOf = (name: string, state: string) =>
    waitFor(`${name} to be ${state}`, async () => {
      const task = await read(name);
      return task?.status?.state === state ? task : undefined;
    });
  const goneOf = (name: string, timeoutMs = 15_000) =>
    waitFor(
      `${name} to be gone`,
      async () => ((await read(name)) === undefined ? true : undefined),
      timeoutMs,
    );

  beforeAll(async () => {
    kc = cluster().makeKubeConfig();
    api = kc.makeApiClient(CustomObjectsApi);
    namespace = await createTestNamespace(kc, "lifecycle");
    controller = await startController(kc, handlers.registry, {}, namespace);
  });
  afterAll(async () => {
    await controller?.stop();
  });

  it("runs a task to Succeeded with druid's texts, and deletes it after its TTL", async () => {
    await create("happy", "etcd-happy", 2);
    const withFinalizer = await waitFor(
      "the finalizer",
      async () => {
        const task = await read("happy");
        return task?.metadata.finalizers?.includes(finalizer) ? task : undefined;
      },
      5_000,
    );
    expect(withFinalizer.metadata.finalizers).toContain(finalizer);
    const done = await stateOf("happy", "Succeeded");
    expect(done.status?.lastOperation).toMatchObject({
      type: "Execution",
      state: "Completed",
      description: "Snapshot created successfully",
    });
    expect(done.status?.startedAt).toBeDefined();
    const terminalSeen = Date.now();
    await goneOf("happy", 2_000 + 5_000);
    expect(Date.now() - terminalSeen).toBeLessThan(7_000);
  });

  it("rejects a second task for the same etcd while the first runs (ERR_DUPLICATE_TASK)", async () => {
    handlers.scripts.set("dup-first", { execute: [{ hang: true }] });
    await create("dup-first", "etcd-dup", 3600);
    await stateOf("dup-first", "InProgress");
    await create("dup-second", "etcd-dup", 2);
    const rejected = await stateOf("dup-second", "Rejected");
    expect(rejected.status?.lastErrors?.[0]?.code).toBe("ERR_DUPLICATE_TASK");
    expect(rejected.status?.startedAt).toBeUndefined();
    await api.deleteNamespacedCustomObject({ ...group, namespace, name: "dup-first" });
    await goneOf("dup-first");
    // The deleted task's call runs on to its own end (its result is then discarded): not interrupted.
    const call = handlers.calls.find((c) => c.task === "dup-first" && c.phase === "execute");
    expect(call?.interrupted).toBe(false);
    call?.release?.({ kind: "completed", description: "late" });
  });

  it("ends Failed when Execute fails, with the error recorded", async () => {
    handlers.scripts.set("fails", {
      execute: [
        {
          outcome: {
            kind: "failed",
            description: "Failed to create snapshot",
            error: {
              code: "ERR_CREATE_SNAPSHOT",
              message: "failed to create snapshot",
              cause: "failed to create snapshot, status code: 500",
            },
          },
        },
      ],
    });
    await create("fails", "etcd-fails", 3600);
    const failed = await stateOf("fails", "Failed");
    expect(failed.status?.lastErrors?.at(-1)?.description).toBe(
      "[Operation: Execution, Code: ERR_CREATE_SNAPSHOT] message: failed to create snapshot, cause: failed to create snapshot, status code: 500",
    );
  });

  it("retries transient errors with backoff, then succeeds keeping the errors", async () => {
    handlers.scripts.set("flaky", { execute: [transient, transient, transient] });
    await create("flaky", "etcd-flaky", 3600);
    const done = await stateOf("flaky", "Succeeded");
    expect(done.status?.lastErrors?.map((e) => e.code)).toEqual([
      "ERR_EXECUTE_HTTP_REQUEST",
      "ERR_EXECUTE_HTTP_REQUEST",
      "ERR_EXECUTE_HTTP_REQUEST",
    ]);
    expect(handlers.calls.filter((c) => c.task === "flaky" && c.phase === "execute")).toHaveLength(4);
  });

  it("rejects a task the API server accepts but opstask cannot read (int32 overflow) with ERR_INVALID_TASK", async () => {
    await api.createNamespacedCustomObject({
      ...group,
      namespace,
      body: {
        apiVersion: "druid.gardener.cloud/v1alpha1",
        kind: "EtcdOpsTask",
        metadata: { name: "overflow", namespace },
        spec: {
          etcdName: "etcd-overflow",
          ttlSecondsAfterFinished: 2_147_483_648,
          config: { onDemandSnapshot: { type: "full" } },
        },
      },
    });
    const rejected = await stateOf("overflow", "Rejected");
    expect(rejected.status?.lastErrors?.[0]?.code).toBe("ERR_INVALID_TASK");
    expect(rejected.status?.lastErrors?.[0]?.description).toContain("spec.ttlSecondsAfterFinished");
    await api.deleteNamespacedCustomObject({ ...group, namespace, name: "overflow" });
    await goneOf("overflow");
  });

  it("does not repeat a handler call when a label is edited during it", async () => {
    handlers.scripts.set("labelled", { execute: [{ hang: true }] });
    await create("labelled", "etcd-labelled", 3600);
    await stateOf("labelled", "InProgress");
    await api.patchNamespacedCustomObject({
      ...group,
      namespace,
      name: "labelled",
      body: [{ op: "add", path: "/metadata/labels", value: { edited: "yes" } }],
    });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(handlers.calls.filter((c) => c.task === "labelled" && c.phase === "execute")).toHaveLength(1);
    await api.deleteNamespacedCustomObject({ ...group, namespace, name: "labelled" });
    await goneOf("labelled");
  });

  for (const [state, plan] of [
    ["Pending", { admit: [{ hang: true } as const] }],
    ["InProgress", { execute: [{ hang: true } as const] }],
    ["Succeeded", {}],
  ] as const) {
    it(`removes a task deleted by the user while ${state}, within 15 s`, async () => {
      const name = `delete-${state.toLowerCase()}`;
      handlers.scripts.set(name, Object.fromEntries(Object.entries(plan).map(([k, v]) => [k, [...v]])));
      await create(name, `etcd-${name}`, 3600);
      if (state === "Pending") {
        await waitFor("the admit call", async () =>
          handlers.calls.some((c) => c.task === name && c.phase === "admit") ? true : undefined,
        );
      } else {
        await stateOf(name, state);
      }
      await api.deleteNamespacedCustomObject({ ...group, namespace, name });
      await goneOf(name, 15_000);
    });
  }

  it("keeps a foreign finalizer and removes only its own", async () => {
    await create("foreign", "etcd-foreign", 3600);
    const done = await stateOf("foreign", "Succeeded");
    expect(done.metadata.finalizers).toEqual([finalizer]);
    await api.patchNamespacedCustomObject({
      ...group,
      namespace,
      name: "foreign",
      body: [{ op: "add", path: "/metadata/finalizers/-", value: "example.com/keep" }],
    });
    await api.deleteNamespacedCustomObject({ ...group, namespace, name: "foreign" });
    const held = await waitFor("our finalizer to go", async () => {
      const task = await read("foreign");
      return task !== undefined && !task.metadata.finalizers?.includes(finalizer) ? task : undefined;
    });
    expect(held.metadata.finalizers).toEqual(["example.com/keep"]);
    expect(held.status?.lastOperation).toMatchObject({ type: "Cleanup", state: "Completed" });
    await api.patchNamespacedCustomObject({
      ...group,
      namespace,
      name: "foreign",
      body: [{ op: "remove", path: "/metadata/finalizers/0" }],
    });
    await goneOf("foreign");
  });

  it("resumes after a controller restart mid-task, without repeating a persisted result", async () => {
    handlers.scripts.set("restart", { execute: [{ hang: true }] });
    await create("restart", "etcd-restart", 3600);
    await stateOf("restart", "InProgress");
    // Mid-task means while the Execute call runs: InProgress is written just before the call starts.
    await waitFor("the first Execute call", () =>
      handlers.calls.some((call) => call.task === "restart" && call.phase === "execute") ? true : undefined,
    );
    await controller.stop();
    controller = await startController(kc, handlers.registry, {}, namespace);
    await stateOf("restart", "Succeeded");
    const calls = handlers.calls.filter((c) => c.task === "restart");
    expect(calls.filter((c) => c.phase === "admit")).toHaveLength(1);
    expect(calls.filter((c) => c.phase === "execute")).toHaveLength(2);
  });

  it("after a restart, calls no handler but cleanup for a finished task, and deletes it at its TTL", async () => {
    // The restarted controller reads a finished task without decoding its spec (reconcile/settled-facts.ts).
    await create("settled", "etcd-settled", 6);
    const finished = await stateOf("settled", "Succeeded");
    const callsBefore = handlers.calls.filter((call) => call.task === "settled").length;
    await controller.stop();
    controller = await startController(kc, handlers.registry, {}, namespace);
    await goneOf("settled", 30_000);
    const due = Date.parse(finished.status?.lastTransitionTime ?? "") + 6_000;
    expect(Date.now()).toBeGreaterThanOrEqual(due);
    const callsAfter = handlers.calls.filter((call) => call.task === "settled").slice(callsBefore);
    expect(callsAfter.filter((call) => call.phase !== "cleanup")).toEqual([]);
  });

  it("admits exactly the oldest of tasks created together (reject policy)", async () => {
    // "Together" means the controller first sees them at once: created while it is down.
    await controller.stop();
    for (const name of ["sim-c", "sim-a", "sim-b"]) handlers.scripts.set(name, { execute: [{ hang: true }] });
    await Promise.all(["sim-c", "sim-a", "sim-b"].map((name) => create(name, "etcd-sim", 3600)));
    controller = await startController(kc, handlers.registry, {}, namespace);
    await stateOf("sim-b", "Rejected");
    await stateOf("sim-c", "Rejected");
    await stateOf("sim-a", "InProgress");
    for (const name of ["sim-a", "sim-b", "sim-c"])
      await api.deleteNamespacedCustomObject({ ...group, namespace, name });
    for (const name of ["sim-a", "sim-b", "sim-c"]) await goneOf(name);
  });

  it("runs tasks created together one after another, in creation order (queue policy)", async () => {
    await controller.stop();
    const names = ["q-c", "q-a", "q-b"];
    for (const name of names) handlers.scripts.set(name, { execute: [{ hang: true }] });
    await Promise.all(names.map((name) => create(name, "etcd-queue", 3600)));
    controller = await startController(kc, handlers.registry, { duplicatePolicy: "queue" }, namespace);
    const started: string[] = [];
    for (const name of ["q-a", "q-b", "q-c"]) {
      await stateOf(name, "InProgress");
      started.push(name);
      // Every task still waiting says whom it waits for (its next pass names the new runner).
      for (const waiting of names.filter((n) => !started.includes(n))) {
        const expected = `Waiting for EtcdOpsTask ${name} on the same etcd to finish`;
        const task = await waitFor(`${waiting} to wait for ${name}`, async () => {
          const current = await read(waiting);
          return current?.status?.lastOperation?.description === expected ? current : undefined;
        });
        expect(task.status?.state).toBe("Pending");
      }
      // Deleting the running task lets it go at once, but its call runs on and holds the etcd: the
      // next one is admitted only once that call has ended (issue 16, finding 12).
      await api.deleteNamespacedCustomObject({ ...group, namespace, name });
      await goneOf(name);
      const next = names.filter((n) => !started.includes(n));
      if (next.length > 0) {
        await waitFor("the controller to be idle", () => {
          const queue = controller.handle.queue();
          return queue.depth === 0 && queue.inFlight === 0 ? true : undefined;
        });
        expect(handlers.calls.filter((c) => next.includes(c.task) && c.phase === "admit")).toEqual([]);
        // (Tasks of earlier tests in this namespace may have calls in flight of their own.)
        expect(controller.handle.stats().orphanedCalls).toBe(1);
      }
      const call = handlers.calls.find((c) => c.task === name && c.phase === "execute");
      expect(call?.interrupted).toBe(false);
      call?.release?.({ kind: "completed", description: "late" });
    }
    expect(started).toEqual(["q-a", "q-b", "q-c"]);
  });
});

describe("what the controller keeps beside its cache", () => {
  it("forgets a task once it is gone: retry state, unwritten results, released tasks", async () => {
    const kc = cluster().makeKubeConfig();
    const api = kc.makeApiClient(CustomObjectsApi);
    const namespace = await createTestNamespace(kc, "forget");
    const handlers = scriptedHandlers();
    handlers.scripts.set("flaky", { execute: [transient, transient] });
    handlers.scripts.set("hung", { execute: [{ hang: true }] });
    const controller = await startController(kc, handlers.registry, {}, namespace);
    const remaining = async () =>
      (await api.listNamespacedCustomObject({ ...group, namespace })) as { items: unknown[] };
    try {
      for (const [name, ttl] of [
        ["flaky", 1],
        ["plain", 1],
        ["hung", 3600],
      ] as const) {
        await api.createNamespacedCustomObject({
          ...group,
          namespace,
          body: taskBody(namespace, name, `etcd-${name}`, ttl),
        });
      }
      await waitFor("the hanging Execute call", () =>
        handlers.calls.some((call) => call.task === "hung" && call.phase === "execute") ? true : undefined,
      );
      await api.deleteNamespacedCustomObject({ ...group, namespace, name: "hung" });
      await waitFor(
        "every task to be gone",
        async () => ((await remaining()).items.length === 0 ? true : undefined),
        20_000,
      );
      expect(handlers.calls.filter((call) => call.task === "flaky" && call.phase === "execute")).toHaveLength(
        3,
      );
      await waitFor(
        "nothing remembered",
        () => (controller.handle.stats().remembered === 0 ? true : undefined),
        5_000,
      );
    } finally {
      await controller.stop();
    }
  });
});
