/**
 * The TaskSchedule resource (`taskschedules.opstask.gardener.cloud`, opstask's own API group, as its
 * annotations use): a cron schedule that creates tasks of any kind defined with the library from a
 * template. The schema is the decoder and the source of the CRD (schedule-crd.ts).
 */
import * as Schema from "effect/Schema";
import { ObjectMeta } from "../api/meta.ts";
import { withDefault } from "../library/crd/schema-annotations.ts";
import { ConcurrencyPolicies } from "./decide.ts";
import { ScheduleStatusSchema } from "./schedule-status.ts";

export const scheduleResource = {
  group: "opstask.gardener.cloud",
  version: "v1alpha1",
  kind: "TaskSchedule",
  plural: "taskschedules",
} as const;

const StringMap = Schema.Record(Schema.String, Schema.String);
const Count = (max: number) =>
  Schema.Number.check(Schema.isInt(), Schema.isGreaterThanOrEqualTo(0), Schema.isLessThanOrEqualTo(max));

export const TaskKindRef = Schema.Struct({
  apiVersion: Schema.String.check(Schema.isPattern(/^[a-z0-9.-]+\/[a-z0-9]+$/u)).annotate({
    description: "group/version of the task kind, e.g. druid.gardener.cloud/v1alpha1.",
  }),
  kind: Schema.String.check(Schema.isNonEmpty()).annotate({
    description: "The task kind, e.g. EtcdOpsTask.",
  }),
}).annotate({ description: "Which task kind the runs are; the controller must run that kind." });

export const TaskTemplate = Schema.Struct({
  metadata: Schema.optionalKey(
    Schema.Struct({
      labels: Schema.optionalKey(StringMap),
      annotations: Schema.optionalKey(StringMap),
    }).annotate({
      description: "Labels and annotations every run gets (beside the schedule's own).",
    }),
  ),
  spec: Schema.Record(Schema.String, Schema.Unknown).annotate({
    description: "The spec of every run, checked by the task kind's own schema when a run is made.",
  }),
});

export const ScheduleGuard = Schema.Struct({
  name: Schema.String.check(Schema.isNonEmpty()).annotate({
    description: "A guard the controller knows (EtcdOpsTask: defragmentation).",
  }),
  parameters: Schema.optionalKey(
    StringMap.annotate({ description: 'The guard\'s parameters, e.g. minReclaimBytes: "104857600".' }),
  ),
}).annotate({
  description:
    "A predicate asked before each run is created; when it says no, the scheduled time is recorded as skipped (GuardRefused).",
});

export const ScheduleSpec = Schema.Struct({
  taskKind: TaskKindRef,
  taskTemplate: TaskTemplate,
  schedule: Schema.String.check(Schema.isNonEmpty()).annotate({
    description: 'Five-field cron (minute hour day-of-month month day-of-week), e.g. "0 3 * * *".',
  }),
  timeZone: Schema.optionalKey(
    Schema.String.annotate({
      description: "IANA time zone of the schedule, e.g. Europe/Berlin (default UTC).",
    }),
  ),
  suspend: Schema.Boolean.pipe(withDefault(false, { description: "No run is created while true." })),
  concurrencyPolicy: Schema.Literals(ConcurrencyPolicies).pipe(
    withDefault("Forbid", {
      description:
        "Forbid: a run waits until the previous one finished; Allow: runs may overlap; Replace: the previous run is deleted and the new one starts once it is gone.",
    }),
  ),
  startingDeadlineSeconds: Schema.optionalKey(
    Count(31_536_000).annotate({
      description:
        "A scheduled time found later than this many seconds after it is skipped (MissedDeadline).",
    }),
  ),
  successfulRunsHistoryLimit: Count(100).pipe(
    withDefault(3, { description: "Succeeded runs kept; older ones are deleted." }),
  ),
  failedRunsHistoryLimit: Count(100).pipe(
    withDefault(1, { description: "Failed or Rejected runs kept; older ones are deleted." }),
  ),
  guard: Schema.optionalKey(ScheduleGuard),
});
export type ScheduleSpec = typeof ScheduleSpec.Type;

export const TaskScheduleSchema = Schema.Struct({
  metadata: ObjectMeta,
  spec: ScheduleSpec,
  status: Schema.optionalKey(ScheduleStatusSchema),
});
export type TaskSchedule = typeof TaskScheduleSchema.Type;
