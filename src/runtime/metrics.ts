/**
 * Prometheus metrics of the controller (prom-client), under the `opstask_` prefix; each metric and
 * its labels: docs/running.md#metrics-one-by-one. The contract: the task metrics are etcd-druid's
 * DEP-05 pair under our prefix, their label values bounded and their series gone with their tasks
 * and Etcds (metric-series.ts); every other label set is closed or bounded; the event loop is read
 * when scraped (`eventLoopFigures`), never sampled on a timer, so an idle controller stays asleep.
 */
import { performance } from "node:perf_hooks";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { FaultCounter } from "../interpreters/kubernetes/fault-counter.ts";
import type { RequestCounter } from "../kube/request-metrics.ts";
import type { Phase } from "../machine/types.ts";
import type { Pass } from "../reconcile/pass.ts";
import { MaxTimerDelayMs } from "../timer-limit.ts";
import { ForeignWriterSeries } from "./foreign-writer-series.ts";
import { boundedLabels, boundedLabelValue, type SeriesLabels, SeriesTracker } from "./metric-series.ts";
import type { WorkQueueMetrics } from "./work-queue.ts";

/** A finished task's labels: its series' and its kind's. */
export interface TaskLabels extends SeriesLabels {
  /** `EtcdOpsTask`, `BackupVerification`: the controller always gives it (absent: an empty label). */
  readonly kind?: string;
}

export type PassResult = "ended" | "aborted" | "gone";

/** What the controller reports as it works; `noObserver` when nobody listens. */
export interface ControllerObserver {
  readonly passEnded: (result: PassResult, seconds: number) => void;
  /**
   * `uid`: the task's, so that its series can go with it (`taskGone`); `errorCode`: the last error's
   * code in the status that ended it (a Failed or Rejected task's), read from the object written.
   */
  readonly taskFinished: (labels: TaskLabels, seconds: number, uid?: string, errorCode?: string) => void;
  /** The task object is deleted. */
  readonly taskGone?: (uid: string) => void;
  /** An object of the admission groups' resource (an Etcd) is deleted. */
  readonly groupGone?: (namespace: string, name: string) => void;
  /** The machine's steps in one pass and where it ended (for the Stately inspector and traces). */
  readonly passTransitions?: (
    task: { readonly key: string; readonly uid: string; readonly runId: string },
    pass: Pass,
  ) => void;
  /**
   * Another field manager wrote task `uid`'s status or added our finalizer (foreign-writers.ts); the
   * task's `taskGone` removes what it counted in.
   */
  readonly foreignWrite?: (manager: string, field: string, uid: string) => void;
  /** A handler call threw (a defect, reconcile/handler-defect.ts). */
  readonly handlerDefect?: (phase: Phase) => void;
}

export const noObserver: ControllerObserver = { passEnded: () => {}, taskFinished: () => {} };

export interface MetricSources {
  readonly queue: () => WorkQueueMetrics;
  readonly handlerCallsInFlight: () => number;
  readonly requests: RequestCounter;
  readonly leader: () => boolean;
  readonly faults?: FaultCounter;
  readonly apiLostSeconds?: () => number;
}

export interface ControllerMetrics {
  readonly registry: Registry;
  readonly observer: ControllerObserver;
  /** Adds the gauges that read live state; call once the controller runs. */
  readonly attach: (sources: MetricSources) => void;
}

export interface ControllerMetricsOptions {
  /**
   * The label name of the admission group on the task metrics (DEP-05's `etcd` for EtcdOpsTask, the
   * default); a kind of one's own names its own (`runTaskController` passes its vocabulary's word).
   */
  readonly groupLabel?: string;
}

/**
 * The event loop's figures without waking an idle process: prom-client's delay sampler gets a timer
 * that never fires and its histogram gauges are left out; the lag of one turn
 * (`nodejs_eventloop_lag_seconds`) and the busy share since the last scrape
 * (`performance.eventLoopUtilization`) are read when scraped. Why: bench/PROFILE.md#what-woke-it.
 */
const eventLoopFigures = (registry: Registry, prefix: string): void => {
  for (const name of [
    "nodejs_eventloop_lag_min_seconds",
    "nodejs_eventloop_lag_max_seconds",
    "nodejs_eventloop_lag_mean_seconds",
    "nodejs_eventloop_lag_stddev_seconds",
    "nodejs_eventloop_lag_p50_seconds",
    "nodejs_eventloop_lag_p90_seconds",
    "nodejs_eventloop_lag_p99_seconds",
  ])
    registry.removeSingleMetric(`${prefix}${name}`);
  let since = performance.eventLoopUtilization();
  new Gauge({
    name: `${prefix}nodejs_eventloop_utilization`,
    help: "Share of the time the event loop was busy since the last scrape (0 to 1)",
    registers: [registry],
    collect() {
      const now = performance.eventLoopUtilization();
      this.set(performance.eventLoopUtilization(now, since).utilization);
      since = now;
    },
  });
};

const reservedLabels = new Set(["type", "state", "namespace", "le", "quantile"]);

/** A Prometheus label name for an admission group's word: `admission group` → `admission_group`. */
export const metricLabelOf = (word: string): string => {
  const label = word
    .toLowerCase()
    .replace(/[^a-z0-9_]+/g, "_")
    .replace(/^_+|_+$/g, "");
  return label === "" || /^[0-9]/.test(label) || label.startsWith("__") ? `group_${label}` : label;
};

export const makeControllerMetrics = (
  prefix = "opstask_",
  options: ControllerMetricsOptions = {},
): ControllerMetrics => {
  const groupLabel = options.groupLabel ?? "etcd";
  if (
    !/^[a-zA-Z_][a-zA-Z0-9_]*$/.test(groupLabel) ||
    groupLabel.startsWith("__") ||
    reservedLabels.has(groupLabel)
  )
    throw new Error(
      `metric label ${JSON.stringify(groupLabel)} for the admission group is not a free Prometheus label name (letters, digits, _; not type, state, namespace)`,
    );
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix, eventLoopMonitoringPrecision: MaxTimerDelayMs });
  eventLoopFigures(registry, prefix);
  const taskLabels = ["type", "state", groupLabel, "namespace"];
  /** The metric's labels of a task's (whose admission group is under `etcd` inside). */
  const promLabels = (labels: TaskLabels): Record<string, string> => ({
    type: labels.type,
    state: labels.state,
    [groupLabel]: labels.etcd,
    namespace: labels.namespace,
  });
  const duration = new Histogram({
    name: `${prefix}task_duration_seconds`,
    help: "From creation to the terminal state, per finished task",
    labelNames: taskLabels,
    buckets: [1, 5, 15, 30, 60, 120, 300, 600, 900, 1800, 3600],
    registers: [registry],
  });
  const tasks = new Counter({
    name: `${prefix}tasks_total`,
    help: "Tasks that reached a terminal state",
    labelNames: taskLabels,
    registers: [registry],
  });
  // Outlives the tasks: its labels come from the kind and the handlers, not from what a task says.
  const finished = new Counter({
    name: `${prefix}tasks_finished_total`,
    help: "Tasks that reached a terminal state, by kind, type and state; never removed (tasks_total's series go with their tasks)",
    labelNames: ["kind", "type", "state"] as const,
    registers: [registry],
  });
  const passes = new Counter({
    name: `${prefix}reconcile_total`,
    help: "Reconcile passes by how they ended",
    labelNames: ["result"] as const,
    registers: [registry],
  });
  const passSeconds = new Histogram({
    name: `${prefix}reconcile_duration_seconds`,
    help: "Reconcile pass duration (handler calls included)",
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 300, 900],
    registers: [registry],
  });
  // Task labels come from task authors: bounded, and removed with their tasks and Etcds.
  const series = new SeriesTracker();
  const removeSeries = (labels: TaskLabels): void => {
    tasks.remove(promLabels(labels));
    duration.remove(promLabels(labels));
  };
  const foreignWrites = new Counter({
    name: `${prefix}foreign_writes_total`,
    help: "Tasks another controller wrote (status, or our finalizer), by its field manager (a few, then other); reported once per task, removed with the tasks",
    labelNames: ["manager", "field"] as const,
    registers: [registry],
  });
  // Field managers are the writers' choice: bounded, and removed with the tasks they wrote.
  const foreignSeries = new ForeignWriterSeries();
  const handlerDefects = new Counter({
    name: `${prefix}handler_defects_total`,
    help: "Handler calls that threw instead of returning a result (a bug in the handler), by phase",
    labelNames: ["phase"] as const,
    registers: [registry],
  });
  for (const phase of ["admit", "execute", "cleanup"] as const) handlerDefects.inc({ phase }, 0);
  const observer: ControllerObserver = {
    foreignWrite: (manager, field, uid) =>
      foreignWrites.inc({ ...foreignSeries.counted(manager, field, uid) }),
    handlerDefect: (phase) => handlerDefects.inc({ phase }),
    passEnded: (result, seconds) => {
      passes.inc({ result });
      passSeconds.observe(seconds);
    },
    taskFinished: (labels, seconds, uid) => {
      const bounded = boundedLabels(labels);
      tasks.inc(promLabels(bounded));
      finished.inc({ kind: boundedLabelValue(labels.kind ?? ""), type: bounded.type, state: bounded.state });
      duration.observe(promLabels(bounded), seconds);
      if (uid !== undefined) series.counted(uid, bounded);
    },
    taskGone: (uid) => {
      const gone = series.taskGone(uid);
      if (gone !== undefined) removeSeries(gone);
      for (const labels of foreignSeries.taskGone(uid)) foreignWrites.remove({ ...labels });
    },
    groupGone: (namespace, name) => {
      for (const gone of series.etcdGone(namespace, name)) removeSeries(gone);
    },
  };
  const attach = (sources: MetricSources): void => {
    const gauge = (name: string, help: string, read: () => number) =>
      new Gauge({
        name: `${prefix}${name}`,
        help,
        registers: [registry],
        collect() {
          this.set(read());
        },
      });
    gauge("workqueue_depth", "Keys waiting for a worker", () => sources.queue().depth);
    gauge("workqueue_in_flight", "Keys being reconciled", () => sources.queue().inFlight);
    gauge("workqueue_delayed", "Keys with a pending requeue timer", () => sources.queue().delayed);
    gauge("workqueue_adds_total", "Keys added (including fired timers)", () => sources.queue().adds);
    gauge(
      "workqueue_wait_seconds_max",
      "Longest wait of a key for a worker",
      () => sources.queue().waitMaxMs / 1000,
    );
    gauge("handler_calls_in_flight", "Handler calls running", sources.handlerCallsInFlight);
    gauge("leader", "1 while this instance leads", () => (sources.leader() ? 1 : 0));
    new Gauge({
      name: `${prefix}api_requests_total`,
      help: "API requests by verb and HTTP code (0: no response), retries included",
      labelNames: ["verb", "code"] as const,
      registers: [registry],
      collect() {
        for (const { verb, code, count } of sources.requests.snapshot())
          this.set({ verb, code: String(code) }, count);
      },
    });
    const faults = sources.faults;
    if (faults !== undefined)
      new Gauge({
        name: `${prefix}api_faults_total`,
        help: "API faults ridden out, by operation and kind (retried, slow, failed, expired, dropped)",
        labelNames: ["operation", "fault"] as const,
        registers: [registry],
        collect() {
          for (const { operation, fault, count } of faults.snapshot()) this.set({ operation, fault }, count);
        },
      });
    const apiLostSeconds = sources.apiLostSeconds;
    if (apiLostSeconds !== undefined)
      gauge(
        "api_unreachable_seconds",
        "How long the API server has not answered (0 while it does)",
        apiLostSeconds,
      );
  };
  return { registry, observer, attach };
};
