/**
 * How a schedule's runs are named and marked. The name is `<schedule>-<unix minutes of the scheduled
 * time>`, as a CronJob names its Jobs: two controllers (or a controller and a stale copy of itself)
 * that decide the same tick create the same name, and the API server answers the second AlreadyExists.
 */

/** Label on every run: the name of the schedule that created it (runs are listed by it). */
export const scheduleLabel = "opstask.gardener.cloud/schedule";
/** Annotation on every run: the scheduled time it stands for (RFC 3339). */
export const scheduledTimeAnnotation = "opstask.gardener.cloud/scheduled-time";
/** Annotation on a run created by `opstask schedule trigger` rather than by the cron. */
export const triggeredByAnnotation = "opstask.gardener.cloud/triggered-by";

/** A run name must be a DNS subdomain name; the suffix is at most 11 characters (`-` and 10 digits). */
export const maxScheduleNameLength = 52;

const minuteMs = 60_000;

export const runName = (schedule: string, scheduledTime: number): string =>
  `${schedule}-${Math.floor(scheduledTime / minuteMs)}`;

/** The scheduled minute a run stands for, as the API writes times (RFC 3339, whole seconds). */
export const rfc3339 = (ms: number): string =>
  new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
