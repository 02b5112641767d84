/**
 * Differential test: the same generated command sequences run through the memory interpreter (simulated
 * controller, memory API server, fake clock) and through the real controller against a real
 * kube-apiserver + etcd. What an observer sees must agree: each task's state sequence, the writes made
 * to it by kind, and the final objects. A disagreement is a bug in the memory model (or in the runtime),
 * to be fixed there, never hidden here.
 */
import { CustomObjectsApi, type KubeConfig } from "@kubernetes/client-node";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TaskStatus } from "../../src/api/status.ts";
import type { Behaviour } from "../../src/interpreters/memory/controller.ts";
import type { JsonObject } from "../../src/interpreters/memory/merge-patch.ts";
import type { Phase } from "../../src/machine/types.ts";
import { createTestNamespace, druidCrds, useControlPlane } from "../support/cluster.ts";
import { type Step, scriptedHandlers, startController } from "../support/controller.ts";
import { completed, namespace as simNamespace, simulation, taskObject } from "../support/simulation.ts";

const cluster = useControlPlane({ crds: druidCrds });
const group = { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcdopstasks" };
const ourFinalizer = "druid.gardener.cloud/etcd-ops-task";
const foreign = "example.com/keep";
const timing = { requeueIntervalMs: 300, backoffBaseMs: 10, backoffCapMs: 200 };
/** Long enough for every TTL (1 s) and backoff above to run out. */
const settleMs = 2_500;

type ExecutePlan = "ok" | "fail" | "retry-then-ok";
type Command =
  | {
      readonly kind: "create";
      readonly name: string;
      readonly etcd: string;
      readonly ttl: number;
      readonly plan: ExecutePlan;
    }
  | { readonly kind: "delete"; readonly name: string }
  | { readonly kind: "label"; readonly name: string }
  | { readonly kind: "foreign"; readonly name: string };

const names = ["a", "b", "c"];
const commandArb: fc.Arbitrary<Command> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("create" as const),
      name: fc.constantFrom(...names),
      etcd: fc.constantFrom("e1", "e2"),
      ttl: fc.constantFrom(1, 3600),
      plan: fc.constantFrom<ExecutePlan>("ok", "fail", "retry-then-ok"),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("delete" as const), name: fc.constantFrom(...names) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("label" as const), name: fc.constantFrom(...names) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("foreign" as const), name: fc.constantFrom(...names) }),
  },
);

const transientError = {
  code: "ERR_EXECUTE_HTTP_REQUEST",
  message: "failed to execute HTTP request",
  cause: "connection refused",
};
const failure = {
  code: "ERR_CREATE_SNAPSHOT",
  message: "failed to create snapshot",
  cause: "failed to create snapshot, status code: 500",
};
const executeSteps = (plan: ExecutePlan): Step[] =>
  plan === "ok"
    ? []
    : plan === "fail"
      ? [{ outcome: { kind: "failed", description: "Failed to create snapshot", error: failure } }]
      : [
          {
            outcome: { kind: "retry", description: "Failed to execute HTTP request", error: transientError },
          },
          {
            outcome: { kind: "retry", description: "Failed to execute HTTP request", error: transientError },
          },
        ];
const asBehaviour = (step: Step): Behaviour =>
  "outcome" in step
    ? { kind: "return", outcome: step.outcome }
    : "hang" in step
      ? { kind: "hang" }
      : { kind: "throw", message: step.throws };

/** What an observer records of one world. */
interface Observed {
  /** Per task name, per incarnation: the distinct states in order, and the writes by kind. */
  readonly histories: Record<string, string[]>;
  /** The final objects, without times, IDs and versions. */
  readonly finals: Record<string, unknown>;
}

interface Event {
  readonly type: string;
  readonly object: JsonObject;
}

const metaOf = (object: JsonObject) =>
  object.metadata as {
    name: string;
    uid: string;
    finalizers?: string[];
    deletionTimestamp?: string;
    labels?: Record<string, string>;
  };

/** Reads a watch history as an observer: state changes and which kind of write each change was. */
const historyOf = (events: ReadonlyArray<Event>): Record<string, string[]> => {
  const last = new Map<string, JsonObject>();
  const out: Record<string, string[]> = {};
  const incarnation = new Map<string, number>();
  for (const event of events) {
    const meta = metaOf(event.object);
    if (!incarnation.has(meta.uid))
      incarnation.set(meta.uid, Object.keys(out).filter((k) => k.startsWith(`${meta.name}#`)).length);
    const key = `${meta.name}#${incarnation.get(meta.uid)}`;
    const lines = out[key] ?? [];
    out[key] = lines;
    const before = last.get(meta.uid);
    if (event.type === "DELETED") {
      lines.push("deleted");
      continue;
    }
    if (before !== undefined) {
      const was = metaOf(before);
      const ours = (m: typeof meta) => (m.finalizers ?? []).includes(ourFinalizer);
      if (!ours(was) && ours(meta)) lines.push("finalizer added");
      if (ours(was) && !ours(meta)) lines.push("finalizer removed");
      if (was.deletionTimestamp === undefined && meta.deletionTimestamp !== undefined)
        lines.push("deletion requested");
      const state = (o: JsonObject) => (o.status as TaskStatus | undefined)?.state;
      if (JSON.stringify(stripStatus(before.status)) !== JSON.stringify(stripStatus(event.object.status))) {
        lines.push(
          state(before) === state(event.object)
            ? `status (${String(state(event.object))})`
            : `state ${String(state(event.object))}`,
        );
      }
    }
    last.set(meta.uid, event.object);
  }
  return out;
};

/** Status without what differs between worlds by nature: times, run IDs. */
const stripStatus = (status: unknown): unknown => {
  const s = (status ?? {}) as TaskStatus;
  return {
    state: s.state,
    started: s.startedAt !== undefined,
    operation:
      s.lastOperation === undefined
        ? undefined
        : [s.lastOperation.type, s.lastOperation.state, s.lastOperation.description],
    errors: (s.lastErrors ?? []).map((e) => e.code),
  };
};

const finalOf = (object: JsonObject) => {
  const meta = metaOf(object);
  return {
    finalizers: meta.finalizers ?? [],
    deleting: meta.deletionTimestamp !== undefined,
    status: stripStatus(object.status),
  };
};

const runInMemory = (commands: ReadonlyArray<Command>): Observed => {
  const scripts = new Map<string, Record<Phase, Behaviour[]>>();
  const sim = simulation(
    (task, phase) =>
      scripts.get(task.metadata.name)?.[phase].shift() ??
      completed(
        phase === "execute"
          ? "Snapshot created successfully"
          : phase === "admit"
            ? "Admit check passed"
            : "Cleanup completed",
      ),
    timing,
  );
  const events: Event[] = [];
  sim.server.watch((event) => events.push(event));
  for (const command of commands) {
    const stored = sim.server.get(simNamespace, command.name);
    switch (command.kind) {
      case "create":
        if (stored.ok) break;
        scripts.set(command.name, {
          admit: [],
          execute: executeSteps(command.plan).map(asBehaviour),
          cleanup: [],
        });
        sim.server.create(taskObject(command.name, { etcd: command.etcd, ttl: command.ttl }));
        break;
      case "delete":
        sim.server.delete(simNamespace, command.name);
        break;
      case "label":
        if (stored.ok)
          sim.server.patch(simNamespace, command.name, { metadata: { labels: { touched: "yes" } } });
        break;
      case "foreign":
        if (
          stored.ok &&
          metaOf(stored.value).deletionTimestamp === undefined &&
          !(metaOf(stored.value).finalizers ?? []).includes(foreign)
        ) {
          sim.server.patch(simNamespace, command.name, {
            metadata: { finalizers: [...(metaOf(stored.value).finalizers ?? []), foreign] },
          });
        }
        break;
    }
    sim.controller.advanceAndRun(settleMs);
  }
  const finals: Record<string, unknown> = {};
  for (const object of sim.server.list()) finals[metaOf(object).name] = finalOf(object);
  return { histories: historyOf(events), finals };
};

const runForReal = async (kc: KubeConfig, commands: ReadonlyArray<Command>): Promise<Observed> => {
  const api = kc.makeApiClient(CustomObjectsApi);
  const namespace = await createTestNamespace(kc, "diff");
  const handlers = scriptedHandlers();
  const controller = await startController(kc, handlers.registry, timing, namespace);
  const events: Event[] = [];
  const { Watch } = await import("@kubernetes/client-node");
  const watch = await new Watch(kc).watch(
    `/apis/druid.gardener.cloud/v1alpha1/namespaces/${namespace}/etcdopstasks`,
    {},
    (type, object) => events.push({ type, object: object as JsonObject }),
    () => undefined,
  );
  const read = async (name: string): Promise<JsonObject | undefined> => {
    try {
      return (await api.getNamespacedCustomObject({ ...group, namespace, name })) as JsonObject;
    } catch {
      return undefined;
    }
  };
  try {
    for (const command of commands) {
      const stored = await read(command.name);
      switch (command.kind) {
        case "create":
          if (stored !== undefined) break;
          handlers.scripts.set(command.name, { execute: executeSteps(command.plan) });
          await api.createNamespacedCustomObject({
            ...group,
            namespace,
            body: {
              ...taskObject(command.name, { etcd: command.etcd, ttl: command.ttl }),
              metadata: { name: command.name, namespace },
            },
          });
          break;
        case "delete":
          await api
            .deleteNamespacedCustomObject({ ...group, namespace, name: command.name })
            .catch(() => undefined);
          break;
        case "label":
          if (stored !== undefined) {
            await api
              .patchNamespacedCustomObject({
                ...group,
                namespace,
                name: command.name,
                body: [{ op: "add", path: "/metadata/labels", value: { touched: "yes" } }],
              })
              .catch(() => undefined);
          }
          break;
        case "foreign":
          if (
            stored !== undefined &&
            metaOf(stored).deletionTimestamp === undefined &&
            !(metaOf(stored).finalizers ?? []).includes(foreign)
          ) {
            const finalizers = metaOf(stored).finalizers ?? [];
            await api
              .patchNamespacedCustomObject({
                ...group,
                namespace,
                name: command.name,
                body:
                  finalizers.length === 0
                    ? [{ op: "add", path: "/metadata/finalizers", value: [foreign] }]
                    : [{ op: "add", path: "/metadata/finalizers/-", value: foreign }],
              })
              .catch(() => undefined);
          }
          break;
      }
      await new Promise((resolve) => setTimeout(resolve, settleMs));
    }
    const finals: Record<string, unknown> = {};
    const list = (await api.listNamespacedCustomObject({ ...group, namespace })) as { items: JsonObject[] };
    for (const object of list.items) finals[metaOf(object).name] = finalOf(object);
    return { histories: historyOf(events), finals };
  } finally {
    watch.abort();
    await controller.stop();
  }
};

describe("differential: memory interpreter vs real API server", () => {
  let kc: KubeConfig;
  beforeAll(() => {
    kc = cluster().makeKubeConfig();
  });
  afterAll(() => undefined);

  it("agrees on state sequences, writes by kind and final objects", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(commandArb, { minLength: 1, maxLength: 5 }), async (commands) => {
        const memory = runInMemory(commands);
        const real = await runForReal(kc, commands);
        if (process.env.OPSTASK_DIFFERENTIAL_SHOW === "1")
          console.log(JSON.stringify({ commands, memory }, null, 1));
        expect(real).toEqual(memory);
      }),
      { numRuns: Number(process.env.OPSTASK_DIFFERENTIAL_RUNS ?? 6), endOnFailure: true },
    );
  }, 600_000);
});
