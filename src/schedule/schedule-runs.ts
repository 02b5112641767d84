/**
 * Which cached tasks are a schedule's runs. Any task author may put the schedule's label, an owner
 * reference to its UID and a scheduled-time annotation on a task; a run counts only where it cannot
 * move the schedule: it is controlled by the schedule, its name is the one the controller derives from
 * its scheduled time (`runName`), that time has come, and it did not finish in the future. So a task
 * an author made stands at most for the minute it names, which has come, as a run that
 * `opstask schedule trigger` makes does; it can neither stand for a later time (and silence the
 * schedule until then) nor report an outcome from the future. Why: docs/security.md.
 */
import type { TaskStatus } from "../api/status.ts";
import type { KubeObject } from "../kube/object.ts";
import { type ObservedRun, observeRun } from "./observed-run.ts";
import { runName, scheduleLabel } from "./run-names.ts";

export interface RunOwner {
  readonly name: string;
  readonly uid: string;
}

export const scheduleRuns = (
  schedule: RunOwner,
  tasks: ReadonlyArray<KubeObject>,
  statusOf: (task: KubeObject) => TaskStatus | undefined,
  now: number,
): ObservedRun[] =>
  tasks.flatMap((task) => {
    const labels = task.metadata.labels as Readonly<Record<string, string>> | undefined;
    const owners = task.metadata.ownerReferences as
      | ReadonlyArray<{ readonly uid?: string; readonly controller?: boolean }>
      | undefined;
    if (labels?.[scheduleLabel] !== schedule.name) return [];
    if (!(owners ?? []).some((owner) => owner.controller === true && owner.uid === schedule.uid)) return [];
    const run = observeRun(task.metadata as Parameters<typeof observeRun>[0], statusOf(task));
    if (run === undefined || run.scheduledTime > now) return [];
    if (run.name !== runName(schedule.name, run.scheduledTime)) return [];
    if (run.finishedAt !== undefined && run.finishedAt > now) {
      const { finishedAt: _future, ...rest } = run;
      return [rest];
    }
    return [run];
  });
