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
import { isPassEnd } from "../../src/effects/task-effect.ts";
import { MemoryApiServer } from "../../src/interpreters/memory/api-server.ts";
import { FakeClock } from "../../src/interpreters/memory/clock.ts";
import type { JsonObject } from "../../src/interpreters/memory/merge-patch.ts";
import { performWrite } from "../../src/interpreters/memory/perform-write.ts";
import { type Edge, edgeKey, machineEdges } from "../../src/machine/edges.ts";
import { type PhaseEvent, taskMachine } from "../../src/machine/task-machine.ts";
import type { PassInput, PhaseOutcome } from "../../src/machine/types.ts";
import { Answer, driveSync, start } from "../../src/reconcile/pass.ts";
import { taskObject } from "../support/simulation.ts";
import { events, type PathEvent, reconcile, situations } from "./situations.ts";

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
