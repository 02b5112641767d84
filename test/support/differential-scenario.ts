/**
 * The scenarios the differential test runs in both worlds: a user's commands, each followed by a
 * quiet time long enough for everything it started to settle, and a controller restart among them.
 */
import fc from "fast-check";
import type { Step } from "./controller.ts";

export const ourFinalizer = "druid.gardener.cloud/etcd-ops-task";
export const foreignFinalizer = "example.com/keep";
/** Fast requeues and backoffs, so that every retry below ends within `settleMs`. */
export const timing = { requeueIntervalMs: 300, backoffBaseMs: 10, backoffCapMs: 200 };
/**
 * The quiet time after each command. TTLs are counted from a status time of second precision, so a
 * task finished at t is deleted in (t + ttl − 1 s, t + ttl]: a 1 s TTL runs out before the next
 * command, a 4 s one between the next and the one after (≥ 0.5 s from either), 3600 s not at all.
 */
export const settleMs = 2_500;
export const ttls = [1, 4, 3600] as const;

/**
 * What Execute does. `hang`: its first call never returns, so the pass is cut in the middle by the
 * next restart (a deterministic takeover of a pass in flight; the next call completes).
 */
export type ExecutePlan = "ok" | "fail" | "retry-then-ok" | "hang";

export type Command =
  | {
      readonly kind: "create";
      readonly name: string;
      readonly etcd: string;
      readonly ttl: (typeof ttls)[number];
      readonly plan: ExecutePlan;
    }
  | { readonly kind: "delete"; readonly name: string }
  | { readonly kind: "label"; readonly name: string }
  /** Adds a foreign finalizer (not on a deleting task): our removal of ours then releases the task. */
  | { readonly kind: "foreign"; readonly name: string }
  /** Removes the foreign finalizer: a released task goes without us. */
  | { readonly kind: "unforeign"; readonly name: string }
  /**
   * The controller stops (calls in flight cut) and a new one takes over from a fresh list. Only
   * between commands, when nothing but a hanging call is in flight: at any other instant, what the
   * real controller had written before it stopped would be decided by timing.
   */
  | { readonly kind: "restart" };

const names = ["a", "b", "c"];
const named = <K extends "delete" | "label" | "foreign" | "unforeign">(kind: K) =>
  fc.record({ kind: fc.constant(kind), name: fc.constantFrom(...names) });

export const commandArb: fc.Arbitrary<Command> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("create" as const),
      name: fc.constantFrom(...names),
      etcd: fc.constantFrom("e1", "e2"),
      ttl: fc.constantFrom(...ttls),
      plan: fc.constantFrom<ExecutePlan>("ok", "fail", "retry-then-ok", "hang"),
    }),
  },
  { weight: 2, arbitrary: named("delete") },
  { weight: 1, arbitrary: named("label") },
  { weight: 1, arbitrary: named("foreign") },
  { weight: 1, arbitrary: named("unforeign") },
  { weight: 2, arbitrary: fc.constant({ kind: "restart" as const }) },
);

/**
 * Scenarios that always run, one per rule of the per-key core, before the random ones.
 * - release: a task with a foreign finalizer is deleted; we clean up and remove ours; a label edit
 *   and the foreign finalizer's removal after that get nothing from us. Another is deleted with ours
 *   its last finalizer (released while our copy still holds it) and created again under its name:
 *   nothing lands on the old one, the new one runs from the start;
 * - takeover: finished tasks whose TTL runs (3600 s; 4 s, finished just before) and a pass cut while
 *   Execute hangs are seen by a new controller: the finished ones wait for their TTL without a write
 *   (the 4 s one is then deleted), the cut one calls Execute again; a label edit of a finished task
 *   after that gets nothing.
 * Echoes (the watch events of our own writes) come in every scenario: each would be an extra write
 * or handler call if it ran a pass that acts.
 */
export const examples: ReadonlyArray<ReadonlyArray<Command>> = [
  [
    { kind: "create", name: "a", etcd: "e1", ttl: 3600, plan: "ok" },
    { kind: "create", name: "b", etcd: "e2", ttl: 3600, plan: "ok" },
    { kind: "foreign", name: "a" },
    { kind: "delete", name: "a" },
    { kind: "delete", name: "b" },
    { kind: "create", name: "b", etcd: "e2", ttl: 3600, plan: "fail" },
    { kind: "label", name: "a" },
    { kind: "unforeign", name: "a" },
  ],
  [
    { kind: "create", name: "b", etcd: "e2", ttl: 3600, plan: "fail" },
    { kind: "create", name: "c", etcd: "e1", ttl: 3600, plan: "hang" },
    { kind: "create", name: "a", etcd: "e2", ttl: 4, plan: "ok" },
    { kind: "restart" },
    { kind: "label", name: "b" },
  ],
];

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
const retry: Step = {
  outcome: { kind: "retry", description: "Failed to execute HTTP request", error: transientError },
};

/** Execute's calls of a plan, in order; once used up, a call completes. */
export const executeSteps = (plan: ExecutePlan): Step[] => {
  switch (plan) {
    case "ok":
      return [];
    case "fail":
      return [{ outcome: { kind: "failed", description: "Failed to create snapshot", error: failure } }];
    case "retry-then-ok":
      return [retry, retry];
    case "hang":
      return [{ hang: true }];
  }
};

export const handlerTexts = {
  admit: "Admit check passed",
  execute: "Snapshot created successfully",
  cleanup: "Cleanup completed",
} as const;
