/**
 * Benchmark of the pure core. Prints figures; asserts nothing.
 *
 *   1. Cost of one reconcile pass (decode the object → observe → machine → effects) for the
 *      situations a controller meets most, beside a hand-written switch reducer of the same decisions.
 *   2. API writes per task lifecycle, counted by the memory interpreter (etcd-druid: 11 on the happy path).
 *
 * Run: scripts/bench core   (or: node bench/core.ts)
 */
import { performance } from "node:perf_hooks";
import type { TaskStatus } from "../src/api/status.ts";
import { etcdOpsTaskKind } from "../src/etcd/api/etcdopstask-kind.ts";
import { etcdHandlers } from "../src/etcd/registry.ts";
import { supportedMembers } from "../src/handlers/handler.ts";
import type { Behaviour } from "../src/interpreters/memory/controller.ts";
import type { JsonObject } from "../src/interpreters/memory/merge-patch.ts";
import { toWireTime } from "../src/machine/time.ts";
import type { PassInput, Phase } from "../src/machine/types.ts";
import { lifecycleConfig } from "../src/reconcile/defaults.ts";
import { observe } from "../src/reconcile/observe.ts";
import { Answer, driveSync, type PassRequest, start } from "../src/reconcile/pass.ts";
import {
  completed,
  epoch,
  namespace,
  simulation,
  taskObject,
  transient,
} from "../test/support/simulation.ts";
import { switchReducer } from "./switch-reducer.ts";

const config = lifecycleConfig(etcdOpsTaskKind);
const now = epoch + 5_000;
const supported = supportedMembers(etcdHandlers);

const stored = (changes: {
  finalizers?: string[];
  status?: TaskStatus;
  deletionTimestamp?: string;
}): JsonObject => {
  const base = taskObject("t", { etcd: "e1", ttl: 3600 });
  return {
    ...base,
    metadata: {
      ...(base.metadata as JsonObject),
      uid: "uid-1",
      resourceVersion: "42",
      generation: 1,
      creationTimestamp: toWireTime(epoch),
      ...(changes.finalizers === undefined ? {} : { finalizers: changes.finalizers }),
      ...(changes.deletionTimestamp === undefined ? {} : { deletionTimestamp: changes.deletionTimestamp }),
    },
    ...(changes.status === undefined ? {} : { status: changes.status as JsonObject }),
  };
};

const inProgress: TaskStatus = {
  state: "InProgress",
  startedAt: toWireTime(epoch),
  lastTransitionTime: toWireTime(epoch),
  lastOperation: {
    type: "Execution",
    state: "InProgress",
    description: "Task Execution phase is in progress",
    runID: "r",
    lastUpdateTime: toWireTime(epoch),
  },
};
const finalizers = [config.finalizer];

const situations: Record<string, JsonObject> = {
  "new task (claim + admit call)": stored({}),
  "InProgress task (execute call)": stored({ finalizers, status: inProgress }),
  "settled Succeeded task (TTL wait, no-op)": stored({
    finalizers,
    status: { ...inProgress, state: "Succeeded" },
  }),
  "deleted task (cleanup call)": stored({
    finalizers,
    status: { ...inProgress, state: "Succeeded" },
    deletionTimestamp: toWireTime(now),
  }),
};

const inputOf = (object: JsonObject): PassInput => {
  const decoded = etcdOpsTaskKind.decode(object);
  if (!decoded.ok) throw new Error(decoded.failure.errors.join("\n"));
  const facts = etcdOpsTaskKind.facts(decoded.task);
  return { task: observe(facts, supported), peers: [], now, runId: "bench", retries: 0, config };
};

/** Requests up to the first that needs an answer (a handler call, a DELETE), or the pass's end. */
const machineFirstStep = (object: JsonObject) => {
  const requests: PassRequest[] = [];
  const last = driveSync(start(inputOf(object)), (request) => {
    requests.push(request);
    return request._tag === "RunPhase" || request._tag === "DeleteTask"
      ? Answer.Suspend()
      : Answer.Done({ now });
  });
  return last._tag === "End" ? [...requests, last.end] : requests;
};
const switchFirstStep = (object: JsonObject) => switchReducer(inputOf(object));

const time = (fn: () => unknown, minMs = 400): { perSecond: number; microseconds: number } => {
  for (let i = 0; i < 200; i += 1) fn();
  let runs = 0;
  const start = performance.now();
  let elapsed = 0;
  while (elapsed < minMs) {
    for (let i = 0; i < 100; i += 1) fn();
    runs += 100;
    elapsed = performance.now() - start;
  }
  return { perSecond: (runs / elapsed) * 1000, microseconds: (elapsed * 1000) / runs };
};

const format = (n: number, digits = 1) => n.toLocaleString("en-US", { maximumFractionDigits: digits });

console.log("## Pure core: one reconcile pass (decode → observe → transition → effects)\n");
console.log(
  "| situation | machine passes/s | machine µs/pass | switch passes/s | switch µs/pass | same effects |",
);
console.log("|---|---:|---:|---:|---:|---|");
for (const [name, object] of Object.entries(situations)) {
  const machine = time(() => machineFirstStep(object));
  const baseline = time(() => switchFirstStep(object));
  const same = JSON.stringify(machineFirstStep(object)) === JSON.stringify(switchFirstStep(object));
  console.log(
    `| ${name} | ${format(machine.perSecond, 0)} | ${format(machine.microseconds)} | ${format(baseline.perSecond, 0)} | ${format(baseline.microseconds)} | ${same ? "yes" : "NO"} |`,
  );
}
const decodeOnly = time(() => etcdOpsTaskKind.decode(situations["InProgress task (execute call)"]));
console.log(`\nOf which decoding the object alone: ${format(decodeOnly.microseconds)} µs.`);

// ---- writes per lifecycle ---------------------------------------------------------------------

const failing: Behaviour = {
  kind: "return",
  outcome: {
    kind: "failed",
    description: "Failed to create snapshot",
    error: {
      code: "ERR_CREATE_SNAPSHOT",
      message: "failed to create snapshot",
      cause: "failed to create snapshot, status code: 500",
    },
  },
};

const lifecycle = (
  name: string,
  plan: Partial<Record<Phase, Behaviour[]>>,
  setup?: (s: ReturnType<typeof simulation>) => void,
  userDelete = false,
) => {
  const queues = {
    admit: [...(plan.admit ?? [])],
    execute: [...(plan.execute ?? [])],
    cleanup: [...(plan.cleanup ?? [])],
  };
  // Only the measured task follows the plan; any other task (a duplicate's rival) runs until the end.
  const sim = simulation((task, phase) =>
    task.metadata.name !== name
      ? phase === "execute"
        ? { kind: "hang" }
        : completed("ok")
      : (queues[phase].shift() ?? completed(phase === "execute" ? "Snapshot created successfully" : "ok")),
  );
  setup?.(sim);
  sim.server.create(taskObject(name, { etcd: "e1", ttl: 10 }));
  sim.controller.advanceAndRun(1_000);
  if (userDelete) sim.server.delete(namespace, name);
  sim.controller.advanceAndRun(120_000);
  const writes = sim.controller.writes.filter((w) => w.name === name);
  const byKind = new Map<string, number>();
  for (const w of writes) byKind.set(w.effect, (byKind.get(w.effect) ?? 0) + 1);
  const passes = sim.controller.passes.filter((p) => p.name === name).length;
  const events = sim.controller.events.filter((e) => e.name === name).length;
  return { writes: writes.length, byKind, passes, events, gone: !sim.server.get(namespace, name).ok };
};

const rows: Array<[string, ReturnType<typeof lifecycle>]> = [
  ["happy path, deleted after TTL", lifecycle("t", {})],
  [
    "rejected (duplicate), deleted after TTL",
    lifecycle("t", {}, (s) => {
      s.server.create(taskObject("older", { etcd: "e1", ttl: 3600 }));
      s.controller.runUntilIdle();
    }),
  ],
  ["failed (non-200), deleted after TTL", lifecycle("t", { execute: [failing] })],
  ["3 transient errors, then success", lifecycle("t", { execute: [transient, transient, transient] })],
  ["deleted by the user while InProgress", lifecycle("t", { execute: [{ kind: "hang" }] }, undefined, true)],
];

console.log("\n## API writes per task lifecycle (memory interpreter; etcd-druid: 11 on the happy path)\n");
console.log(
  "| lifecycle | writes | finalizer add | status patches | DELETE | finalizer removal | passes | Events | gone |",
);
console.log("|---|---:|---:|---:|---:|---:|---:|---:|---|");
for (const [name, r] of rows) {
  const n = (k: string) => r.byKind.get(k) ?? 0;
  console.log(
    `| ${name} | ${r.writes} | ${n("AddFinalizer")} | ${n("PatchStatus")} | ${n("DeleteTask")} | ${n("RemoveFinalizer")} | ${r.passes} | ${r.events} | ${r.gone ? "yes" : "no"} |`,
  );
}
const noop = simulation(() => completed("ok"));
noop.server.create(taskObject("t", { etcd: "e1", ttl: 3600 }));
noop.controller.runUntilIdle();
const before = noop.controller.writes.length;
const passesBefore = noop.controller.passes.length;
noop.server.patch(namespace, "t", { metadata: { labels: { touched: "yes" } } });
noop.controller.runUntilIdle();
console.log(
  `\nNo-op reconcile (a label edit on a settled task): ${noop.controller.writes.length - before} writes in ${noop.controller.passes.length - passesBefore} pass(es).`,
);
