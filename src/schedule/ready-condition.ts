/**
 * The schedule's `Ready` condition. Its `lastTransitionTime` moves only when its status changes, so
 * deciding again on an unchanged schedule writes nothing.
 */
import { rfc3339 } from "./run-names.ts";
import type { Condition, ScheduleStatus } from "./schedule-status.ts";

export const readyCondition = (
  previous: ScheduleStatus,
  now: number,
  status: Condition["status"],
  reason: string,
  message: string,
): Condition => {
  const before = previous.conditions?.find((condition) => condition.type === "Ready");
  return {
    type: "Ready",
    status,
    reason,
    message,
    lastTransitionTime:
      before !== undefined && before.status === status ? before.lastTransitionTime : rfc3339(now),
  };
};

/** The previous status with `Ready` False: the schedule cannot be run as it is (the message says why and the fix). */
export const notReady = (
  previous: ScheduleStatus,
  now: number,
  reason: string,
  message: string,
): ScheduleStatus => ({
  ...previous,
  conditions: [readyCondition(previous, now, "False", reason, message)],
});
