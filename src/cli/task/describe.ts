/**
 * `describe <task>`: what the task is, where it stands, how it got there, and one line on why.
 *
 * The status keeps only the latest operation and transition; the Events the controller records on
 * each state change (Started, Succeeded, Failed, Rejected, Expired, CleanupFailed) fill in the rest of
 * the timeline. Events are best effort (and expire after an hour): when they cannot be listed the
 * description says so and shows what the status has.
 */
import * as Effect from "effect/Effect";
import * as Result from "effect/Result";
import { terminalText } from "../../api/terminal-text.ts";
import type { KubeError } from "../../kube/errors.ts";
import { fromWireTime, toWireTime } from "../../machine/time.ts";
import { type Cluster, getTask, listTaskEvents, type TaskEventRecord } from "./cluster.ts";
import { timeline, why } from "./explain.ts";
import { humanDuration } from "./human-duration.ts";
import type { Output } from "./io.ts";
import { decodeLastError, phaseOf, type TaskView, viewOf } from "./task-view.ts";

const field = (label: string, value: string): string => `${`${label}:`.padEnd(13)}${value}\n`;

const ago = (at: number, now: number): string => `${toWireTime(at)} (${humanDuration(now - at)} ago)`;

/** The description as text; `events` undefined means they could not be read (`eventsError` says why). */
export const renderDescription = (
  view: TaskView,
  events: ReadonlyArray<TaskEventRecord> | undefined,
  now: number,
  eventsError?: string,
): string => {
  const { status } = view;
  let out = "";
  out += field("Name", view.name);
  out += field("Namespace", view.namespace);
  const groupLabel = view.kind.vocabulary.group;
  out += field(
    `${groupLabel.charAt(0).toUpperCase()}${groupLabel.slice(1)}`,
    view.group === undefined || view.group === "" ? "<none>" : view.group,
  );
  out += field("Task", view.summary ?? "invalid spec (does not decode)");
  for (const line of view.invalid) out += field("  invalid", line);
  out += field("TTL", `${view.ttlSeconds}s after it ends`);
  if (view.createdAt !== undefined) out += field("Created", ago(view.createdAt, now));
  if (view.deletingSince !== undefined) out += field("Deleting", `since ${ago(view.deletingSince, now)}`);
  out += field("Finalizers", view.finalizers.length === 0 ? "<none>" : view.finalizers.join(", "));
  const since = fromWireTime(status.lastTransitionTime);
  out += field(
    "State",
    `${status.state ?? "<none>"}${since === undefined ? "" : ` since ${ago(since, now)}`}`,
  );
  out += field(
    "Phase",
    status.lastOperation === undefined ? "<none>" : `${phaseOf(status)}: ${status.lastOperation.description}`,
  );
  out += field("Why", why(view, now));
  if (view.result !== undefined) out += field("Result", view.result);
  const conditions = view.conditions ?? [];
  if (conditions.length > 0) {
    out += "\nConditions:\n";
    for (const condition of conditions)
      out += `  ${condition.type}=${condition.status}  ${condition.reason}: ${condition.message}\n`;
  }

  out += "\nTimeline:\n";
  const created = view.createdAt;
  for (const entry of timeline(view, events ?? [])) {
    const offset = created === undefined ? "" : `+${humanDuration(entry.at - created)}`;
    // Event notes come from the cluster as they are; the view's texts are escaped already.
    out += `  ${toWireTime(entry.at)}  ${offset.padEnd(7)} ${entry.source.padEnd(9)} ${terminalText(entry.text)}\n`;
  }
  if (events === undefined)
    out += `  (events not shown: ${terminalText(eventsError ?? "could not be listed")})\n`;
  else if (events.length === 0) out += "  (no events recorded for this task, or they have expired)\n";

  const errors = status.lastErrors ?? [];
  out += `\nLast errors (${errors.length === 0 ? "none" : "oldest first, newest last"}):\n`;
  for (const error of errors.map(decodeLastError)) {
    const at = error.observedAt === undefined ? "" : toWireTime(error.observedAt);
    out += `  ${at}  ${error.code}${error.operation === undefined ? "" : `  (${error.operation})`}\n`;
    out += `    message: ${error.message}\n`;
    if (error.cause !== undefined) out += `    cause:   ${error.cause}\n`;
  }
  return out;
};

export interface DescribeOptions {
  readonly cluster: Cluster;
  readonly namespace: string;
  readonly name: string;
  readonly stdout: Output;
}

export const describeTask = (options: DescribeOptions): Effect.Effect<number, KubeError> =>
  Effect.gen(function* () {
    const view = viewOf(
      options.cluster.kind,
      yield* getTask(options.cluster, options.namespace, options.name),
    );
    const events = yield* Effect.result(listTaskEvents(options.cluster, options.namespace, view.uid));
    const text = Result.isSuccess(events)
      ? renderDescription(view, events.success, Date.now())
      : renderDescription(view, undefined, Date.now(), `${events.failure.reason}: ${events.failure.message}`);
    options.stdout.write(text);
    return 0;
  });
