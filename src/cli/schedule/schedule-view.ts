/**
 * How `opstask schedule get` and `describe` show a TaskSchedule: read leniently from the stored
 * object (a schedule the controller calls invalid is still shown), text made safe for a terminal.
 */

import { terminalText } from "../../api/terminal-text.ts";
import type { KubeObject } from "../../kube/object.ts";
import { scheduledTimeAnnotation } from "../../schedule/run-names.ts";
import type { ScheduleStatus } from "../../schedule/schedule-status.ts";
import { formatTable } from "../task/table.ts";

type Json = Readonly<Record<string, unknown>>;
const record = (value: unknown): Json =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Json) : {};
const text = (value: unknown, fallback = "<none>"): string =>
  value === undefined || value === null || value === "" ? fallback : terminalText(String(value));

const specOf = (object: KubeObject) => record(object.spec);
const statusOf = (object: KubeObject): ScheduleStatus => record(object.status) as ScheduleStatus;

export const scheduleTable = (objects: ReadonlyArray<KubeObject>): string =>
  formatTable([
    [
      "NAME",
      "SCHEDULE",
      "TIMEZONE",
      "KIND",
      "SUSPEND",
      "ACTIVE",
      "LAST SCHEDULE",
      "LAST SUCCESS",
      "NEXT RUN",
    ],
    ...objects.map((object) => {
      const spec = specOf(object);
      const status = statusOf(object);
      return [
        text(object.metadata.name),
        text(spec.schedule),
        text(spec.timeZone, "UTC"),
        text(record(spec.taskKind).kind),
        text(spec.suspend === true),
        String(status.active?.length ?? 0),
        text(status.lastScheduleTime),
        text(status.lastSuccessfulTime),
        text(spec.suspend === true ? undefined : status.nextRunTime),
      ];
    }),
  ]);

export const describeSchedule = (object: KubeObject, runs: ReadonlyArray<KubeObject>): string => {
  const spec = specOf(object);
  const status = statusOf(object);
  const kind = record(spec.taskKind);
  const guard = record(spec.guard);
  const ready = status.conditions?.find((condition) => condition.type === "Ready");
  const parameters = Object.entries(record(guard.parameters)).map(
    ([key, value]) => `${key}=${String(value)}`,
  );
  const lines = [
    `Name:          ${text(object.metadata.name)}`,
    `Namespace:     ${text(object.metadata.namespace)}`,
    `Task kind:     ${text(kind.kind)} (${text(kind.apiVersion)})`,
    `Schedule:      ${text(spec.schedule)} (${text(spec.timeZone, "UTC")})`,
    `Suspend:       ${text(spec.suspend === true)}`,
    `Concurrency:   ${text(spec.concurrencyPolicy, "Forbid")}`,
    `Deadline:      ${spec.startingDeadlineSeconds === undefined ? "none" : `${text(spec.startingDeadlineSeconds)}s`}`,
    `History:       ${text(spec.successfulRunsHistoryLimit, "3")} succeeded, ${text(spec.failedRunsHistoryLimit, "1")} failed`,
    `Guard:         ${guard.name === undefined ? "none" : `${text(guard.name)}${parameters.length === 0 ? "" : ` (${terminalText(parameters.join(", "))})`}`}`,
    `Ready:         ${ready === undefined ? "<unknown: not decided yet>" : `${text(ready.status)} ${text(ready.reason)}: ${text(ready.message)}`}`,
    `Last schedule: ${text(status.lastScheduleTime)}`,
    `Last success:  ${text(status.lastSuccessfulTime)}`,
    `Last failure:  ${text(status.lastFailedTime)}`,
    `Next run:      ${text(spec.suspend === true ? "<suspended>" : status.nextRunTime)}`,
    `Active:        ${(status.active ?? []).map((run) => `${text(run.name)} (${text(run.scheduledTime)})`).join(", ") || "<none>"}`,
    "Skipped runs:",
    ...((status.skippedRuns ?? []).length === 0
      ? ["  <none>"]
      : (status.skippedRuns ?? []).map(
          (skip) => `  ${text(skip.scheduledTime)}  ${text(skip.reason)}: ${text(skip.message)}`,
        )),
    "Runs:",
  ];
  const rows = runs
    .map((run) => ({
      name: text(run.metadata.name),
      scheduled: text(record(run.metadata.annotations)[scheduledTimeAnnotation]),
      state: text(record(run.status).state, "<new>"),
    }))
    .sort((a, b) => a.scheduled.localeCompare(b.scheduled));
  const table =
    rows.length === 0
      ? "  <none>\n"
      : formatTable([
          ["NAME", "SCHEDULED", "STATE"],
          ...rows.map((row) => [row.name, row.scheduled, row.state]),
        ])
          .split("\n")
          .map((line) => (line === "" ? line : `  ${line}`))
          .join("\n");
  return `${lines.join("\n")}\n${table}`;
};
