/**
 * The schedule's decisions, pure: `decide(schedule, now, runs)` says what to create, what to delete,
 * what was skipped, when to look again and what the status says. The controller performs them status
 * first (so a crash after it loses a run rather than repeating it), then the create, then the deletions;
 * test/schedule/decide.property.test.ts runs it through failovers, outages and clock steps.
 *
 * The rules are a CronJob's with two differences: a backlog fires only its most recent missed time, the
 * earlier ones recorded as one `Superseded` skip; and `Replace` creates the new run only once the
 * replaced one is gone. A scheduled time is handled once (recorded as the last schedule time, stood for
 * by a run, or recorded as skipped), and run names are deterministic, so two deciders on the same stale
 * state create at most one run. Why: docs/design-notes.md §18.
 */
import * as Result from "effect/Result";
import { type CronTimes, parseCron } from "./cron-times.ts";
import type { ObservedRun } from "./observed-run.ts";
import { readyCondition } from "./ready-condition.ts";
import { maxScheduleNameLength, rfc3339, runName } from "./run-names.ts";
import {
  type ActiveRun,
  maxActiveRuns,
  maxSkippedRuns,
  type ScheduleStatus,
  type SkippedRun,
} from "./schedule-status.ts";

export const ConcurrencyPolicies = ["Forbid", "Allow", "Replace"] as const;
export type ConcurrencyPolicy = (typeof ConcurrencyPolicies)[number];

/** The spec fields the decisions depend on. */
export interface ScheduleRules {
  readonly schedule: string;
  readonly timeZone?: string | undefined;
  readonly suspend: boolean;
  readonly concurrencyPolicy: ConcurrencyPolicy;
  readonly startingDeadlineSeconds?: number | undefined;
  readonly successfulRunsHistoryLimit: number;
  readonly failedRunsHistoryLimit: number;
}

export interface ScheduleView {
  readonly name: string;
  /** creationTimestamp, ms: the first scheduled time considered is after it. */
  readonly createdAt: number;
  readonly rules: ScheduleRules;
  readonly status: ScheduleStatus;
}

export type DeleteReason = "Replaced" | "HistoryLimit";

export interface ScheduleDecision {
  /** The run to create now, named for its scheduled time. */
  readonly create?: { readonly name: string; readonly scheduledTime: number };
  /** Runs to delete: the active ones Replace replaces, finished ones beyond the history limits (oldest first). */
  readonly delete: ReadonlyArray<{ readonly name: string; readonly reason: DeleteReason }>;
  /** Scheduled times newly recorded as skipped by this decision. */
  readonly skipped: ReadonlyArray<SkippedRun>;
  /** When to decide again (absent: only when the schedule or one of its runs changes). */
  readonly requeueAt?: number;
  readonly status: ScheduleStatus;
}

/** How many earlier missed times are counted for the `Superseded` message. */
const supersededCountCap = 20;

const parsedTimes = new Map<string, Result.Result<CronTimes, string>>();
/** Parsing is deterministic, so remembering the last few results keeps `decide` pure in effect. */
const cronOf = (rules: ScheduleRules): Result.Result<CronTimes, string> => {
  const key = `${rules.timeZone ?? "UTC"}\u0000${rules.schedule}`;
  const known = parsedTimes.get(key);
  if (known !== undefined) return known;
  const parsed = parseCron(rules.schedule, rules.timeZone);
  if (parsedTimes.size >= 256) parsedTimes.clear();
  parsedTimes.set(key, parsed);
  return parsed;
};

const timeOf = (text: string | undefined): number | undefined => {
  if (text === undefined) return undefined;
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? undefined : ms;
};

const maxOf = (...values: ReadonlyArray<number | undefined>): number | undefined => {
  const defined = values.filter((value): value is number => value !== undefined);
  return defined.length === 0 ? undefined : Math.max(...defined);
};

/** The latest scheduled time already handled: a run, the recorded last schedule time, or a skip. */
export const lastHandledTime = (
  status: ScheduleStatus,
  runs: ReadonlyArray<ObservedRun>,
): number | undefined =>
  maxOf(
    timeOf(status.lastScheduleTime),
    ...runs.map((run) => run.scheduledTime),
    ...(status.skippedRuns ?? []).map((skip) => timeOf(skip.scheduledTime)),
  );

/** Newest first, one entry per (time, reason), at most `maxSkippedRuns`. */
const withSkips = (previous: ReadonlyArray<SkippedRun>, added: ReadonlyArray<SkippedRun>): SkippedRun[] => {
  const all = [...added, ...previous].filter(
    (skip, index, list) =>
      list.findIndex(
        (other) => other.scheduledTime === skip.scheduledTime && other.reason === skip.reason,
      ) === index,
  );
  return all
    .sort((a, b) => (timeOf(b.scheduledTime) ?? 0) - (timeOf(a.scheduledTime) ?? 0))
    .slice(0, maxSkippedRuns);
};

/** Finished runs beyond the history limits, oldest first; runs being deleted are already going. */
const beyondHistoryLimits = (
  rules: ScheduleRules,
  runs: ReadonlyArray<ObservedRun>,
): ReadonlyArray<string> => {
  const newestFirst = (phase: ObservedRun["phase"]) =>
    runs
      .filter((run) => run.phase === phase && !run.deleting)
      .sort((a, b) => b.scheduledTime - a.scheduledTime || (a.name < b.name ? 1 : a.name > b.name ? -1 : 0));
  return [
    ...newestFirst("Succeeded").slice(rules.successfulRunsHistoryLimit),
    ...newestFirst("Failed").slice(rules.failedRunsHistoryLimit),
  ]
    .sort((a, b) => a.scheduledTime - b.scheduledTime)
    .map((run) => run.name);
};

/** The active runs, oldest first; the newest `maxActiveRuns` when there are more (made by hand). */
const activeOf = (runs: ReadonlyArray<ObservedRun>): ActiveRun[] =>
  runs
    .filter((run) => run.phase === "Active")
    .sort((a, b) => a.scheduledTime - b.scheduledTime || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .slice(-maxActiveRuns)
    .map((run) => ({ name: run.name, scheduledTime: rfc3339(run.scheduledTime) }));

const finishedTime = (runs: ReadonlyArray<ObservedRun>, phase: ObservedRun["phase"]) =>
  maxOf(...runs.filter((run) => run.phase === phase).map((run) => run.finishedAt));

const optionalTime = <K extends string>(key: K, ms: number | undefined): { [P in K]?: string } =>
  (ms === undefined ? {} : { [key]: rfc3339(ms) }) as { [P in K]?: string };

export const decide = (
  schedule: ScheduleView,
  now: number,
  runs: ReadonlyArray<ObservedRun>,
): ScheduleDecision => {
  const { rules, status: previous } = schedule;
  const historyDeletes = beyondHistoryLimits(rules, runs).map((name) => ({
    name,
    reason: "HistoryLimit" as const,
  }));
  const observedStatus: ScheduleStatus = {
    ...optionalTime("lastScheduleTime", maxOf(timeOf(previous.lastScheduleTime))),
    ...optionalTime(
      "lastSuccessfulTime",
      maxOf(timeOf(previous.lastSuccessfulTime), finishedTime(runs, "Succeeded")),
    ),
    ...optionalTime("lastFailedTime", maxOf(timeOf(previous.lastFailedTime), finishedTime(runs, "Failed"))),
    active: activeOf(runs),
    skippedRuns: withSkips(previous.skippedRuns ?? [], []),
  };
  const invalid = (message: string): ScheduleDecision => ({
    delete: historyDeletes,
    skipped: [],
    status: {
      ...observedStatus,
      conditions: [readyCondition(previous, now, "False", "InvalidSpec", message)],
    },
  });

  if (schedule.name.length > maxScheduleNameLength)
    return invalid(
      `metadata.name: "${schedule.name}" is longer than ${maxScheduleNameLength} characters, leaving no room for the run names' time suffix; use a shorter name`,
    );
  const parsed = cronOf(rules);
  if (Result.isFailure(parsed)) return invalid(parsed.failure);
  const cron = parsed.success;

  if (rules.suspend)
    return {
      delete: historyDeletes,
      skipped: [],
      status: {
        ...observedStatus,
        conditions: [
          readyCondition(
            previous,
            now,
            "True",
            "Suspended",
            "suspended: no run is created until spec.suspend is false",
          ),
        ],
      },
    };

  const handled = lastHandledTime(previous, runs);
  // Times after creation only; `handled` moves that start on once a time got a run or a skip.
  const since = handled ?? schedule.createdAt;
  const due = cron.latestAtOrBefore(now);
  const nextAfter = (after: number) => cron.nextAfter(Math.max(now, after));
  const settled = (
    extra: Partial<ScheduleDecision>,
    handledNow: number,
    reason: string,
    message: string,
    statusEdits: ScheduleStatus = {},
  ): ScheduleDecision => {
    const next = nextAfter(handledNow);
    const skipped = extra.skipped ?? [];
    const requeueAt = maxOf(
      Math.min(next ?? Number.POSITIVE_INFINITY, extra.requeueAt ?? Number.POSITIVE_INFINITY),
    );
    return {
      ...(extra.create === undefined ? {} : { create: extra.create }),
      delete: [...(extra.delete ?? []), ...historyDeletes],
      skipped,
      ...(requeueAt === undefined || requeueAt === Number.POSITIVE_INFINITY ? {} : { requeueAt }),
      status: {
        ...observedStatus,
        ...statusEdits,
        ...optionalTime("nextRunTime", next),
        skippedRuns: withSkips(previous.skippedRuns ?? [], skipped),
        conditions: [readyCondition(previous, now, "True", reason, message)],
      },
    };
  };

  if (due === undefined || due <= since) {
    const next = nextAfter(since);
    return settled(
      {},
      since,
      "Scheduled",
      next === undefined ? "no further scheduled time" : `next run at ${rfc3339(next)}`,
    );
  }

  // `due` is the most recent scheduled time not handled yet; earlier unhandled ones are superseded.
  const missed = cron.countBetween(since, due, supersededCountCap);
  const firstMissed = missed === 0 ? undefined : cron.nextAfter(since);
  const superseded: SkippedRun[] =
    firstMissed === undefined
      ? []
      : [
          {
            scheduledTime: rfc3339(firstMissed),
            reason: "Superseded",
            message: `${missed >= supersededCountCap ? `${supersededCountCap} or more` : missed} scheduled time(s) from ${rfc3339(firstMissed)} to before ${rfc3339(due)} got no run; only the most recent missed time runs`,
          },
        ];

  const deadlineMs =
    rules.startingDeadlineSeconds === undefined ? undefined : rules.startingDeadlineSeconds * 1000;
  if (deadlineMs !== undefined && now - due > deadlineMs) {
    const skip: SkippedRun = {
      scheduledTime: rfc3339(due),
      reason: "MissedDeadline",
      message: `found ${Math.round((now - due) / 1000)} s after its time, later than startingDeadlineSeconds (${rules.startingDeadlineSeconds})`,
    };
    return settled(
      { skipped: [...superseded, skip] },
      due,
      "Scheduled",
      `missed ${rfc3339(due)}; next run at ${rfc3339(nextAfter(due) ?? due)}`,
    );
  }

  const active = runs.filter((run) => run.phase === "Active");
  // Waiting for active runs: look again at the next time, or when the deadline would pass.
  const waitUntil = deadlineMs === undefined ? undefined : due + deadlineMs + 1;
  if (active.length > 0 && rules.concurrencyPolicy === "Forbid") {
    return settled(
      { ...(waitUntil === undefined ? {} : { requeueAt: waitUntil }) },
      since,
      "WaitingForActiveRun",
      `the run for ${rfc3339(due)} waits for ${active.map((run) => run.name).join(", ")} to finish (concurrencyPolicy Forbid)`,
    );
  }
  if (active.length > 0 && rules.concurrencyPolicy === "Replace") {
    return settled(
      {
        delete: active
          .filter((run) => !run.deleting)
          .map((run) => ({ name: run.name, reason: "Replaced" as const })),
        ...(waitUntil === undefined ? {} : { requeueAt: waitUntil }),
      },
      since,
      "ReplacingActiveRun",
      `the run for ${rfc3339(due)} starts once ${active.map((run) => run.name).join(", ")} is gone (concurrencyPolicy Replace)`,
    );
  }

  if (active.length >= maxActiveRuns) {
    return settled(
      { ...(waitUntil === undefined ? {} : { requeueAt: waitUntil }) },
      since,
      "TooManyActiveRuns",
      `the run for ${rfc3339(due)} waits: ${active.length} runs are active, the most a schedule runs at once (${maxActiveRuns}); it starts once fewer are`,
    );
  }

  const create = { name: runName(schedule.name, due), scheduledTime: due };
  return settled(
    { create, skipped: superseded },
    due,
    "Scheduled",
    `created ${create.name}; next run at ${rfc3339(nextAfter(due) ?? due)}`,
    {
      lastScheduleTime: rfc3339(due),
      active: [...activeOf(runs), { name: create.name, scheduledTime: rfc3339(due) }],
    },
  );
};

/**
 * The decision with its create turned into a `GuardRefused` skip: the schedule's guard (a
 * handler-supplied predicate, e.g. "only when defragmentation would reclaim something") said no. The
 * skip marks the time handled, so the guard is asked once per scheduled time.
 */
export const refusedByGuard = (
  previous: ScheduleStatus,
  decision: ScheduleDecision,
  message: string,
): ScheduleDecision => {
  const create = decision.create;
  if (create === undefined) return decision;
  const skip: SkippedRun = { scheduledTime: rfc3339(create.scheduledTime), reason: "GuardRefused", message };
  const { create: _refused, ...rest } = decision;
  const { lastScheduleTime: _created, ...status } = decision.status;
  return {
    ...rest,
    skipped: [...decision.skipped, skip],
    status: {
      ...status,
      ...(previous.lastScheduleTime === undefined ? {} : { lastScheduleTime: previous.lastScheduleTime }),
      active: (status.active ?? []).filter((run) => run.name !== create.name),
      skippedRuns: withSkips(status.skippedRuns ?? [], [skip]),
      conditions: (status.conditions ?? []).map((condition) =>
        condition.type === "Ready" ? { ...condition, reason: "GuardRefused", message } : condition,
      ),
    },
  };
};
