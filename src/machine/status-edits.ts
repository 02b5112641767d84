/**
 * The only ways the machine changes a task's status. Each returns a new status; none writes.
 * Writing is the `patchStatus` effect, which carries the difference to what is persisted.
 */
import type { LastError, OperationState, OperationType, TaskState, TaskStatus } from "../api/status.ts";
import { capText } from "../api/text-cap.ts";
import type { StatusPatch } from "../effects/task-effect.ts";
import { toWireTime } from "./time.ts";
import type { TaskError } from "./types.ts";

/** The CRD allows 10 entries and druid's docs promise 10; druid's code keeps 3 (docs/contract.md §13 D1). */
export const maxLastErrors = 10;

/** Moves to `state`. `lastTransitionTime` changes only when the state does; `startedAt` is set once. */
export const withState = (status: TaskStatus, state: TaskState, now: number): TaskStatus => {
  if (status.state === state) return status;
  const at = toWireTime(now);
  const startedAt = state === "InProgress" && status.startedAt === undefined ? at : status.startedAt;
  return {
    ...status,
    state,
    lastTransitionTime: at,
    ...(startedAt === undefined ? {} : { startedAt }),
  };
};

export const withOperation = (
  status: TaskStatus,
  type: OperationType,
  state: OperationState,
  description: string,
  runId: string,
  now: number,
): TaskStatus => {
  const current = status.lastOperation;
  // Texts come from handlers, which echo what authors and servers wrote: a status stays bounded.
  const text = capText(description);
  // Rewriting the same operation only to bump its time would be a write that tells nobody anything.
  if (current?.type === type && current.state === state && current.description === text) return status;
  return {
    ...status,
    lastOperation: { type, state, description: text, runID: runId, lastUpdateTime: toWireTime(now) },
  };
};

/**
 * `[Operation: <type>, Code: <code>] message: <message>, cause: <cause>` (docs/contract.md §6), at most
 * `MaxStatusTextLength` characters: a cause that echoes a 10,000-character value is cut, saying so. A
 * cause that only repeats the message (`failed(d, { code, message })` gives none of its own) is left out.
 */
export const describeError = (type: OperationType, error: TaskError): string =>
  capText(
    `[Operation: ${type}, Code: ${capText(error.code, 100)}] message: ${capText(error.message, 300)}${
      error.cause === "" || error.cause === error.message ? "" : `, cause: ${error.cause}`
    }`,
  );

/** Appends an error, keeping the newest `maxLastErrors`, oldest first. Errors are never cleared. */
export const withError = (
  status: TaskStatus,
  type: OperationType,
  error: TaskError,
  now: number,
): TaskStatus => {
  const entry: LastError = {
    code: capText(error.code, 100),
    description: describeError(type, error),
    observedAt: toWireTime(now),
  };
  const errors = [...(status.lastErrors ?? []), entry].slice(-maxLastErrors);
  return { ...status, lastErrors: errors };
};

/** A JSON merge patch for `status`: the top-level fields that differ, `null` for removed ones. */
export type { StatusPatch } from "../effects/task-effect.ts";

export const statusPatch = (persisted: TaskStatus, desired: TaskStatus): Partial<StatusPatch> | undefined => {
  const patch: Record<string, unknown> = {};
  const keys = new Set([...Object.keys(persisted), ...Object.keys(desired)]) as Set<keyof TaskStatus>;
  for (const key of keys) {
    const before = persisted[key];
    const after = desired[key];
    if (canonical(before) !== canonical(after)) patch[key] = after ?? null;
  }
  return Object.keys(patch).length === 0 ? undefined : (patch as Partial<StatusPatch>);
};

/** JSON with sorted keys: the apiserver returns object keys in its own order, which is not a change. */
const canonical = (value: unknown): string =>
  JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  ) ?? "undefined";
