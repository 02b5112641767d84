/**
 * A task's facts after one of our own writes, without decoding the object the write returned: what
 * the core reads of a task (state, deleting) changes only through the status patch's `state` and
 * the deletion's timestamp. The core learns of its own writes this way, since the
 * watch's echoes of them are suppressed (docs/design-notes.md §5: an echo must not cost a pass).
 */
import type { TaskState } from "../api/status.ts";
import type { PassRequest } from "./pass.ts";
import type { TaskFacts } from "./task-kind.ts";

export interface WrittenMeta {
  readonly resourceVersion: string;
  readonly deletionTimestamp?: unknown;
  readonly finalizers?: unknown;
}

export const factsAfterWrite = (facts: TaskFacts, request: PassRequest, written: WrittenMeta): TaskFacts => {
  const deletion = typeof written.deletionTimestamp === "string" ? written.deletionTimestamp : undefined;
  const finalizers = Array.isArray(written.finalizers)
    ? written.finalizers.filter((f): f is string => typeof f === "string")
    : [];
  const metadata = {
    ...facts.metadata,
    resourceVersion: written.resourceVersion,
    finalizers,
    ...(deletion === undefined ? {} : { deletionTimestamp: deletion }),
  };
  if (request._tag !== "PatchStatus" || !("state" in request.patch)) return { ...facts, metadata };
  const { state: _previous, ...rest } = facts.status;
  const state = request.patch.state as TaskState | null | undefined;
  return { ...facts, metadata, status: state === null || state === undefined ? rest : { ...rest, state } };
};
