/**
 * A TaskSchedule's status: what the controller decided and saw, for people (`opstask schedule
 * describe`), alerts and the task board. The controller derives every decision from the runs it sees
 * and from the times recorded here, so a stale or lost status can delay a run but never repeat one
 * (run names are deterministic).
 *
 * Fields other tools read (the history and metrics helpers included): `lastScheduleTime`,
 * `lastSuccessfulTime`, `lastFailedTime` (RFC 3339, whole seconds), `nextRunTime`, `active`,
 * `skippedRuns` (newest first, at most `maxSkippedRuns`) and the `Ready` condition.
 */
import * as Schema from "effect/Schema";

/** Why a scheduled time did not get a run. */
export const SkipReasons = ["MissedDeadline", "Superseded", "GuardRefused"] as const;
export type SkipReason = (typeof SkipReasons)[number];

export const maxSkippedRuns = 10;
/** Runs a schedule has active at once at most (concurrencyPolicy Allow waits beyond it), as listed in `active`. */
export const maxActiveRuns = 100;

const Time = Schema.String.annotate({ format: "date-time" });
const Text = Schema.String;

export const SkippedRunSchema = Schema.Struct({
  scheduledTime: Time.annotate({ description: "The scheduled time that got no run." }),
  reason: Schema.Literals(SkipReasons).annotate({
    description:
      "MissedDeadline: found later than startingDeadlineSeconds after it; Superseded: an earlier time missed while the controller was away, suspended or waiting (only the most recent missed time runs); GuardRefused: the schedule's guard said no.",
  }),
  message: Text,
});
export type SkippedRun = typeof SkippedRunSchema.Type;

export const ActiveRunSchema = Schema.Struct({
  name: Schema.String,
  scheduledTime: Time,
});
export type ActiveRun = typeof ActiveRunSchema.Type;

export const ConditionSchema = Schema.Struct({
  type: Schema.String,
  status: Schema.Literals(["True", "False", "Unknown"]),
  reason: Schema.String,
  message: Text,
  lastTransitionTime: Time,
});
export type Condition = typeof ConditionSchema.Type;

export const ScheduleStatusSchema = Schema.Struct({
  lastScheduleTime: Schema.optionalKey(
    Time.annotate({ description: "The scheduled time of the last run the controller created." }),
  ),
  lastSuccessfulTime: Schema.optionalKey(
    Time.annotate({ description: "When the last run that Succeeded finished." }),
  ),
  lastFailedTime: Schema.optionalKey(
    Time.annotate({ description: "When the last run that Failed or was Rejected finished." }),
  ),
  nextRunTime: Schema.optionalKey(
    Time.annotate({ description: "The next scheduled time (absent while suspended)." }),
  ),
  active: Schema.optionalKey(
    Schema.Array(ActiveRunSchema)
      .check(Schema.isMaxLength(maxActiveRuns))
      .annotate({ description: "Runs not finished yet." }),
  ),
  skippedRuns: Schema.optionalKey(
    Schema.Array(SkippedRunSchema)
      .check(Schema.isMaxLength(maxSkippedRuns))
      .annotate({ description: "Scheduled times that got no run, newest first." }),
  ),
  conditions: Schema.optionalKey(Schema.Array(ConditionSchema).check(Schema.isMaxLength(8))),
});
export type ScheduleStatus = typeof ScheduleStatusSchema.Type;
