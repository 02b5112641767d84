/**
 * Why a task is where it is, read back from what the controller leaves behind: druid's status fields
 * (only the latest operation and transition survive), the finalizers, and the task's Kubernetes
 * Events, which fill in the transitions the status has overwritten. Pure: `now` is passed in.
 */

import type { TaskStatus } from "../../api/status.ts";
import { describe as texts } from "../../machine/descriptions.ts";
import { fromWireTime } from "../../machine/time.ts";
import type { Vocabulary } from "../../machine/types.ts";
import type { TaskEventRecord } from "./cluster.ts";
import { humanDuration } from "./human-duration.ts";
import {
  type DecodedError,
  decodeLastError,
  errorLine,
  isOwnFinalizer,
  lastErrorOf,
  type TaskView,
} from "./task-view.ts";

const marker = "\u0000";

/** The task a queued task waits for, read from its description (`--duplicate-policy queue`). */
export const queuedBehind = (vocabulary: Vocabulary, description: string): string | undefined => {
  const [before = "", after = ""] = texts
    .queued(vocabulary, { name: marker, uid: "", createdAt: 0, state: undefined, deleting: false })
    .split(marker);
  return description.length > before.length + after.length &&
    description.startsWith(before) &&
    description.endsWith(after)
    ? description.slice(before.length, description.length - after.length)
    : undefined;
};

/**
 * The errors of the phase still running: the trailing `lastErrors` entries of the current operation's
 * type, written no earlier than the operation itself. Non-empty means the phase is retrying after them.
 */
export const retryErrors = (status: TaskStatus): ReadonlyArray<DecodedError> => {
  const operation = status.lastOperation;
  if (operation === undefined || operation.state !== "InProgress") return [];
  const since = fromWireTime(operation.lastUpdateTime) ?? 0;
  const errors = (status.lastErrors ?? []).map(decodeLastError);
  const trailing: DecodedError[] = [];
  for (const error of [...errors].reverse()) {
    if (error.operation !== operation.type) break;
    trailing.unshift(error);
  }
  const newest = trailing.at(-1);
  return newest !== undefined && (newest.observedAt ?? 0) >= since ? trailing : [];
};

const plural = (count: number, word: string): string => `${count} ${word}${count === 1 ? "" : "s"}`;

const ttlPhrase = (view: TaskView, now: number): string => {
  const since = fromWireTime(view.status.lastTransitionTime);
  if (since === undefined) return `kept ${view.ttlSeconds}s`;
  const left = since + view.ttlSeconds * 1000 - now;
  return left > 0
    ? `deleted in ${humanDuration(left)} (TTL ${view.ttlSeconds}s)`
    : `TTL of ${view.ttlSeconds}s elapsed, deletion due`;
};

/** One line that says why the task is where it is, starting with a word for where that is. */
export const why = (view: TaskView, now: number): string => {
  const { status } = view;
  const operation = status.lastOperation;
  const last = lastErrorOf(status);
  const lastDecoded = last === undefined ? undefined : decodeLastError(last);
  const retrying = retryErrors(status);
  const retry = retrying.at(-1);

  if (view.deletingSince !== undefined) {
    const own = view.finalizers.filter((finalizer) => isOwnFinalizer(view, finalizer));
    const others = view.finalizers.filter((finalizer) => !isOwnFinalizer(view, finalizer));
    if (own.length > 0) {
      if (retry !== undefined && operation?.type === "Cleanup")
        return `Deleting: cleanup retrying after ${retry.code}, next attempt after backoff (${plural(retrying.length, "failed attempt")})`;
      return `Deleting: waiting for the controller's cleanup (finalizer ${own.join(", ")})${
        others.length > 0 ? `, then for ${others.join(", ")}` : ""
      }`;
    }
    if (others.length > 0)
      return `Deleting: waiting for finalizer${others.length > 1 ? "s" : ""} ${others.join(", ")}`;
    return "Deleting: no finalizers left; the API server removes it now";
  }

  switch (status.state) {
    case "Succeeded":
      return `Succeeded: ${operation?.description ?? "done"}; ${ttlPhrase(view, now)}`;
    case "Failed":
      return `Failed: ${lastDecoded === undefined ? (operation?.description ?? "no error recorded") : errorLine(lastDecoded)}; ${ttlPhrase(view, now)}`;
    case "Rejected":
      return `Rejected: ${lastDecoded === undefined ? (operation?.description ?? "no error recorded") : errorLine(lastDecoded)}; ${ttlPhrase(view, now)}`;
    case "Pending":
    case "InProgress": {
      if (retry !== undefined)
        return `Retrying: ${retry.code}, next attempt after backoff (${plural(retrying.length, "failed attempt")} in ${operation?.type ?? "this"} phase: ${retry.message})`;
      const peer =
        operation === undefined ? undefined : queuedBehind(view.kind.vocabulary, operation.description);
      if (peer !== undefined)
        return `Waiting: queued behind task ${peer} (same ${view.kind.vocabulary.group})`;
      if (status.state === "Pending")
        return `Waiting: admission not passed yet${operation === undefined ? "" : `: ${operation.description}`}`;
      const started = fromWireTime(status.startedAt);
      return `Running: ${operation?.description ?? "execution in progress"}${
        started === undefined ? "" : ` (for ${humanDuration(now - started)})`
      }`;
    }
    default:
      if (view.invalid.length > 0)
        return `Invalid: the spec does not decode (${view.invalid[0]}); a controller rejects it with ERR_INVALID_TASK`;
      if (!view.finalizers.some((finalizer) => isOwnFinalizer(view, finalizer)))
        return `Not picked up: no controller has claimed it yet (is the ${view.kind.resource.kind} controller running and watching namespace ${view.namespace}?)`;
      return "Admitting: claimed by the controller, admission has not written a result yet";
  }
};

export interface TimelineEntry {
  /** ms since the epoch. */
  readonly at: number;
  readonly source: "metadata" | "status" | "event";
  readonly text: string;
}

/**
 * Status times have whole seconds, event times microseconds; within one second, entries keep the
 * lifecycle's order, and each event sits beside the status change it reports.
 */
const rank = {
  created: 0,
  started: 1,
  error: 3,
  transition: 4,
  operation: 5,
  deletion: 8,
  cleanup: 9,
} as const;

const eventRank: Readonly<Record<string, number>> = {
  Started: 2,
  Succeeded: 6,
  Failed: 6,
  Rejected: 6,
  Expired: 7,
  CleanupFailed: 10,
};

/** Every dated fact about the task, oldest first. */
export const timeline = (
  view: TaskView,
  events: ReadonlyArray<TaskEventRecord>,
): ReadonlyArray<TimelineEntry> => {
  const entries: Array<TimelineEntry & { readonly rank: number }> = [];
  const add = (
    at: number | undefined,
    order: number,
    source: TimelineEntry["source"],
    text: string,
  ): void => {
    if (at !== undefined) entries.push({ at, source, text, rank: order });
  };
  const { status } = view;
  add(view.createdAt, rank.created, "metadata", "created");
  // Entering InProgress sets startedAt and lastTransitionTime together: one entry says it.
  add(fromWireTime(status.startedAt), rank.started, "status", "admitted: state → InProgress (startedAt)");
  for (const error of (status.lastErrors ?? []).map(decodeLastError))
    add(
      error.observedAt,
      rank.error,
      "status",
      `error ${error.code}${error.operation === undefined ? "" : ` in ${error.operation}`}`,
    );
  if (status.state !== undefined && status.state !== "InProgress")
    add(
      fromWireTime(status.lastTransitionTime),
      rank.transition,
      "status",
      `state → ${status.state} (lastTransitionTime)`,
    );
  const operation = status.lastOperation;
  if (operation !== undefined)
    add(
      fromWireTime(operation.lastUpdateTime),
      operation.type === "Cleanup" ? rank.cleanup : rank.operation,
      "status",
      `${operation.type}/${operation.state}: ${operation.description} (lastOperation, runID ${operation.runID})`,
    );
  add(view.deletingSince, rank.deletion, "metadata", "deletion requested (deletionTimestamp)");
  for (const event of events)
    add(
      event.at,
      eventRank[event.reason] ?? 11,
      "event",
      `${event.type} ${event.reason}${event.count > 1 ? ` (×${event.count})` : ""}: ${event.note}`,
    );
  return entries
    .sort((a, b) => Math.floor(a.at / 1000) - Math.floor(b.at / 1000) || a.rank - b.rank || a.at - b.at)
    .map(({ at, source, text }) => ({ at, source, text }));
};
