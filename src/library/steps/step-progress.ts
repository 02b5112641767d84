/**
 * Where a resumable task's progress lives: annotations on the task itself (so a new task starts at step
 * 1), not status (a pruning status schema such as druid's keeps them, and the lifecycle stays the only
 * status writer):
 *
 * - `<prefix>-last-completed-step`: the last step whose run and wait both finished;
 * - `<prefix>-wait-start`: RFC 3339, when the next step's wait began; its deadline counts from here;
 * - `<prefix>-last-undone-step`: during Cleanup of a failed task, the last step whose undo finished;
 * - `<prefix>-task-uid`: the UID of the task that wrote them; progress copied with another task's
 *   manifest is ignored (progress without it, as etcd-druid writes it, is taken as the task's own).
 *
 * A step name this handler does not know fails the task instead of guessing where to resume.
 */

export interface StepAnnotations {
  readonly lastCompletedStep: string;
  readonly waitStart: string;
  readonly lastUndoneStep: string;
  readonly taskUid: string;
}

/** The three annotation names under `prefix` (e.g. `druid.gardener.cloud/quorum-recovery`). */
export const stepAnnotations = (prefix: string): StepAnnotations => ({
  lastCompletedStep: `${prefix}-last-completed-step`,
  waitStart: `${prefix}-wait-start`,
  lastUndoneStep: `${prefix}-last-undone-step`,
  taskUid: `${prefix}-task-uid`,
});

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
        problem: `annotation ${key} names step "${value}", which this task does not have (steps: ${names.join(", ")}); remove the annotation to start again at step 1, or name a step`,
      }
    : { ok: true as const, index };
};

/** Reads the progress from a task's annotations. */
export const readProgress = (
  annotations: { readonly [key: string]: string } | undefined,
  keys: StepAnnotations,
  names: ReadonlyArray<string>,
  uid: string,
): ProgressRead => {
  const writer = annotations?.[keys.taskUid];
  if (writer !== undefined && writer !== uid) return { ok: true, progress: noProgress };
  const completed = stepIndex(names, keys.lastCompletedStep, annotations?.[keys.lastCompletedStep]);
  if (!completed.ok) return completed;
  const undone = stepIndex(names, keys.lastUndoneStep, annotations?.[keys.lastUndoneStep]);
  if (!undone.ok) return undone;
  const waitText = annotations?.[keys.waitStart];
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

/** The annotation values of `progress` (null removes), as `ownTask.annotate` takes them. */
export const progressAnnotations = (
  progress: StepProgress,
  keys: StepAnnotations,
  names: ReadonlyArray<string>,
  uid: string,
): Record<string, string | null> => ({
  [keys.taskUid]: uid,
  [keys.lastCompletedStep]: progress.lastCompleted < 0 ? null : (names[progress.lastCompleted] ?? null),
  [keys.waitStart]: progress.waitStart === undefined ? null : rfc3339(progress.waitStart),
  [keys.lastUndoneStep]: progress.lastUndone === undefined ? null : (names[progress.lastUndone] ?? null),
});

/** RFC 3339 in whole seconds, as Kubernetes writes times (and etcd-druid its wait-start). */
export const rfc3339 = (ms: number): string =>
  `${new Date(Math.floor(ms / 1000) * 1000).toISOString().slice(0, 19)}Z`;
