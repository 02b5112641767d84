/**
 * What the schedule controller's caches keep, bounded per object as the task cache is (the same
 * `taskCacheKeep`, src/runtime/task-cache.ts): memory grows with how many schedules and runs there are,
 * never with what their authors write. Any task author may set the schedule label, so the run cache sees
 * whatever tasks they make.
 *
 * - A TaskSchedule: its spec and status (the decisions read them whole) and its identity; over the
 *   bound, a stub the pass answers with `Ready` False, `TooLarge`.
 * - A run: no spec (no decision reads it), the schedule label, the scheduled-time annotation, its
 *   status, and the UID of its controlling owner; over the bound, a stub without the label, which no
 *   schedule counts (a run the controller made from a schedule within its bound is within it too).
 */
import type { KubeObject } from "../kube/object.ts";
import { oversizedOf } from "../reconcile/oversized-task.ts";
import { taskCacheKeep } from "../runtime/task-cache.ts";
import { scheduledTimeAnnotation, scheduleLabel } from "./run-names.ts";

/** A schedule holds a template of at most a task's size, and its status beside it. */
export const scheduleBoundOf = (maxTaskBytes: number): number => 2 * maxTaskBytes;

export const scheduleCacheKeep = (maxTaskBytes: number): ((object: KubeObject) => KubeObject) =>
  taskCacheKeep({ maxBytes: scheduleBoundOf(maxTaskBytes) });

interface OwnerReference {
  readonly uid?: unknown;
  readonly controller?: unknown;
}

export const runCacheKeep = (maxTaskBytes: number): ((object: KubeObject) => KubeObject) => {
  const keep = taskCacheKeep({
    maxBytes: maxTaskBytes,
    cachedMetadata: { labels: true, annotations: [scheduledTimeAnnotation] },
  });
  return (object) => {
    if (oversizedOf(object) !== undefined) return object;
    const { spec: _unread, ...rest } = object as KubeObject & { readonly spec?: unknown };
    const labels = object.metadata.labels as Readonly<Record<string, unknown>> | undefined;
    const schedule = labels?.[scheduleLabel];
    const owners = object.metadata.ownerReferences as ReadonlyArray<OwnerReference> | undefined;
    const owner = Array.isArray(owners)
      ? owners.find((reference) => reference.controller === true)
      : undefined;
    const kept = keep({
      ...rest,
      metadata: {
        ...object.metadata,
        labels: typeof schedule === "string" ? { [scheduleLabel]: schedule } : {},
      },
    });
    if (oversizedOf(kept) !== undefined || typeof owner?.uid !== "string") return kept;
    return {
      ...kept,
      metadata: { ...kept.metadata, ownerReferences: [{ uid: owner.uid, controller: true }] },
    };
  };
};
