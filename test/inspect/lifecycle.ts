/**
 * Drives one task through its lifecycle pass by pass, as the controller does (start, perform each
 * effect, deliver handler results), and reports every finished pass to an observer. The object between
 * passes is folded from the effects performed: the status as persisted, our finalizer, the deletion.
 */

import type { TaskEffect } from "../../src/effects/task-effect.ts";
import { etcdOpsTaskKind } from "../../src/etcd/api/etcdopstask-kind.ts";
import { fromWireTime } from "../../src/machine/time.ts";
import type { PassInput, PhaseOutcome, TaskObservation } from "../../src/machine/types.ts";
import { lifecycleConfig } from "../../src/reconcile/defaults.ts";
import { Answer, driveSync, type Pass, start } from "../../src/reconcile/pass.ts";
import type { ControllerObserver } from "../../src/runtime/metrics.ts";

export const epoch = Date.UTC(2026, 10, 22, 12, 0, 0);
const config = lifecycleConfig(etcdOpsTaskKind, { requeueIntervalMs: 5_000 });

export interface TaskRef {
  readonly key: string;
  readonly uid: string;
}

export const newTask = (name: string, uid: string): TaskObservation => ({
  namespace: "default",
  name,
  uid,
  createdAt: epoch,
  finalizers: [],
  ttlSeconds: 30,
  group: `etcd-${name}`,
  status: {},
});

/** One pass: handler calls get `outcomes` in order; the effects performed are returned with the pass. */
export const runPass = (
  input: PassInput,
  outcomes: ReadonlyArray<PhaseOutcome>,
): { pass: Pass; performed: TaskEffect[] } => {
  const results = [...outcomes];
  const performed: TaskEffect[] = [];
  let now = input.now;
  const last = driveSync(start(input), (request) => {
    if (request._tag !== "RunPhase") {
      performed.push(request);
      // Every write succeeds; the DELETE is done: the machine goes on to cleanup, or lets the object go.
      return Answer.Done({ now });
    }
    const outcome = results.shift();
    if (outcome === undefined) throw new Error(`no outcome scripted for ${request.phase}`);
    now += 500;
    return Answer.Returned({ outcome, now });
  });
  if (last._tag !== "End") throw new Error(`the pass did not end: ${last._tag}`);
  return { pass: last.pass, performed };
};

/** The object after the pass's effects were performed. */
export const observe = (task: TaskObservation, pass: Pass, performed: ReadonlyArray<TaskEffect>) => {
  let finalizers = [...task.finalizers];
  let deletingSince = task.deletingSince;
  let machineVersion = task.machineVersion;
  for (const effect of performed) {
    if (effect._tag === "AddFinalizer") {
      finalizers = [...finalizers, effect.finalizer];
      machineVersion = effect.machineVersion;
    }
    if (effect._tag === "RemoveFinalizer") finalizers = finalizers.filter((f) => f !== effect.finalizer);
    if (effect._tag === "DeleteTask") deletingSince = pass.snapshot.context.now;
  }
  const next: TaskObservation = {
    ...task,
    finalizers,
    status: pass.snapshot.context.persisted,
    ...(deletingSince === undefined ? {} : { deletingSince }),
    ...(machineVersion === undefined ? {} : { machineVersion }),
  };
  return { task: next, gone: deletingSince !== undefined && finalizers.length === 0 };
};

const completed = (description: string): PhaseOutcome => ({ kind: "completed", description });

/**
 * new task: admitted, execution asks to be polled → poll pass: execution completes, TTL retention →
 * TTL pass: expired, deleted, cleanup completes, finalizer released (the object is gone).
 */
export const driveLifecycle = (
  ref: TaskRef,
  task: TaskObservation,
  observer: Pick<ControllerObserver, "passTransitions">,
): Pass[] => {
  const passes: Pass[] = [];
  let current = task;
  let runs = 0;
  const pass = (now: number, outcomes: ReadonlyArray<PhaseOutcome>) => {
    runs += 1;
    const input: PassInput = { task: current, peers: [], now, runId: `run-${runs}`, retries: 0, config };
    const result = runPass(input, outcomes);
    observer.passTransitions?.({ ...ref, runId: input.runId }, result.pass);
    passes.push(result.pass);
    const next = observe(current, result.pass, result.performed);
    current = next.task;
    return next.gone;
  };
  pass(epoch + 1_000, [
    completed("admitted"),
    { kind: "retry", description: "snapshot job running", afterMs: 5_000 },
  ]);
  pass(epoch + 7_000, [completed("snapshot taken")]);
  const finished = fromWireTime(current.status.lastTransitionTime) ?? epoch;
  pass(finished + current.ttlSeconds * 1_000 + 1_000, [completed("cleaned up")]);
  return passes;
};
