/**
 * The history's metrics, beside the controller's in one registry:
 *
 * - `opstask_task_last_success_timestamp_seconds{kind,namespace,target,type}` and
 *   `opstask_task_last_failure_timestamp_seconds{…}`: when the last task of a type Succeeded (Failed)
 *   for a target, in Unix seconds; rebuilt from the history ConfigMaps when an instance takes over, so
 *   a restart answers the same values. Their series follow the history's entries (bounded per
 *   namespace, history-entry.ts), never the tasks;
 * - `opstask_history_write_failures_total`: history writes that failed (kept and retried later);
 * - `opstask_history_evictions_total`: entries dropped to stay within the bounds;
 * - `opstask_history_pending`: outcomes seen but not yet written;
 * - `opstask_target_at_rest{kind,namespace,target}`: 1 while a target the history shows takes no
 *   tasks by design (an etcd hibernated to 0 replicas), else 0; only with `atRest`. An alert on a
 *   target's last success leaves such targets out (`unless on (namespace, target) … == 1`).
 */
import { Counter, Gauge, type Registry } from "prom-client";
import type { HistoryEntry } from "./history-entry.ts";

export interface HistoryMetrics {
  /** Sets the entry's series (its success and failure times, when it has them). */
  readonly show: (namespace: string, entry: HistoryEntry) => void;
  readonly forget: (namespace: string, entry: Pick<HistoryEntry, "target" | "type">) => void;
  readonly writeFailed: () => void;
  readonly evicted: (count: number) => void;
}

export const noHistoryMetrics: HistoryMetrics = {
  show: () => {},
  forget: () => {},
  writeFailed: () => {},
  evicted: () => {},
};

export const historyMetricLabels = ["kind", "namespace", "target", "type"] as const;

/** Whether a target takes no tasks now by design (an etcd hibernated), read when metrics are scraped. */
export type TargetAtRest = (namespace: string, target: string) => boolean;

export const makeHistoryMetrics = (
  registry: Registry,
  kind: string,
  pending: () => number,
  prefix = "opstask_",
  atRest?: TargetAtRest,
): HistoryMetrics => {
  const lastSuccess = new Gauge({
    name: `${prefix}task_last_success_timestamp_seconds`,
    help: "When the last task of a type Succeeded for a target (Unix seconds); kept after the tasks' TTL and across restarts",
    labelNames: historyMetricLabels,
    registers: [registry],
  });
  const lastFailure = new Gauge({
    name: `${prefix}task_last_failure_timestamp_seconds`,
    help: "When the last task of a type Failed for a target (Unix seconds); kept after the tasks' TTL and across restarts",
    labelNames: historyMetricLabels,
    registers: [registry],
  });
  const writeFailures = new Counter({
    name: `${prefix}history_write_failures_total`,
    help: "History ConfigMap writes that failed; their outcomes are kept and written later",
    registers: [registry],
  });
  const evictions = new Counter({
    name: `${prefix}history_evictions_total`,
    help: "History entries (target x type) dropped to keep a namespace's history within its bounds",
    registers: [registry],
  });
  new Gauge({
    name: `${prefix}history_pending`,
    help: "Task outcomes seen but not yet written to a history ConfigMap",
    registers: [registry],
    collect() {
      this.set(pending());
    },
  });
  // The targets the history shows, by namespace/target, with how many of their types it shows.
  const shown = new Map<
    string,
    { readonly namespace: string; readonly target: string; types: Set<string> }
  >();
  if (atRest !== undefined)
    new Gauge({
      name: `${prefix}target_at_rest`,
      help: "1 while a target the history shows takes no tasks by design (an etcd hibernated to 0 replicas), else 0",
      labelNames: ["kind", "namespace", "target"],
      registers: [registry],
      collect() {
        this.reset();
        for (const { namespace, target } of shown.values())
          this.set({ kind, namespace, target }, atRest(namespace, target) ? 1 : 0);
      },
    });
  const labels = (namespace: string, entry: Pick<HistoryEntry, "target" | "type">) => ({
    kind,
    namespace,
    target: entry.target,
    type: entry.type,
  });
  return {
    show: (namespace, entry) => {
      const key = `${namespace}/${entry.target}`;
      const known = shown.get(key);
      if (known === undefined)
        shown.set(key, { namespace, target: entry.target, types: new Set([entry.type]) });
      else known.types.add(entry.type);
      if (entry.lastSuccessAt !== undefined)
        lastSuccess.set(labels(namespace, entry), entry.lastSuccessAt / 1000);
      if (entry.lastFailureAt !== undefined)
        lastFailure.set(labels(namespace, entry), entry.lastFailureAt / 1000);
    },
    forget: (namespace, entry) => {
      const key = `${namespace}/${entry.target}`;
      const known = shown.get(key);
      known?.types.delete(entry.type);
      if (known?.types.size === 0) shown.delete(key);
      lastSuccess.remove(labels(namespace, entry));
      lastFailure.remove(labels(namespace, entry));
    },
    writeFailed: () => writeFailures.inc(),
    evicted: (count) => evictions.inc(count),
  };
};
