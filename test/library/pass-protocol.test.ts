/**
 * The pass protocol as a library user drives it, importing only the package's entries (the pass
 * protocol is `opstask/advanced`, the outcome type the root's): a whole
 * lifecycle — claim, admit, execute, TTL, DELETE, cleanup, release — pass by pass, each request
 * performed by the test itself (the object between passes is folded from what was performed).
 */
import { describe, expect, it } from "vitest";
import {
  Answer,
  driveSync,
  lifecycleConfig,
  type PassInput,
  type PassRequest,
  type Step,
  start,
  type TaskObservation,
} from "../../src/advanced.ts";
import type { PhaseOutcome } from "../../src/index.ts";
import { choreKind } from "./new-kind/chore-kind.ts";

const config = lifecycleConfig(choreKind);
const epoch = Date.UTC(2026, 10, 24, 12, 0, 0);

/** One pass from `task` at `now`: every write succeeds, handler phases get `outcomes` in order. */
const pass = (task: TaskObservation, now: number, outcomes: PhaseOutcome[]) => {
  const performed: PassRequest[] = [];
  const input: PassInput = { task, peers: [], now, runId: `run-${now}`, retries: 0, config };
  const last: Step = driveSync(start(input), (request) => {
    performed.push(request);
    if (request._tag !== "RunPhase") return Answer.Done({ now });
    const outcome = outcomes.shift();
    if (outcome === undefined) throw new Error(`no outcome for ${request.phase}`);
    return Answer.Returned({ outcome, now });
  });
  if (last._tag !== "End") throw new Error(`the pass did not end: ${last._tag}`);
  let finalizers = [...task.finalizers];
  let deletingSince = task.deletingSince;
  for (const request of performed) {
    if (request._tag === "AddFinalizer") finalizers = [...finalizers, request.finalizer];
    if (request._tag === "RemoveFinalizer") finalizers = finalizers.filter((f) => f !== request.finalizer);
    if (request._tag === "DeleteTask") deletingSince = now;
  }
  const next: TaskObservation = {
    ...task,
    finalizers,
    status: last.pass.snapshot.context.persisted,
    ...(deletingSince === undefined ? {} : { deletingSince }),
  };
  return {
    next,
    end: last.end,
    requests: performed.map((r) => (r._tag === "RunPhase" ? `RunPhase:${r.phase}` : r._tag)),
  };
};

describe("the exported pass protocol", () => {
  it("drives a task from creation to its deletion after the TTL", () => {
    const created: TaskObservation = {
      namespace: "default",
      name: "p",
      uid: "uid-p",
      createdAt: epoch,
      finalizers: [],
      ttlSeconds: 30,
      status: {},
    };
    const first = pass(created, epoch + 1_000, [
      { kind: "completed", description: "Target named" },
      { kind: "completed", description: "Pinged db" },
    ]);
    expect(first.requests).toEqual([
      "AddFinalizer",
      "RunPhase:admit",
      "PatchStatus",
      "RecordEvent",
      "RunPhase:execute",
      "PatchStatus",
      "RecordEvent",
    ]);
    expect(first.next.status.state).toBe("Succeeded");
    expect(first.end).toMatchObject({ _tag: "RequeueAfter", reason: "ttl" });

    // Before the TTL: nothing to do.
    const waiting = pass(first.next, epoch + 10_000, []);
    expect(waiting.requests).toEqual([]);

    // After it: DELETE (answered Done), cleanup, and the finalizer goes.
    const expired = pass(first.next, epoch + 1_000 + 31_000, [
      { kind: "completed", description: "Cleaned up" },
    ]);
    expect(expired.requests).toEqual(["DeleteTask", "RecordEvent", "RunPhase:cleanup", "RemoveFinalizer"]);
    expect(expired.next.finalizers).toEqual([]);
    expect(expired.next.deletingSince).toBeDefined();
  });
});
