/**
 * A schedule's cron expression as the three questions the decider asks of it, answered by croner
 * (a small, dependency-free parser that handles IANA time zones and daylight-saving gaps; see
 * docs/schedules.md for why it was chosen). Five fields only, as a Kubernetes CronJob: run names carry
 * the scheduled minute, so a seconds field would give two ticks one name.
 *
 * Every answer is a function of its arguments alone (no clock is read), so the decider stays pure.
 */
import { Cron } from "croner";
import * as Result from "effect/Result";

export interface CronTimes {
  /** The expression as given. */
  readonly expression: string;
  readonly timeZone: string;
  /** The latest scheduled time at or before `ms`, if any. */
  readonly latestAtOrBefore: (ms: number) => number | undefined;
  /** The first scheduled time strictly after `ms`, if any. */
  readonly nextAfter: (ms: number) => number | undefined;
  /**
   * Scheduled times strictly between `after` and `before`, counted up to `cap` (enumerating is linear
   * in the count: a year of minutes would take seconds).
   */
  readonly countBetween: (after: number, before: number, cap: number) => number;
}

const secondMs = 1000;

/** The schedule, or a message naming the field and the fix. */
export const parseCron = (expression: string, timeZone = "UTC"): Result.Result<CronTimes, string> => {
  const trimmed = expression.trim();
  if (/^(CRON_)?TZ=/u.test(trimmed))
    return Result.fail(
      `spec.schedule: "${expression}" names a time zone; put it in spec.timeZone and leave the schedule five fields`,
    );
  let cron: Cron;
  try {
    cron = new Cron(trimmed, { timezone: timeZone, mode: "5-part", paused: true });
    // An unknown zone only fails when a date is converted.
    cron.nextRun(new Date(0));
  } catch (cause) {
    const message = cause instanceof Error ? cause.message : String(cause);
    return Result.fail(
      /timezone/iu.test(message)
        ? `spec.timeZone: "${timeZone}" is not an IANA time zone (e.g. Europe/Berlin, UTC)`
        : `spec.schedule: "${expression}" is not a five-field cron expression (minute hour day-of-month month day-of-week): ${message}`,
    );
  }
  return Result.succeed({
    expression: trimmed,
    timeZone,
    latestAtOrBefore: (ms) => {
      // croner answers runs strictly before its reference, counting a run earlier in the same second:
      // half a second into `ms`'s second includes a run at exactly that second.
      const second = Math.floor(ms / secondMs) * secondMs;
      const [latest] = cron.previousRuns(1, new Date(second + secondMs / 2));
      return latest?.getTime();
    },
    nextAfter: (ms) => cron.nextRun(new Date(ms))?.getTime(),
    countBetween: (after, before, cap) => {
      let count = 0;
      let at = cron.nextRun(new Date(after))?.getTime();
      while (at !== undefined && at < before && count < cap) {
        count += 1;
        at = cron.nextRun(new Date(at))?.getTime();
      }
      return count;
    },
  });
};
