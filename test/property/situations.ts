/**
 * Every situation a reconcile pass can start in that takes a different first branch of the task
 * machine, and every event a pass can be told after it started: the inputs of the machine's path tests.
 */
import type { TaskStatus } from "../../src/api/status.ts";
import { etcdOpsTaskKind } from "../../src/etcd/api/etcdopstask-kind.ts";
import type { DeleteEvent, PhaseEvent, ReconcileEvent } from "../../src/machine/task-machine.ts";
import { toWireTime } from "../../src/machine/time.ts";
import type { PassInput, Phase, TaskObservation } from "../../src/machine/types.ts";
import { lifecycleConfig } from "../../src/reconcile/defaults.ts";
import { epoch } from "../support/simulation.ts";

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
export const situations: Record<string, PassInput> = {
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
  cancelled: input({ task: { ...claimed, cancel: { by: "alice" } } }),
  "cancelled, in progress": input({ task: { ...claimed, status: inProgress, cancel: { by: "alice" } } }),
  "blocked by an older task (reject)": input({ task: claimed, peers: [olderPeer] }),
  "queued past its queue deadline": input({
    task: claimed,
    peers: [olderPeer],
    config: { ...config, duplicatePolicy: "queue", queueDeadlineMs: 30_000 },
  }),
  "blocked by an older task (queue)": input({
    task: claimed,
    peers: [olderPeer],
    config: { ...config, duplicatePolicy: "queue" },
  }),
  "expedited, behind a working peer (reject)": input({
    task: { ...claimed, expedited: true },
    peers: [{ ...olderPeer, state: "InProgress" }],
  }),
  "expedited, beside an exclusive peer": input({
    task: { ...claimed, expedited: true },
    peers: [{ ...olderPeer, state: "InProgress", activity: "exclusive" }],
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
export const reconcile: ReconcileEvent = { type: "reconcile" };
/** What a pass can be told after it started: handler results and the answer to the TTL's DELETE. */
export type PathEvent = PhaseEvent | DeleteEvent;
export const events: Array<PathEvent | ReconcileEvent> = [
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
