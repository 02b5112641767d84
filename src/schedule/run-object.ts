/**
 * The run a schedule creates for one scheduled time: the template's spec, its labels and annotations,
 * the schedule's label and scheduled-time annotation, a deterministic name, and an owner reference to
 * the schedule (garbage collection deletes the runs with it). Shared by the controller and
 * `opstask schedule trigger`, so that a manual run and a scheduled one of the same minute collide.
 */
import {
  rfc3339,
  runName,
  scheduledTimeAnnotation,
  scheduleLabel,
  triggeredByAnnotation,
} from "./run-names.ts";
import { scheduleResource, type TaskSchedule } from "./schedule-spec.ts";

export interface RunObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: {
    readonly name: string;
    readonly namespace: string;
    readonly labels: Readonly<Record<string, string>>;
    readonly annotations: Readonly<Record<string, string>>;
    readonly ownerReferences: ReadonlyArray<{
      readonly apiVersion: string;
      readonly kind: string;
      readonly name: string;
      readonly uid: string;
      readonly controller: boolean;
      readonly blockOwnerDeletion: boolean;
    }>;
  };
  readonly spec: Readonly<Record<string, unknown>>;
}

export const runObject = (
  schedule: Pick<TaskSchedule, "metadata" | "spec">,
  scheduledTime: number,
  triggeredBy?: string,
): RunObject => {
  const template = schedule.spec.taskTemplate;
  return {
    apiVersion: schedule.spec.taskKind.apiVersion,
    kind: schedule.spec.taskKind.kind,
    metadata: {
      name: runName(schedule.metadata.name, scheduledTime),
      namespace: schedule.metadata.namespace,
      labels: { ...template.metadata?.labels, [scheduleLabel]: schedule.metadata.name },
      annotations: {
        ...template.metadata?.annotations,
        [scheduledTimeAnnotation]: rfc3339(scheduledTime),
        ...(triggeredBy === undefined ? {} : { [triggeredByAnnotation]: triggeredBy }),
      },
      ownerReferences: [
        {
          apiVersion: `${scheduleResource.group}/${scheduleResource.version}`,
          kind: scheduleResource.kind,
          name: schedule.metadata.name,
          uid: schedule.metadata.uid,
          controller: true,
          blockOwnerDeletion: false,
        },
      ],
    },
    spec: template.spec,
  };
};
