/**
 * Where a resumable task's progress lives, and what of it is trusted.
 *
 * The truth is the controller's own record about the task (`context.ownRecord`: on a cluster a
 * ConfigMap in the controller's namespace, keyed by the task's UID), with the fields of
 * `recordFields`. Not the task's annotations: whoever may create or patch a task writes those, and a
 * progress read from them let a task author skip the steps before a destructive one (a task created
 * "past" its confirmation) or rewind a finished one so that it runs again (docs/security-findings.md,
 * third round, H1). Not status either: a druid-schema status prunes unknown fields, and the lifecycle
 * is its only writer.
 *
 * The annotations stay as a mirror for people (`kubectl get -o yaml` shows where a task is):
 *
 * - `<prefix>-last-completed-step`: the last step whose run and wait both finished;
 * - `<prefix>-wait-start`: RFC 3339, when the next step's wait began.
 *
 * They are never read back, with one exception: a task admitted by a controller that kept its
 * progress there (it also wrote `<prefix>-task-uid` and `<prefix>-last-undone-step`, which are no
 * longer written) and has no record yet is read from them once, and its record written from that.
 * A task created carrying any of these annotations is Rejected (ERR_FORGED_PROGRESS).
 *
 * A step name this handler does not know fails the task instead of guessing where to resume.
 */

export interface StepAnnotations {
  readonly lastCompletedStep: string;
  readonly waitStart: string;
  /** Read only from tasks of an earlier controller; no longer written. */
  readonly lastUndoneStep: string;
  /** Read only from tasks of an earlier controller; no longer written. */
  readonly taskUid: string;
}

/** The annotation names under `prefix` (e.g. `druid.gardener.cloud/quorum-recovery`). */
export const stepAnnotations = (prefix: string): StepAnnotations => ({
  lastCompletedStep: `${prefix}-last-completed-step`,
  waitStart: `${prefix}-wait-start`,
  lastUndoneStep: `${prefix}-last-undone-step`,
  taskUid: `${prefix}-task-uid`,
});

/** The fields of the controller's record (`ownRecord`): the same four, under plain names. */
export const recordFields: StepAnnotations = {
  lastCompletedStep: "lastCompletedStep",
  waitStart: "waitStart",
  lastUndoneStep: "lastUndoneStep",
  taskUid: "taskUid",
};

export interface StepProgress {
  /** Index of the last completed step; -1 before the first. */
  readonly lastCompleted: number;
  /** When the wait of step `lastCompleted + 1` began (ms since the epoch), once its run finished. */
  readonly waitStart?: number;
  /** Index of the last step undone (Cleanup walks down from the last step that ran). */
  readonly lastUndone?: number;
}

export const noProgress: StepProgress = { lastCompleted: -1 };

export type ProgressRead =
  | { readonly ok: true; readonly progress: StepProgress }
  | { readonly ok: false; readonly problem: string };

const stepIndex = (names: ReadonlyArray<string>, key: string, value: string | undefined) => {
  if (value === undefined) return { ok: true as const, index: undefined };
  const index = names.indexOf(value);
  return index === -1
    ? {
        ok: false as const,
        problem: `${key} names step "${value}", which this task does not have (steps: ${names.join(", ")})`,
      }
    : { ok: true as const, index };
};

/** Reads the progress from a record's fields (or an earlier controller's annotations, under `keys`). */
export const readProgress = (
  fields: { readonly [key: string]: string } | undefined,
  keys: StepAnnotations,
  names: ReadonlyArray<string>,
  uid: string,
): ProgressRead => {
  const writer = fields?.[keys.taskUid];
  if (writer !== undefined && writer !== uid) return { ok: true, progress: noProgress };
  const completed = stepIndex(names, keys.lastCompletedStep, fields?.[keys.lastCompletedStep]);
  if (!completed.ok) return completed;
  const undone = stepIndex(names, keys.lastUndoneStep, fields?.[keys.lastUndoneStep]);
  if (!undone.ok) return undone;
  const waitText = fields?.[keys.waitStart];
  const waitStart = waitText === undefined ? undefined : Date.parse(waitText);
  return {
    ok: true,
    progress: {
      lastCompleted: completed.index ?? -1,
      // An unreadable time restarts the wait rather than ending it.
      ...(waitStart === undefined || Number.isNaN(waitStart) ? {} : { waitStart }),
      ...(undone.index === undefined ? {} : { lastUndone: undone.index }),
    },
  };
};

/** The record's fields for `progress` (null removes), as `ownRecord.write` takes them. */
export const progressFields = (
  progress: StepProgress,
  names: ReadonlyArray<string>,
  uid: string,
): Record<string, string | null> => ({
  [recordFields.taskUid]: uid,
  [recordFields.lastCompletedStep]:
    progress.lastCompleted < 0 ? null : (names[progress.lastCompleted] ?? null),
  [recordFields.waitStart]: progress.waitStart === undefined ? null : rfc3339(progress.waitStart),
  [recordFields.lastUndoneStep]:
    progress.lastUndone === undefined ? null : (names[progress.lastUndone] ?? null),
});

/** The mirror annotations of `progress` for `ownTask.annotate`; an earlier controller's extra two are removed. */
export const mirrorAnnotations = (
  progress: StepProgress,
  keys: StepAnnotations,
  names: ReadonlyArray<string>,
): Record<string, string | null> => ({
  [keys.lastCompletedStep]: progress.lastCompleted < 0 ? null : (names[progress.lastCompleted] ?? null),
  [keys.waitStart]: progress.waitStart === undefined ? null : rfc3339(progress.waitStart),
  [keys.lastUndoneStep]: null,
  [keys.taskUid]: null,
});

/** The first progress annotation a task carries, if any. */
export const progressAnnotationOn = (
  annotations: { readonly [key: string]: string } | undefined,
  keys: StepAnnotations,
): string | undefined => Object.values(keys).find((key) => annotations?.[key] !== undefined);

/** RFC 3339 in whole seconds, as Kubernetes writes times (and etcd-druid its wait-start). */
export const rfc3339 = (ms: number): string =>
  `${new Date(Math.floor(ms / 1000) * 1000).toISOString().slice(0, 19)}Z`;
