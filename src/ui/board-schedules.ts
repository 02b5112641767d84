/**
 * The task board's schedules: each TaskSchedule of the watched namespaces as the schedule controller
 * last saw it (its cron, time zone, whether suspended, its runs in flight, last and next times, and why
 * recent times got no run). Fed by the schedule controller after every pass over a schedule.
 *
 * Bounded like the tasks (board-store.ts): every string is cut to `maxText` characters, a schedule keeps
 * at most 10 active runs and 5 skipped times, and at most `maxSchedules` schedules are kept (the one
 * updated longest ago is forgotten first; its next pass brings it back).
 */
import type { KubeObject } from "../kube/object.ts";

export interface ScheduleSummary {
  readonly key: string;
  readonly namespace: string;
  readonly name: string;
  /** The task kind of its runs (`EtcdOpsTask`). */
  readonly taskKind: string;
  /** Five-field cron, as written. */
  readonly schedule: string;
  /** `UTC` when the spec names none. */
  readonly timeZone: string;
  readonly suspended: boolean;
  /** Names of the runs not finished yet. */
  readonly active: ReadonlyArray<string>;
  /** RFC 3339, `` when none yet. */
  readonly lastScheduleTime: string;
  readonly lastSuccessfulTime: string;
  /** `` while suspended or before the controller decided. */
  readonly nextRunTime: string;
  /** Newest first: `TIME REASON: message`. */
  readonly skippedRuns: ReadonlyArray<string>;
  /** The `Ready` condition when not True: `Reason: message` (an invalid spec, an unknown task kind). */
  readonly notReady: string;
  readonly updatedAt: number;
}

export const defaultMaxSchedules = 1_000;
const maxActive = 10;
const maxSkipped = 5;

const record = (value: unknown): Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
const list = (value: unknown): ReadonlyArray<unknown> => (Array.isArray(value) ? value : []);
const string = (value: unknown): string => (typeof value === "string" ? value : "");

export class BoardSchedules {
  /** By key; least recently updated first (re-inserted on every update). */
  private readonly schedules = new Map<string, ScheduleSummary>();
  private readonly listeners = new Set<(key: string) => void>();

  private readonly maxSchedules: number;
  private readonly maxText: number;

  constructor(maxSchedules = defaultMaxSchedules, maxText = 512) {
    this.maxSchedules = maxSchedules;
    this.maxText = maxText;
  }

  get size(): number {
    return this.schedules.size;
  }

  /** Called with a schedule's key after each change (its removal included); returns the unsubscribe. */
  onChange(listener: (key: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** A schedule as the controller's cache holds it after a pass; `undefined` when it is gone. */
  observe(key: string, object: KubeObject | undefined, now: number): void {
    if (object === undefined) {
      if (this.schedules.delete(key)) this.notify(key);
      return;
    }
    const text = (value: unknown) => this.cut(string(value));
    const spec = record(object.spec);
    const status = record(object.status);
    const ready = list(status.conditions)
      .map(record)
      .find((condition) => condition.type === "Ready");
    const summary: ScheduleSummary = {
      key,
      namespace: object.metadata.namespace,
      name: object.metadata.name,
      taskKind: text(record(spec.taskKind).kind),
      schedule: text(spec.schedule),
      timeZone: text(spec.timeZone) || "UTC",
      suspended: spec.suspend === true,
      active: list(status.active)
        .slice(0, maxActive)
        .map((run) => text(record(run).name)),
      lastScheduleTime: text(status.lastScheduleTime),
      lastSuccessfulTime: text(status.lastSuccessfulTime),
      nextRunTime: spec.suspend === true ? "" : text(status.nextRunTime),
      skippedRuns: list(status.skippedRuns)
        .slice(0, maxSkipped)
        .map(record)
        .map((skip) =>
          this.cut(`${string(skip.scheduledTime)} ${string(skip.reason)}: ${string(skip.message)}`),
        ),
      notReady:
        ready === undefined || ready.status === "True"
          ? ""
          : text(`${string(ready.reason)}: ${string(ready.message)}`),
      updatedAt: now,
    };
    const previous = this.schedules.get(key);
    if (previous !== undefined && same(previous, summary)) return;
    this.schedules.delete(key);
    this.schedules.set(key, summary);
    while (this.schedules.size > this.maxSchedules) {
      const oldest = this.schedules.keys().next();
      if (oldest.done) break;
      this.schedules.delete(oldest.value);
      this.notify(oldest.value);
    }
    this.notify(key);
  }

  summaries(): ScheduleSummary[] {
    return [...this.schedules.values()];
  }

  summary(key: string): ScheduleSummary | undefined {
    return this.schedules.get(key);
  }

  private notify(key: string): void {
    for (const listener of this.listeners) listener(key);
  }

  private cut(text: string): string {
    return text.length > this.maxText ? `${text.slice(0, this.maxText)}…` : text;
  }
}

const same = (a: ScheduleSummary, b: ScheduleSummary): boolean =>
  JSON.stringify({ ...a, updatedAt: 0 }) === JSON.stringify({ ...b, updatedAt: 0 });
