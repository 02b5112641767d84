/**
 * `runTaskController`, the easy level: one call runs a task kind's whole lifecycle on a cluster
 * (finalizer, admission with the duplicate policy, Execute with per-task backoff, TTL deletion, cleanup,
 * status in druid's schema, Events) with the production wiring as options (leader election, `/healthz`
 * and `/readyz`, Prometheus metrics, a field manager of its own), and returns once the task cache is
 * synced. It fails with a clear error when the CRD is missing or the cluster does not answer within
 * `startTimeoutMs` (start-checks.ts). Underneath: `runController` (src/runtime/controller.ts) with
 * `kubernetesLayer`, both exported for programs that need the hard mode.
 */
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import * as Duration from "effect/Duration";
import * as Effect from "effect/Effect";
import * as Exit from "effect/Exit";
import * as Fiber from "effect/Fiber";
import * as Layer from "effect/Layer";
import * as Logger from "effect/Logger";
import * as ManagedRuntime from "effect/ManagedRuntime";
import * as References from "effect/References";
import * as Scope from "effect/Scope";
import type { HandlerRegistry } from "../handlers/handler.ts";
import { historyLimitsOf } from "../history/history-entry.ts";
import { makeHistoryMetrics, type TargetAtRest } from "../history/history-metrics.ts";
import { historyConfigMapName } from "../history/history-store.ts";
import { makePhaseAges, registerPhaseAgeMetrics } from "../history/phase-ages.ts";
import { type HistoryLog, makeTaskHistory, type TaskHistory } from "../history/task-history.ts";
import { EventRecorder } from "../interpreters/kubernetes/event-recorder.ts";
import { type FaultCounter, KubeFaults } from "../interpreters/kubernetes/fault-counter.ts";
import { kubernetesLayer } from "../interpreters/kubernetes/layer.ts";
import { withFieldManager } from "../kube/field-manager.ts";
import type { KubeAccess } from "../kube/kube-client-node.ts";
import { loadKubeClient } from "../kube/kubeconfig-loader.ts";
import type { KubeObject } from "../kube/object.ts";
import type { RequestCounter } from "../kube/request-metrics.ts";
import { lifecycleConfig } from "../reconcile/defaults.ts";
import type { ResourceRef, TaskKind } from "../reconcile/task-kind.ts";
import { ContactCounter } from "../runtime/api-contact.ts";
import { type ControllerHandle, type ControllerStats, runController } from "../runtime/controller.ts";
import { queuedEventRecorder } from "../runtime/event-queue.ts";
import type { OtherController } from "../runtime/foreign-writers.ts";
import type { GroupObjects } from "../runtime/group-objects.ts";
import { runLeaderElection } from "../runtime/leader-election.ts";
import { startMemoryReturn } from "../runtime/memory-return.ts";
import { type ControllerObserver, metricLabelOf, noObserver } from "../runtime/metrics.ts";
import { podNamespace } from "../runtime/pod-namespace.ts";
import { sumQueueMetrics, type WorkQueueMetrics } from "../runtime/work-queue.ts";
import { alsoObserve } from "../ui/also-observe.ts";
import type { ExplainInput } from "../ui/board-store.ts";
import { defaultControllerName } from "./controller-name.ts";
import { type LifecycleOptions, lifecycleOverrides } from "./lifecycle-options.ts";
import { bothObservers, type MetricsEndpoint, startOpsWiring } from "./ops-wiring.ts";
import type { ServicesOption } from "./services-option.ts";
import { checkServed, TaskControllerStartError } from "./start-checks.ts";

export type { OtherController } from "../runtime/foreign-writers.ts";
export type { LifecycleTiming } from "./lifecycle-options.ts";
export type { MetricsEndpoint } from "./ops-wiring.ts";

export type LogLevel = "debug" | "info" | "warn" | "error" | "none";

/** One active instance among replicas: the one holding the Lease runs the controller. */
export interface LeaderElectionOptions {
  /** The Lease's name, e.g. `backup-verifier-leader`. */
  readonly name: string;
  /** The Lease's namespace (default: the watched namespace when there is one, else `default`). */
  readonly namespace?: string;
  /** Unique per replica (default: host name, process id and a random suffix). */
  readonly identity?: string;
}

export interface TaskControllerBaseOptions<Task, R> extends LifecycleOptions {
  readonly kind: TaskKind<Task>;
  /** Handlers by config member; a task whose member has none is Rejected (`ERR_UNSUPPORTED_TASK`). */
  readonly handlers: HandlerRegistry<Task, R>;
  /**
   * The cluster: a client-node `KubeConfig`, or opstask's lean `KubeClient` (`loadKubeClient(path)`);
   * default: in-cluster, else `$KUBECONFIG` / `~/.kube/config` (as `loadKubeClient()`).
   */
  readonly kubeConfig?: KubeAccess;
  /** Namespaces to watch (one controller each); all when absent. */
  readonly namespace?: string | ReadonlyArray<string>;
  /**
   * The controller's own namespace, one where task authors hold no rights: resumable steps keep their
   * progress there (a ConfigMap per task, `opstask-record-<uid>`; its RBAC: configmaps create, get,
   * patch, delete in it). Default: the pod's namespace (`POD_NAMESPACE`, the service account's),
   * else the Lease's; out of a pod without either, steps tasks fail with ERR_STEPS_UNSUPPORTED.
   */
  readonly progressNamespace?: string;
  /** Passes at once per namespace (default 3). Handler calls never hold a worker. */
  readonly concurrency?: number;
  /** Every task is reconciled again this often, whatever happened (default 10 minutes). */
  readonly resyncIntervalMs?: number;
  /** Objects that name the admission groups: a change to one re-triggers its group's unfinished tasks. */
  readonly groupResource?: Pick<ResourceRef, "group" | "version" | "plural">;
  /** Shares the cache of `groupResource` objects with the handlers (`makeGroupObjects`). */
  readonly groupObjects?: GroupObjects;
  /** Default `info`; logs are JSON lines (`logFormat: "logfmt"` for people) with a reconcile ID per pass. */
  readonly logLevel?: LogLevel;
  readonly logFormat?: "json" | "logfmt";
  /** `reportingController` of the Events (default: the field manager); a qualified name. */
  readonly reportingController?: string;
  /** Told about every pass and finished task, e.g. `makeControllerMetrics().observer`. */
  readonly observer?: ControllerObserver;
  /** Where every API request is counted (share one with other clients, e.g. leader election); default: a new one. */
  readonly counter?: RequestCounter;
  /** Aborting it stops the controller (as `stop()` does); before the start resolves, the start rejects with its reason. */
  readonly signal?: AbortSignal;
  /** What the handlers need (`R`), built once at start and released by `stop()`. */
  readonly services?: Layer.Layer<R, unknown>;
  /**
   * Serve the live task board here (`HOST:PORT`, or `:PORT` on 127.0.0.1; `:0` picks a free port):
   * the machine with its tasks per state, the tasks, each task's passes. Its URL, with the token a
   * browser needs, is `boardUrl`. Off when absent.
   */
  readonly ui?: string;
  /** The board's "why" line of a task (default: its phase and last error); `opstask describe`'s for EtcdOpsTask. */
  readonly uiExplain?: (input: ExplainInput, now: number) => string;
  /**
   * Where slow, failed and given-up writes, watch expiries and dropped Events are counted (shown as
   * `opstask_api_faults_total` by `makeControllerMetrics`); they are logged at WARN either way.
   */
  readonly faults?: FaultCounter;
  /**
   * Who writes: the field manager of every write, so that `managedFields` tell this controller's
   * writes from other writers'; its messages name the controller so too. Default: derived from the
   * kind, `<group>/<plural>-controller` (e.g. `examples.opstask.dev/backupverifications-controller`).
   */
  readonly fieldManager?: string;
  /**
   * Another controller known to act on this kind's objects: when a task's status or finalizer is
   * written by another field manager, the Warning Event names it as the likely writer, and its
   * `guide` (`opstask controller` passes etcd-druid's EtcdOpsTask controller and deploy/coexistence).
   * Default: none named.
   */
  readonly otherController?: OtherController;
  /**
   * Run only while holding this Lease (replicas stand by). `runTaskController` then resolves at once,
   * standing by; `synced` resolves once it leads and its caches are filled, and `done` with "lost" if
   * the Lease is lost (the controller has stopped: exit, as client-go's controllers do).
   */
  readonly leaderElection?: LeaderElectionOptions;
  /** Serve `/healthz` and `/readyz` here (`HOST:PORT`, `:0` a free port); off when absent. */
  readonly probes?: string;
  /** Serve Prometheus metrics (`/metrics`); off when absent. */
  readonly metrics?: MetricsEndpoint;
  /**
   * Label names of the task metrics: `group` names the admission group's label (DEP-05's `etcd` for
   * EtcdOpsTask); default: the kind's vocabulary word for a group, as a label (`admission_group`).
   */
  readonly metricLabels?: { readonly group?: string };
  /**
   * How long the start may take before it fails: the cluster answering API discovery, and (once
   * leading) the caches' first LIST (default 30 000 ms).
   */
  readonly startTimeoutMs?: number;
  /** How to install the CRD, for the error when it is missing (`kubectl apply -f <crdManifest>`). */
  readonly crdManifest?: string;
  /**
   * The bound on one task as the controller caches it, in bytes of JSON (default 64 KiB): a larger
   * task is Rejected with ERR_TASK_TOO_LARGE, so that memory grows with the number of tasks only.
   */
  readonly maxTaskBytes?: number;
  /**
   * Keep each target's last outcome per task type after the tasks' TTL, in one ConfigMap per
   * namespace (`opstask-history-<plural>`), and serve it as `opstask_task_last_success_timestamp_seconds`
   * and `…_last_failure_…` (read back when an instance takes over). Off when absent. Bounded: at most
   * `maxEntries` target × type pairs (default 200) and `maxBytes` (default 128 KiB) per namespace; the
   * least useful entries are evicted and logged. Needs create of ConfigMaps and get, list and update of
   * that one by name (docs/history-and-alerts.md). With `atRest`, also
   * `opstask_target_at_rest{kind,namespace,target}`: whether a target takes no tasks now by design
   * (an etcd hibernated), so that an alert on a last success can leave it out.
   */
  readonly history?: {
    readonly maxEntries?: number;
    readonly maxBytes?: number;
    readonly atRest?: TargetAtRest;
  };
}

export type TaskControllerOptions<Task, R = never> = TaskControllerBaseOptions<Task, R> & ServicesOption<R>;

export interface TaskController {
  /**
   * Stops taking work, interrupts handler calls in flight (their results are dropped; Execute runs
   * again on the next start, which is why it must be safe to repeat) and releases the services.
   */
  readonly stop: () => Promise<void>;
  /** Passes, handler calls and writes so far, over every watched namespace. */
  readonly stats: () => ControllerStats;
  readonly queue: () => WorkQueueMetrics;
  /** Every API request so far, by verb and code. */
  readonly requests: RequestCounter;
  /** The task board's URL with its token, when `ui` was given. */
  readonly boardUrl?: string;
  /**
   * Feeds the task board's schedule list (when `ui` was given): give it to the schedule controller as
   * its `observe` (`opstask controller` does).
   */
  readonly observeSchedule?: (key: string, schedule: KubeObject | undefined) => void;
  /** Resolves once the controller leads (always, without leader election) and its caches are filled. */
  readonly synced: Promise<void>;
  /** Whether this instance runs the controller (true without leader election). */
  readonly leading: () => boolean;
  /** Resolves once stopped: "lost" when the Lease was lost, "stopped" by `stop()` or the signal. */
  readonly done: Promise<"stopped" | "lost">;
  /** Where `/metrics` and the probes are served, when asked for. */
  readonly metricsUrl?: string;
  readonly probesUrl?: string;
}

export { TaskControllerStartError } from "./start-checks.ts";

const logLevels = { debug: "Debug", info: "Info", warn: "Warn", error: "Error", none: "None" } as const;

/**
 * Starts the controller; resolves once every watched namespace's cache holds its first LIST (under
 * leader election: once standing by). Rejects with a `TaskControllerStartError` when the CRD is not
 * installed or the cluster does not answer within `startTimeoutMs`.
 */
export const runTaskController = async <Task, R = never>(
  options: TaskControllerOptions<Task, R>,
): Promise<TaskController> => {
  const { kind, handlers } = options;
  const fieldManager = options.fieldManager ?? defaultControllerName(kind.resource);
  const access = options.kubeConfig ?? (await loadKubeClient(undefined, { fieldManager }));
  const client = withFieldManager(access, fieldManager);
  const counter = options.counter ?? new ContactCounter();
  const timeoutMs = options.startTimeoutMs ?? 30_000;
  await checkServed({
    client,
    resource: kind.resource,
    timeoutMs,
    ...(options.crdManifest === undefined ? {} : { crdManifest: options.crdManifest }),
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  });
  const config = lifecycleConfig(kind, lifecycleOverrides(options));
  const namespaces: ReadonlyArray<string | undefined> =
    options.namespace === undefined
      ? [undefined]
      : typeof options.namespace === "string"
        ? [options.namespace]
        : options.namespace;
  const progressNamespace = options.progressNamespace ?? podNamespace() ?? options.leaderElection?.namespace;
  // `services` is required by the type exactly when R is not never, so the fallback provides nothing.
  const services = options.services ?? (Layer.empty as Layer.Layer<R>);
  const handles: ControllerHandle[] = [];
  let leading = options.leaderElection === undefined;
  let synced = false;
  let lost = false;
  const ops = await startOpsWiring({
    ...(options.metrics === undefined ? {} : { metrics: options.metrics }),
    ...(options.probes === undefined ? {} : { probes: options.probes }),
    groupLabel: options.metricLabels?.group ?? metricLabelOf(kind.vocabulary.group),
    client,
    counter,
    ...(options.faults === undefined ? {} : { faults: options.faults }),
    state: {
      leading: () => leading,
      synced: () => synced,
      caches: namespaces.length,
      queue: () => sumQueueMetrics(handles.map((handle) => handle.queue())),
      inFlightCalls: () => sumStats(handles.map((handle) => handle.stats())).inFlightCalls,
    },
  });
  // Logs of the parts that run beside the Effect runtime; bound once the runtime exists.
  let logBeside: HistoryLog = () => {};
  let history: TaskHistory | undefined;
  if (options.history !== undefined) {
    const registry = ops.metrics?.registry;
    history = makeTaskHistory({
      client,
      configMapName: historyConfigMapName(kind.resource),
      plural: kind.resource.plural,
      limits: historyLimitsOf(options.history),
      ...(registry === undefined
        ? {}
        : {
            metrics: makeHistoryMetrics(
              registry,
              kind.resource.kind,
              () => history?.pending() ?? 0,
              "opstask_",
              options.history.atRest,
            ),
          }),
      log: (level, message, fields) => logBeside(level, message, fields),
    });
  }
  const board =
    options.ui === undefined
      ? undefined
      : await (await import("../ui/task-board.ts")).startTaskBoard({
          address: options.ui,
          kind,
          ...(options.uiExplain === undefined ? {} : { explain: options.uiExplain }),
        });
  const kubernetes = kubernetesLayer({
    kubeConfig: client,
    resource: kind.resource,
    counter,
    reportingController: options.reportingController ?? fieldManager,
  });
  const given =
    ops.metrics === undefined
      ? options.observer
      : options.observer === undefined
        ? ops.metrics.observer
        : bothObservers(options.observer, ops.metrics.observer);
  // With metrics: how long tasks have been in their phase (the "stuck in a phase" alert's figure).
  const phaseAges = ops.metrics === undefined ? undefined : makePhaseAges();
  if (ops.metrics !== undefined && phaseAges !== undefined)
    registerPhaseAgeMetrics(ops.metrics.registry, kind.resource.kind, phaseAges, config.phaseDeadlineMs);
  const recorded = [history?.observer, phaseAges?.observer].reduce<ControllerObserver | undefined>(
    (sofar, next) => (next === undefined ? sofar : sofar === undefined ? next : bothObservers(sofar, next)),
    given,
  );
  const observer = board === undefined ? recorded : alsoObserve(recorded ?? noObserver, board.observer);
  const runtime = ManagedRuntime.make(
    Layer.mergeAll(
      board?.layer(kubernetes) ?? kubernetes,
      services,
      Logger.layer(
        options.logLevel === "none"
          ? []
          : [options.logFormat === "logfmt" ? Logger.consoleLogFmt : Logger.consoleJson],
      ),
    ),
  );
  const minimumLogLevel = logLevels[options.logLevel ?? "info"];
  logBeside = (level, message, fields) =>
    void runtime.runFork(
      (level === "error" ? Effect.logError : level === "warn" ? Effect.logWarning : Effect.logInfo)(
        message,
      ).pipe(Effect.annotateLogs(fields), Effect.provideService(References.MinimumLogLevel, minimumLogLevel)),
    );
  const scope = Scope.makeUnsafe();
  let stopping: Promise<void> | undefined;
  let resolveDone: (how: "stopped" | "lost") => void = () => undefined;
  const done = new Promise<"stopped" | "lost">((resolve) => {
    resolveDone = resolve;
  });
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      options.signal?.removeEventListener("abort", onAbort);
      await Effect.runPromise(Fiber.interrupt(fiber));
      await Effect.runPromise(Scope.close(scope, Exit.void));
      await history?.stop();
      await runtime.dispose();
      await board?.stop();
      await ops.close();
      resolveDone(lost ? "lost" : "stopped");
    })();
    return stopping;
  };
  const onAbort = () => void stop();

  const election = options.leaderElection;
  const start = Effect.gen(function* () {
    if (election !== undefined) {
      const lease = yield* runLeaderElection({
        kubeConfig: client,
        namespace: election.namespace ?? namespaces.find((namespace) => namespace !== undefined) ?? "default",
        name: election.name,
        identity: election.identity ?? `${hostname()}_${process.pid}_${randomBytes(3).toString("hex")}`,
        counter,
      });
      yield* Effect.logInfo("standing by until this instance holds the Lease").pipe(
        Effect.annotateLogs({ lease: election.name }),
      );
      yield* lease.leading;
      leading = true;
      yield* Effect.logInfo("leading").pipe(Effect.annotateLogs({ lease: election.name }));
      // Losing the Lease stops the controller: another instance leads now.
      yield* lease.lost.pipe(
        Effect.andThen(Effect.logError("lost the Lease; stopping")),
        Effect.andThen(
          Effect.sync(() => {
            leading = false;
            lost = true;
            void stop();
          }),
        ),
        Effect.forkScoped,
      );
    }
    // The heap near what the controller holds while it works (from the caches' fill on), and a busy
    // period's memory back once it is quiet (with --expose-gc, as deployed; else V8 does both).
    const memory = yield* Effect.acquireRelease(
      Effect.sync(() =>
        startMemoryReturn({
          onCollected: ({ beforeBytes, afterBytes, ms }) =>
            logBeside("info", "memory returned after a busy period", {
              heapMiB: `${(beforeBytes / 2 ** 20).toFixed(1)} -> ${(afterBytes / 2 ** 20).toFixed(1)}`,
              cpuMs: Math.round(ms),
            }),
        }),
      ),
      (memory) => Effect.sync(() => memory.stop()),
    );
    // The last leader's history, into the metrics before this one adds to it.
    if (history !== undefined) {
      const reading = history;
      yield* Effect.promise(() => reading.takeover(namespaces));
    }
    // Events leave the pass at once and are created beside it (runtime/event-queue.ts).
    const events = yield* queuedEventRecorder(yield* EventRecorder);
    for (const namespace of namespaces) {
      handles.push(
        yield* runController({
          kind: board?.kind ?? kind,
          handlers:
            phaseAges?.handlers(board?.handlers(handlers) ?? handlers, kind) ??
            board?.handlers(handlers) ??
            handlers,
          config,
          kubeConfig: client,
          concurrency: options.concurrency ?? 3,
          counter,
          fieldManager,
          ...(options.otherController === undefined ? {} : { otherController: options.otherController }),
          ...(namespace === undefined ? {} : { namespace }),
          ...(progressNamespace === undefined ? {} : { progressNamespace }),
          ...(options.resyncIntervalMs === undefined ? {} : { resyncInterval: options.resyncIntervalMs }),
          ...(options.groupResource === undefined ? {} : { groupResource: options.groupResource }),
          ...(options.groupObjects === undefined ? {} : { groupObjects: options.groupObjects }),
          ...(observer === undefined ? {} : { observer }),
          ...(options.maxTaskBytes === undefined ? {} : { maxTaskBytes: options.maxTaskBytes }),
        }).pipe(Effect.provideService(EventRecorder, events)),
      );
    }
    yield* Effect.forEach(handles, (handle) => handle.synced, { discard: true }).pipe(
      Effect.timeoutOrElse({
        duration: Duration.millis(timeoutMs),
        orElse: () =>
          Effect.fail(
            new TaskControllerStartError(
              "NotSynced",
              `the ${kind.resource.plural} cache was not filled within ${Math.round(timeoutMs / 1000)} s: check that the kubeconfig may list and watch ${kind.resource.plural}.${kind.resource.group}`,
            ),
          ),
      }),
    );
    memory.hold();
    synced = true;
  }).pipe(
    Effect.provideService(References.MinimumLogLevel, logLevels[options.logLevel ?? "info"]),
    options.faults === undefined ? (effect) => effect : Effect.provideService(KubeFaults, options.faults),
    Scope.provide(scope),
  );

  const fiber = runtime.runFork(start);
  if (options.signal?.aborted === true) void stop();
  else options.signal?.addEventListener("abort", onAbort, { once: true });

  const started = new Promise<void>((resolve, reject) =>
    fiber.addObserver((exit) => {
      if (Exit.isSuccess(exit)) return resolve();
      // Stopped by the caller before the caches synced: reject as fetch does, with the signal's reason.
      const failure = Exit.findErrorOption(exit);
      const reason =
        options.signal?.aborted === true
          ? options.signal.reason
          : failure._tag === "Some" && failure.value instanceof TaskControllerStartError
            ? failure.value
            : new Error(`${kind.resource.kind} controller did not start: ${String(exit.cause)}`);
      void stop().then(() => reject(reason));
    }),
  );
  const controller: TaskController = {
    stop,
    stats: () => sumStats(handles.map((handle) => handle.stats())),
    queue: () => sumQueueMetrics(handles.map((handle) => handle.queue())),
    requests: counter,
    synced: started,
    leading: () => leading,
    done,
    ...(board === undefined
      ? {}
      : {
          boardUrl: board.server.url,
          observeSchedule: (key: string, schedule: KubeObject | undefined) =>
            board.schedules.observe(key, schedule, Date.now()),
        }),
    ...(ops.metricsUrl === undefined ? {} : { metricsUrl: ops.metricsUrl }),
    ...(ops.probesUrl === undefined ? {} : { probesUrl: ops.probesUrl }),
  };
  if (election !== undefined) {
    // Standing by: a later failure to start is the `synced` promise's (and `done`'s) to tell.
    started.catch(() => undefined);
    return controller;
  }
  await started;
  return controller;
};

const sumStats = (all: ReadonlyArray<ControllerStats>): ControllerStats => {
  const writes: Record<string, number> = {};
  for (const stats of all)
    for (const [tag, n] of Object.entries(stats.writes)) writes[tag] = (writes[tag] ?? 0) + n;
  const sum = (pick: (stats: ControllerStats) => number) =>
    all.reduce((total, stats) => total + pick(stats), 0);
  return {
    passes: sum((s) => s.passes),
    aborted: sum((s) => s.aborted),
    handlerCalls: sum((s) => s.handlerCalls),
    inFlightCalls: sum((s) => s.inFlightCalls),
    orphanedCalls: sum((s) => s.orphanedCalls),
    remembered: sum((s) => s.remembered),
    writes,
  };
};
