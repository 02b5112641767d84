/**
 * The task series of the DEP-05 metrics, kept bounded. A task's labels come from its author (the Etcd
 * name, the config member), so they are bounded before they become series:
 *
 * - every value is at most 63 characters (a longer one keeps its start and a hash of the whole);
 * - a Rejected task carries no Etcd name: its `etcdName` is the author's text and may name no Etcd
 *   (an admitted task's Etcd existed when it was read);
 * - a series is removed once no task that counted in it exists any more, and when its Etcd is deleted.
 *
 * So the series follow the tasks and Etcds that exist, never what was ever written. A removed series
 * restarts from zero if it comes back; Prometheus treats that as a counter reset.
 */
import { createHash } from "node:crypto";

export interface SeriesLabels {
  readonly type: string;
  readonly state: string;
  readonly etcd: string;
  readonly namespace: string;
}

export const MaxLabelValueLength = 63;

const hashOf = (value: string): string => createHash("sha256").update(value).digest("hex").slice(0, 8);

/** `value`, or its start, a dash and 8 hex digits of a hash of the whole: at most 63 characters. */
export const boundedLabelValue = (value: string): string =>
  value.length <= MaxLabelValueLength ? value : `${value.slice(0, MaxLabelValueLength - 9)}-${hashOf(value)}`;

export const boundedLabels = (labels: SeriesLabels): SeriesLabels => ({
  type: boundedLabelValue(labels.type),
  state: boundedLabelValue(labels.state),
  etcd: labels.state === "Rejected" ? "" : boundedLabelValue(labels.etcd),
  namespace: boundedLabelValue(labels.namespace),
});

const keyOf = (labels: SeriesLabels): string =>
  JSON.stringify([labels.type, labels.state, labels.etcd, labels.namespace]);

/** Which live tasks counted in which series; says which series to remove when tasks or Etcds go. */
export class SeriesTracker {
  private readonly series = new Map<string, { labels: SeriesLabels; tasks: Set<string> }>();
  private readonly seriesOfTask = new Map<string, string>();

  /** Records that task `uid` counted in the (bounded) series `labels`. */
  counted(uid: string, labels: SeriesLabels): void {
    const key = keyOf(labels);
    const previous = this.seriesOfTask.get(uid);
    if (previous !== undefined && previous !== key) this.series.get(previous)?.tasks.delete(uid);
    const entry = this.series.get(key) ?? { labels, tasks: new Set<string>() };
    entry.tasks.add(uid);
    this.series.set(key, entry);
    this.seriesOfTask.set(uid, key);
  }

  /** The task is gone: the series it counted in, when no other live task counted there. */
  taskGone(uid: string): SeriesLabels | undefined {
    const key = this.seriesOfTask.get(uid);
    if (key === undefined) return undefined;
    this.seriesOfTask.delete(uid);
    const entry = this.series.get(key);
    if (entry === undefined) return undefined;
    entry.tasks.delete(uid);
    if (entry.tasks.size > 0) return undefined;
    this.series.delete(key);
    return entry.labels;
  }

  /** The Etcd is gone: every series of it, forgotten. */
  etcdGone(namespace: string, etcd: string): ReadonlyArray<SeriesLabels> {
    const bounded = boundedLabelValue(etcd);
    const removed: SeriesLabels[] = [];
    for (const [key, entry] of this.series) {
      if (entry.labels.namespace !== namespace || entry.labels.etcd !== bounded) continue;
      for (const uid of entry.tasks) this.seriesOfTask.delete(uid);
      this.series.delete(key);
      removed.push(entry.labels);
    }
    return removed;
  }

  get size(): number {
    return this.series.size;
  }
}
