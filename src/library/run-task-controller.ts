/**
 * `runTaskController`: the easy level. One call runs a task kind's whole lifecycle on a cluster —
 * finalizer, admission with the duplicate policy, Execute with per-task backoff, TTL deletion,
 * cleanup, status in druid's schema, Events — and returns once the task cache is synced. No Effect in
 * sight unless the handlers use services, which come in as one Layer.
 *
 * Underneath it is `runController` (src/runtime/controller.ts) with the Kubernetes interpreter
 * (`kubernetesLayer`), which advanced users can call directly (both are exported), e.g. to share a
 * scope, add leader election or run several kinds in one Effect program.
 */
import * as Effect from "effect/Effect";
import * as Exit from "effect/Exit";
import * as Fiber from "effect/Fiber";
import * as Layer from "effect/Layer";
import * as Logger from "effect/Logger";
import * as ManagedRuntime from "effect/ManagedRuntime";
import * as References from "effect/References";
import * as Scope from "effect/Scope";
import type { HandlerRegistry } from "../handlers/handler.ts";
import { type FaultCounter, KubeFaults } from "../interpreters/kubernetes/fault-counter.ts";
import { kubernetesLayer } from "../interpreters/kubernetes/layer.ts";
import type { KubeAccess } from "../kube/kube-client-node.ts";
import { loadKubeClient } from "../kube/kubeconfig-loader.ts";
import { RequestCounter } from "../kube/request-metrics.ts";
import type { DuplicatePolicy, LifecycleConfig } from "../machine/types.ts";
import { lifecycleConfig } from "../reconcile/defaults.ts";
import type { ResourceRef, TaskKind } from "../reconcile/task-kind.ts";
import { type ControllerHandle, type ControllerStats, runController } from "../runtime/controller.ts";
import type { GroupObjects } from "../runtime/group-objects.ts";
import { type ControllerObserver, noObserver } from "../runtime/metrics.ts";
import { sumQueueMetrics, type WorkQueueMetrics } from "../runtime/work-queue.ts";
import { alsoObserve } from "../ui/also-observe.ts";
import type { ExplainInput } from "../ui/board-store.ts";
import type { ServicesOption } from "./services-option.ts";

/** Lifecycle timing; every value defaults to etcd-druid's (`druidTiming`). */
export type LifecycleTiming = Partial<
  Pick<
    LifecycleConfig,
    "requeueIntervalMs" | "backoffBaseMs" | "backoffCapMs" | "phaseDeadlineMs" | "minRequeueMs"
  >
>;

export type LogLevel = "debug" | "info" | "warn" | "error" | "none";

export interface TaskControllerBaseOptions<Task, R> {
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
  /** Passes at once per namespace (default 3). Handler calls never hold a worker. */
  readonly concurrency?: number;
  /** `reject` (druid, the default) or `queue` (FIFO per admission group). */
  readonly duplicatePolicy?: DuplicatePolicy;
  readonly timing?: LifecycleTiming;
  /** Every task is reconciled again this often, whatever happened (default 10 minutes). */
  readonly resyncIntervalMs?: number;
  /** Objects that name the admission groups: a change to one re-triggers its group's unfinished tasks. */
  readonly groupResource?: Pick<ResourceRef, "group" | "version" | "plural">;
  /** Shares the cache of `groupResource` objects with the handlers (`makeGroupObjects`). */
  readonly groupObjects?: GroupObjects;
  /** Default `info`; logs are JSON lines (`logFormat: "logfmt"` for people) with a reconcile ID per pass. */
  readonly logLevel?: LogLevel;
  readonly logFormat?: "json" | "logfmt";
  /** `reportingController` of the Events (default `opstask`). */
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
}

const logLevels = { debug: "Debug", info: "Info", warn: "Warn", error: "Error", none: "None" } as const;

/** Starts the controller; resolves once every watched namespace's cache holds its first LIST. */
export const runTaskController = async <Task, R = never>(
  options: TaskControllerOptions<Task, R>,
): Promise<TaskController> => {
  const { kind, handlers } = options;
  const kubeConfig = options.kubeConfig ?? (await loadKubeClient());
  const counter = options.counter ?? new RequestCounter();
  const config = lifecycleConfig(kind, {
    ...options.timing,
    ...(options.duplicatePolicy === undefined ? {} : { duplicatePolicy: options.duplicatePolicy }),
  });
  const namespaces: ReadonlyArray<string | undefined> =
    options.namespace === undefined
      ? [undefined]
      : typeof options.namespace === "string"
        ? [options.namespace]
        : options.namespace;
  // `services` is required by the type exactly when R is not never, so the fallback provides nothing.
  const services = options.services ?? (Layer.empty as Layer.Layer<R>);
  const board =
    options.ui === undefined
      ? undefined
      : await (await import("../ui/task-board.ts")).startTaskBoard({
          address: options.ui,
          kind,
          ...(options.uiExplain === undefined ? {} : { explain: options.uiExplain }),
        });
  const kubernetes = kubernetesLayer({
    kubeConfig,
    resource: kind.resource,
    counter,
    ...(options.reportingController === undefined
      ? {}
      : { reportingController: options.reportingController }),
  });
  const observer =
    board === undefined ? options.observer : alsoObserve(options.observer ?? noObserver, board.observer);
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
  const handles: ControllerHandle[] = [];
  const scope = Scope.makeUnsafe();
  const start = Effect.gen(function* () {
    for (const namespace of namespaces) {
      handles.push(
        yield* runController({
          kind: board?.kind ?? kind,
          handlers: board?.handlers(handlers) ?? handlers,
          config,
          kubeConfig,
          concurrency: options.concurrency ?? 3,
          counter,
          ...(namespace === undefined ? {} : { namespace }),
          ...(options.resyncIntervalMs === undefined ? {} : { resyncInterval: options.resyncIntervalMs }),
          ...(options.groupResource === undefined ? {} : { groupResource: options.groupResource }),
          ...(options.groupObjects === undefined ? {} : { groupObjects: options.groupObjects }),
          ...(observer === undefined ? {} : { observer }),
        }),
      );
    }
    yield* Effect.forEach(handles, (handle) => handle.synced, { discard: true });
  }).pipe(
    Effect.provideService(References.MinimumLogLevel, logLevels[options.logLevel ?? "info"]),
    options.faults === undefined ? (effect) => effect : Effect.provideService(KubeFaults, options.faults),
    Scope.provide(scope),
  );

  let stopping: Promise<void> | undefined;
  const fiber = runtime.runFork(start);
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      options.signal?.removeEventListener("abort", onAbort);
      await Effect.runPromise(Fiber.interrupt(fiber));
      await Effect.runPromise(Scope.close(scope, Exit.void));
      await runtime.dispose();
      await board?.stop();
    })();
    return stopping;
  };
  const onAbort = () => void stop();
  if (options.signal?.aborted === true) void stop();
  else options.signal?.addEventListener("abort", onAbort, { once: true });

  const exit = await new Promise<Exit.Exit<void, unknown>>((resolve) => fiber.addObserver(resolve));
  if (Exit.isFailure(exit)) {
    await stop();
    // Stopped by the caller before the caches synced: reject as fetch does, with the signal's reason.
    if (options.signal?.aborted === true) throw options.signal.reason;
    throw new Error(`${kind.resource.kind} controller did not start: ${String(exit.cause)}`);
  }
  return {
    stop,
    stats: () => sumStats(handles.map((handle) => handle.stats())),
    queue: () => sumQueueMetrics(handles.map((handle) => handle.queue())),
    requests: counter,
    ...(board === undefined ? {} : { boardUrl: board.server.url }),
  };
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
