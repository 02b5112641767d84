/**
 * The series of `opstask_foreign_writes_total{manager,field}`, kept bounded. A field manager's name is
 * whatever the writing client sends, so a task author who may patch a task (or its status) chooses it:
 *
 * - a name longer than a label value may be keeps its start and a hash of the whole (metric-series.ts);
 * - at most `MaxForeignManagers` distinct names get a series of their own at a time; later writers
 *   count under `other`;
 * - a series is removed once no live task that counted in it exists any more, and its name's slot
 *   is free again.
 *
 * So the series follow the tasks that exist, never every name ever written.
 */
import { boundedLabelValue } from "./metric-series.ts";

/** Distinct field managers with a series of their own (`other` besides). */
export const MaxForeignManagers = 8;

/** The manager label of the writers beyond `MaxForeignManagers`. */
export const OtherForeignManager = "other";

export interface ForeignWriteLabels {
  readonly manager: string;
  readonly field: string;
}

const keyOf = (labels: ForeignWriteLabels): string => JSON.stringify([labels.manager, labels.field]);

export class ForeignWriterSeries {
  /** By series key: its labels and the live tasks that counted in it. */
  private readonly series = new Map<string, { labels: ForeignWriteLabels; tasks: Set<string> }>();
  /** By task UID: the series keys it counted in. */
  private readonly seriesOfTask = new Map<string, Set<string>>();
  /** By bounded manager name (not `other`): how many series carry it. */
  private readonly managers = new Map<string, number>();

  /** Records that task `uid` was written by `manager`; the labels to count the write under. */
  counted(manager: string, field: string, uid: string): ForeignWriteLabels {
    const bounded = boundedLabelValue(manager);
    const own =
      bounded !== OtherForeignManager &&
      (this.managers.has(bounded) || this.managers.size < MaxForeignManagers);
    const labels = { manager: own ? bounded : OtherForeignManager, field };
    const key = keyOf(labels);
    const entry = this.series.get(key);
    if (entry === undefined) {
      this.series.set(key, { labels, tasks: new Set([uid]) });
      if (own) this.managers.set(bounded, (this.managers.get(bounded) ?? 0) + 1);
    } else entry.tasks.add(uid);
    const keys = this.seriesOfTask.get(uid);
    if (keys === undefined) this.seriesOfTask.set(uid, new Set([key]));
    else keys.add(key);
    return labels;
  }

  /** The task is gone: the series it counted in that no other live task counted in. */
  taskGone(uid: string): ReadonlyArray<ForeignWriteLabels> {
    const keys = this.seriesOfTask.get(uid);
    if (keys === undefined) return [];
    this.seriesOfTask.delete(uid);
    const removed: ForeignWriteLabels[] = [];
    for (const key of keys) {
      const entry = this.series.get(key);
      if (entry === undefined) continue;
      entry.tasks.delete(uid);
      if (entry.tasks.size > 0) continue;
      this.series.delete(key);
      removed.push(entry.labels);
      const carriers = this.managers.get(entry.labels.manager);
      if (carriers === undefined) continue;
      if (carriers > 1) this.managers.set(entry.labels.manager, carriers - 1);
      else this.managers.delete(entry.labels.manager);
    }
    return removed;
  }

  get size(): number {
    return this.series.size;
  }
}
