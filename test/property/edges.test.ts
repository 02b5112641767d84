/**
 * (h) Every edge of the machine is exercised. For each situation a task can be in when a pass starts,
 * `xstate/graph` enumerates the shortest paths over all handler results; each path is replayed twice:
 * through an inspected actor (which reports the exact transitions taken, guards included) and through
 * the pass driver against the memory API server (whose writes must all apply). The union of the
 * transitions taken must be every transition of the machine definition.
 */

import { describe, expect, it } from "vitest";
import { createActor, type InspectionEvent } from "xstate";
import { getShortestPaths } from "xstate/graph";
import type { TaskStatus } from "../../src/api/status.ts";
import { isPassEnd } from "../../src/effects/task-effect.ts";
import { etcdOpsTaskKind } from "../../src/etcd/api/etcdopstask-kind.ts";
import { MemoryApiServer } from "../../src/interpreters/memory/api-server.ts";
import { FakeClock } from "../../src/interpreters/memory/clock.ts";
import type { JsonObject } from "../../src/interpreters/memory/merge-patch.ts";
import { performWrite } from "../../src/interpreters/memory/perform-write.ts";
import { type Edge, edgeKey, machineEdges } from "../../src/machine/edges.ts";
import {
  type DeleteEvent,
  type PhaseEvent,
  type ReconcileEvent,
  taskMachine,
} from "../../src/machine/task-machine.ts";
import { toWireTime } from "../../src/machine/time.ts";
import type { PassInput, Phase, PhaseOutcome, TaskObservation } from "../../src/machine/types.ts";
import { lifecycleConfig } from "../../src/reconcile/defaults.ts";
import { Answer, driveSync, start } from "../../src/reconcile/pass.ts";
import { epoch, taskObject } from "../support/simulation.ts";

const finalizer = etcdOpsTaskKind.finalizer;
const foreign = "example.com/keep";
const now = epoch + 60_000;
const config = lifecycleConfig(etcdOpsTaskKind, { requeueIntervalMs: 5_000 });
const withDeadline = { ...config, phaseDeadlineMs: 30_000 };

const task: TaskObservation = {
  namespace: "default",
  name: "t",
  uid: "uid-1",
  createdAt: epoch,
  finalizers: [],
  ttlSeconds: 10,
  group: "e1",
  status: {},
};

const inProgress: TaskStatus = {
  state: "InProgress",
  startedAt: toWireTime(now - 1_000),
  lastTransitionTime: toWireTime(now - 1_000),
  lastOperation: {
    type: "Execution",
    state: "InProgress",
    description: "Task Execution phase is in progress",
    runID: "r0",
    lastUpdateTime: toWireTime(now - 1_000),
  },
};
const succeeded = (at: number): TaskStatus => ({
  ...inProgress,
  state: "Succeeded",
  lastTransitionTime: toWireTime(at),
});
const rejected: TaskStatus = { state: "Rejected", lastTransitionTime: toWireTime(now - 1_000) };

const input = (
  changes: Omit<Partial<PassInput>, "task"> & { task?: Partial<TaskObservation> } = {},
): PassInput => ({
  peers: [],
  now,
  runId: "run-graph",
  retries: 0,
  config,
  ...changes,
  task: { ...task, ...changes.task },
});

const claimed: Partial<TaskObservation> = { finalizers: [finalizer] };
const olderPeer = {
  name: "older",
  uid: "uid-0",
  createdAt: epoch - 1_000,
  state: "Pending" as const,
  deleting: false,
};
const known = (phase: Phase) => ({
  phase,
  outcome: { kind: "completed" as const, description: "remembered" },
});

/** Every situation a pass can start in that takes a different first branch. */
const situations: Record<string, PassInput> = {
  "new task": input(),
  "claimed, not yet admitted": input({ task: claimed }),
  "in progress": input({ task: { ...claimed, status: inProgress } }),
  "in progress, finalizer removed by hand": input({ task: { status: inProgress } }),
  "succeeded, TTL running": input({ task: { ...claimed, status: succeeded(now - 1_000) } }),
  "succeeded, TTL over": input({ task: { ...claimed, status: succeeded(now - 20_000) } }),
  "succeeded, TTL over, finalizer removed by hand": input({ task: { status: succeeded(now - 20_000) } }),
  "succeeded, deleted": input({
    task: { ...claimed, status: succeeded(now - 1_000), deletingSince: now - 500 },
  }),
  "succeeded, deleted, held by another finalizer": input({
    task: { finalizers: [finalizer, foreign], status: succeeded(now - 1_000), deletingSince: now - 500 },
  }),
  "rejected, deleted": input({ task: { ...claimed, status: rejected, deletingSince: now - 500 } }),
  "deleted, cleanup already recorded": input({
    task: {
      finalizers: [finalizer, foreign],
      deletingSince: now - 500,
      status: {
        ...succeeded(now - 1_000),
        lastOperation: {
          type: "Cleanup",
          state: "Completed",
          description: "Cleanup completed",
          runID: "r1",
          lastUpdateTime: toWireTime(now - 400),
        },
      },
    },
  }),
  "deleted, not ours": input({ task: { finalizers: [foreign], deletingSince: now - 500 } }),
  "written by a newer machine": input({ task: { ...claimed, machineVersion: 99 } }),
  "unsupported config": input({
    task: {
      ...claimed,
      unsupported: { code: "ERR_UNSUPPORTED_TASK", reason: "config member x is not supported" },
    },
  }),
  "unsupported config, in progress": input({
    task: {
      ...claimed,
      status: inProgress,
      unsupported: { code: "ERR_UNSUPPORTED_TASK", reason: "config member x is not supported" },
    },
  }),
  "blocked by an older task (reject)": input({ task: claimed, peers: [olderPeer] }),
  "blocked by an older task (queue)": input({
    task: claimed,
    peers: [olderPeer],
    config: { ...config, duplicatePolicy: "queue" },
  }),
  "admission past its deadline": input({
    task: { ...claimed, createdAt: now - 60_000 },
    config: withDeadline,
  }),
  "execution past its deadline": input({
    task: { ...claimed, status: { ...inProgress, startedAt: toWireTime(now - 60_000) } },
    config: withDeadline,
  }),
  "cleanup past its deadline": input({
    task: { ...claimed, status: succeeded(now - 90_000), deletingSince: now - 60_000 },
    config: withDeadline,
  }),
  // The pass starts 10s before `now`, inside the deadline; a retry answered at `now` is past it.
  "admission answered past its deadline": input({
    now: now - 10_000,
    task: { ...claimed, createdAt: now - 35_000 },
    config: withDeadline,
  }),
  "execution answered past its deadline": input({
    now: now - 10_000,
    task: { ...claimed, status: { ...inProgress, startedAt: toWireTime(now - 35_000) } },
    config: withDeadline,
  }),
  "cleanup answered past its deadline": input({
    now: now - 10_000,
    task: { ...claimed, status: succeeded(now - 90_000), deletingSince: now - 35_000 },
    config: withDeadline,
  }),
  "admission backing off": input({ task: claimed, retries: 2, retryAt: now + 40 }),
  "execution backing off": input({ task: { ...claimed, status: inProgress }, retries: 2, retryAt: now + 40 }),
  "cleanup backing off": input({
    task: { ...claimed, status: succeeded(now - 1_000), deletingSince: now - 500 },
    retries: 1,
    retryAt: now + 20,
  }),
  "TTL over, its DELETE backing off": input({
    task: { ...claimed, status: succeeded(now - 20_000) },
    retries: 1,
    retryAt: now + 20,
  }),
  "admit result known": input({ task: claimed, known: known("admit") }),
  "execute result known": input({ task: { ...claimed, status: inProgress }, known: known("execute") }),
  "cleanup result known": input({
    task: { ...claimed, status: succeeded(now - 1_000), deletingSince: now - 500 },
    known: known("cleanup"),
  }),
};

const error = { code: "ERR_X", message: "x failed", cause: "because" };
const reconcile: ReconcileEvent = { type: "reconcile" };
/** What a pass can be told after it started: handler results and the answer to the TTL's DELETE. */
type PathEvent = PhaseEvent | DeleteEvent;
const events: Array<PathEvent | ReconcileEvent> = [
  reconcile,
  { type: "delete.done", now },
  { type: "delete.failed", now, cause: "the server is currently unable to handle the request" },
  ...(["admit", "execute", "cleanup"] as const).flatMap((phase): PhaseEvent[] => [
    { type: "phase.completed", phase, now, description: `${phase} done` },
    { type: "phase.failed", phase, now, description: `${phase} failed`, error },
    { type: "phase.retry", phase, now, description: `${phase} retry`, error },
    { type: "phase.retry", phase, now, description: `${phase} polling`, afterMs: 1_000 },
  ]),
];

const outcomeOf = (event: PhaseEvent): PhaseOutcome => {
  switch (event.type) {
    case "phase.completed":
      return { kind: "completed", description: event.description };
    case "phase.failed":
      return { kind: "failed", description: event.description, error: event.error };
    case "phase.retry":
      return {
        kind: "retry",
        description: event.description,
        ...(event.error === undefined ? {} : { error: event.error }),
        ...(event.afterMs === undefined ? {} : { afterMs: event.afterMs }),
      };
  }
};

/** The transitions an actor takes for `path`, with their guards, as the inspector reports them. */
const transitionsTaken = (start: PassInput, path: ReadonlyArray<PathEvent>): Edge[] => {
  const taken: Edge[] = [];
  const inspect = (event: InspectionEvent) => {
    if (event.type !== "@xstate.microstep") return;
    for (const t of event._transitions) {
      for (const target of t.target ?? []) {
        let leaf = target;
        while (leaf.type === "compound" && leaf.initial.target[0] !== undefined)
          leaf = leaf.initial.target[0];
        const guard = t.guard;
        const guardName =
          typeof guard === "string"
            ? guard
            : typeof guard === "object" && guard !== null && "type" in guard
              ? String(guard.type)
              : guard === undefined
                ? undefined
                : "inline";
        taken.push({
          from: t.source.path.join("."),
          event: t.eventType === "" ? "always" : String(t.eventType),
          to: leaf.path.join("."),
          ...(guardName === undefined ? {} : { guard: guardName }),
        });
      }
    }
  };
  const actor = createActor(taskMachine, { input: start, inspect });
  actor.start();
  actor.send(reconcile);
  for (const event of path) actor.send(event);
  actor.stop();
  return taken;
};

/** The situation as a stored object, so that the pass's writes meet a real (memory) API server. */
const seed = (start: PassInput): { server: MemoryApiServer; object: JsonObject } => {
  const clock = new FakeClock(start.task.createdAt);
  const server = new MemoryApiServer({
    resource: "etcdopstasks.druid.gardener.cloud",
    now: () => clock.now(),
  });
  const created = server.create(taskObject(start.task.name, { etcd: "e1", ttl: start.task.ttlSeconds }));
  if (!created.ok) throw new Error(created.error.message);
  const { name, namespace } = start.task;
  if (start.task.finalizers.length > 0)
    server.patch(namespace, name, { metadata: { finalizers: [...start.task.finalizers] } });
  if (Object.keys(start.task.status).length > 0)
    server.patchStatus(namespace, name, { status: start.task.status as JsonObject });
  if (start.task.deletingSince !== undefined) {
    clock.set(Math.max(clock.now(), start.task.deletingSince));
    server.delete(namespace, name);
  }
  const stored = server.get(namespace, name);
  if (!stored.ok) throw new Error(stored.error.message);
  return { server, object: stored.value };
};

/** Runs the pass for `path` through the driver, performing its writes; returns what went wrong, if anything. */
const replayThroughMemory = (start_: PassInput, path: ReadonlyArray<PathEvent>): string | undefined => {
  const { server } = seed(start_);
  let object = seed(start_).object;
  const results = [...path];
  let problem: string | undefined;
  /** Stops the pass here: the path ends at this request, or something went wrong. */
  const stop = (why?: string): Answer => {
    problem = why;
    return Answer.Suspend();
  };
  const write = (effect: Parameters<typeof performWrite>[2], at: number): Answer => {
    const written = performWrite(server, object, effect);
    if (written.kind === "failed") return stop(`${effect._tag}: ${written.reason}`);
    if (written.kind === "gone") return Answer.Gone();
    if (written.object !== undefined) object = written.object;
    return Answer.Done({ now: at });
  };
  const last = driveSync(
    start({ ...start_, task: { ...start_.task, uid: String((object.metadata as JsonObject).uid) } }),
    (request) => {
      if (request._tag === "RecordEvent") return Answer.Done({ now: start_.now });
      if (request._tag === "RunPhase") {
        const result = results.shift();
        if (result === undefined) return stop(); // the path stops at this call
        if (!result.type.startsWith("phase.")) return stop(`a ${result.type} answer to a handler call`);
        return Answer.Returned({ outcome: outcomeOf(result as PhaseEvent), now: result.now });
      }
      if (request._tag === "DeleteTask") {
        const result = results.shift();
        if (result === undefined) return stop(); // the path stops at the DELETE
        if (result.type === "delete.failed") return Answer.Failed({ cause: result.cause, now: result.now });
        if (result.type !== "delete.done") return stop(`a ${result.type} answer to a DELETE`);
        const written = write(request, result.now);
        // The object went at once (no finalizer left): the machine still hears that its DELETE is done.
        return written._tag === "Gone" ? Answer.Done({ now: result.now }) : written;
      }
      return write(request, start_.now);
    },
  );
  if (last._tag === "End") {
    const ends = last.pass.pending.filter(isPassEnd);
    return ends.length === 1 ? undefined : `${ends.length} pass ends`;
  }
  if (last._tag === "Stopped") return last.stopped._tag === "Gone" ? undefined : last.stopped.cause;
  return problem;
};

describe("(h) every edge of the task machine", () => {
  const covered = new Set<string>();
  const guarded = (edge: Edge) => `${edgeKey(edge)} [${edge.guard ?? ""}]`;

  for (const [name, start] of Object.entries(situations)) {
    it(`replays every shortest path from: ${name}`, () => {
      const paths = getShortestPaths(taskMachine, { input: start, events });
      expect(paths.length).toBeGreaterThan(0);
      for (const path of paths) {
        const sent = path.steps
          .map((step) => step.event)
          .filter(
            (event): event is PathEvent =>
              event.type.startsWith("phase.") || event.type.startsWith("delete."),
          );
        for (const edge of transitionsTaken(start, sent)) covered.add(guarded(edge));
        expect(
          replayThroughMemory(start, sent),
          `${name}: ${sent.map((e) => ("phase" in e ? `${e.phase}:${e.type}` : e.type)).join(" → ")}`,
        ).toBeUndefined();
      }
    });
  }

  it("covers all of them", () => {
    const missing = machineEdges()
      .map(guarded)
      .filter((edge) => !covered.has(edge));
    expect(missing).toEqual([]);
  });
});
