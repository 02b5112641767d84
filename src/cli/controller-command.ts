/**
 * `opstask controller`: the EtcdOpsTask controller as a process, a thin command over the library's
 * `runTaskController` (the flagship is the framework's first user). Loads the kubeconfig, starts one
 * controller per watched namespace (or one for all) once this instance leads, serves metrics and
 * probes, logs as JSON lines with a reconcile ID per pass, and on SIGTERM/SIGINT stops taking work,
 * lets passes in flight finish, and exits 0.
 */
import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import * as Effect from "effect/Effect";
import * as Exit from "effect/Exit";
import * as Fiber from "effect/Fiber";
import * as Logger from "effect/Logger";
import * as References from "effect/References";
import * as Scope from "effect/Scope";
import { etcdOpsTaskKind } from "../etcd/api/etcdopstask-kind.ts";
import { makeEtcdCache } from "../etcd/object-reader-cached.ts";
import { etcdHandlerLayer, makeEtcdHandlers } from "../etcd/registry.ts";
import { startStatelyInspector } from "../inspect/stately-inspector.ts";
import { FaultCounter } from "../interpreters/kubernetes/fault-counter.ts";
import { type KubeAccess, kubeClientOf } from "../kube/kube-client-node.ts";
import { KubeconfigError, loadKubeClient } from "../kube/kubeconfig-loader.ts";
import { runTaskController, type TaskController } from "../library/run-task-controller.ts";
import { ContactCounter } from "../runtime/api-contact.ts";
import { runLeaderElection } from "../runtime/leader-election.ts";
import { type ControllerObserver, makeControllerMetrics } from "../runtime/metrics.ts";
import { sumQueueMetrics } from "../runtime/work-queue.ts";
import { alsoObserve } from "../ui/also-observe.ts";
import { startMetricsServer } from "./metrics-server.ts";
import { startOpsServer } from "./ops-server.ts";
import { type ControllerOptions, controllerHelp, OptionError, readControllerOptions } from "./options.ts";
import { notReadyReason } from "./readiness.ts";

const logLevels = { debug: "Debug", info: "Info", warn: "Warn", error: "Error" } as const;

/**
 * Runs the controllers until `signal` aborts (resolves "stopped") or the Lease is lost (resolves
 * "lost"), after passes in flight finished and the Lease was released.
 */
export const serveController = async (
  kubeConfig: KubeAccess,
  options: ControllerOptions,
  signal: AbortSignal,
): Promise<"stopped" | "lost"> => {
  // Every request is counted here, and it tells /readyz whether the API server still answers.
  const counter = new ContactCounter();
  const faults = new FaultCounter();
  const namespaces: ReadonlyArray<string | undefined> =
    options.namespaces.length === 0 ? [undefined] : options.namespaces;
  let leading = !options.leaderElect;
  let lostLeadership = false;
  const metrics = makeControllerMetrics();
  /** The controllers, once started (on start, or once this instance leads). */
  let running: TaskController | undefined;
  metrics.attach({
    queue: () => sumQueueMetrics(running === undefined ? [] : [running.queue()]),
    handlerCallsInFlight: () => running?.stats().inFlightCalls ?? 0,
    requests: counter,
    leader: () => leading,
    faults,
    apiLostSeconds: () => counter.lostForMs() / 1000,
  });
  const inspector = options.inspect ? await startStatelyInspector({ port: options.inspectPort }) : undefined;
  if (inspector !== undefined)
    process.stderr.write(`opstask: Stately inspector at ${inspector.page ?? inspector.url}\n`);
  const observer: ControllerObserver = alsoObserve(metrics.observer, inspector?.observer);
  const servers = [
    await startMetricsServer({
      address: options.metricsAddress,
      secure: options.metricsSecure,
      certFile: options.metricsTlsCertFile,
      keyFile: options.metricsTlsKeyFile,
      registry: metrics.registry,
      client: kubeClientOf(kubeConfig),
      counter,
    }),
    await startOpsServer(options.probeAddress, {
      notReady: () =>
        notReadyReason({
          leading,
          synced: running === undefined ? 0 : namespaces.length,
          caches: namespaces.length,
          apiLostForMs: counter.lostForMs(),
        }),
    }),
  ];
  // The operator's image policy reaches the compaction handler as configuration, never from a task.
  const handlers = makeEtcdHandlers({
    compaction: { defaultImage: options.compactionImage, allowedImages: options.compactionAllowedImages },
  });
  // The Etcd informer that wakes a group's tasks is also where the handlers read their Etcd.
  const etcds = makeEtcdCache();
  const explain = options.ui === "0" ? undefined : (await import("./board-why.ts")).boardWhy;
  // The flagship is the library's first user: the same `runTaskController` any operator calls.
  const controllers = Effect.gen(function* () {
    const controller = yield* Effect.acquireRelease(
      // Interrupted while starting (a signal, a lost Lease): the abort stops the start.
      Effect.tryPromise((abort) =>
        runTaskController({
          signal: abort,
          kind: etcdOpsTaskKind,
          handlers,
          services: etcdHandlerLayer({ kubeConfig, resolve: options.resolve, etcds }),
          kubeConfig,
          ...(options.namespaces.length === 0 ? {} : { namespace: options.namespaces }),
          concurrency: options.concurrency,
          duplicatePolicy: options.duplicatePolicy,
          timing: {
            requeueIntervalMs: options.requeueInterval,
            backoffBaseMs: options.backoffBase,
            backoffCapMs: options.backoffCap,
            ...(options.phaseDeadline > 0 ? { phaseDeadlineMs: options.phaseDeadline } : {}),
          },
          groupResource: { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcds" },
          groupObjects: etcds,
          observer,
          counter,
          faults,
          ...(options.ui === "0" || explain === undefined ? {} : { ui: options.ui, uiExplain: explain }),
          logLevel: options.logLevel,
          logFormat: options.logFormat === "json" ? "json" : "logfmt",
        }),
      ),
      (started) => Effect.promise(() => started.stop()),
    );
    running = controller;
    if (controller.boardUrl !== undefined)
      process.stderr.write(`opstask: task board at ${controller.boardUrl}\n`);
    for (const namespace of namespaces)
      yield* Effect.logInfo("watching EtcdOpsTasks").pipe(
        Effect.annotateLogs({ namespace: namespace ?? "(all)" }),
      );
    yield* Effect.never;
  });
  const program = Effect.gen(function* () {
    if (!options.leaderElect) return yield* controllers;
    const election = yield* runLeaderElection({
      kubeConfig,
      namespace: leaseNamespace(options.leaderElectionNamespace),
      name: options.leaderElectionId,
      identity: `${hostname()}_${process.pid}`,
      counter,
    });
    yield* Effect.logInfo("standing by until this instance holds the Lease").pipe(
      Effect.annotateLogs({ lease: options.leaderElectionId }),
    );
    yield* election.leading;
    leading = true;
    yield* Effect.logInfo("leading");
    // Losing the Lease ends the process (as client-go's controllers do): another instance leads now.
    return yield* Effect.raceFirst(
      controllers,
      election.lost.pipe(
        Effect.andThen(
          Effect.sync(() => {
            lostLeadership = true;
            leading = false;
          }),
        ),
        Effect.andThen(Effect.logError("lost the Lease; stopping")),
      ),
    );
  });
  const layer = Logger.layer([options.logFormat === "json" ? Logger.consoleJson : Logger.consoleLogFmt]);
  const scope = Scope.makeUnsafe();
  const fiber = Effect.runFork(
    program.pipe(
      Effect.provide(layer),
      Effect.provideService(References.MinimumLogLevel, logLevels[options.logLevel]),
      Scope.provide(scope),
    ),
  );
  await new Promise<void>((resolve) => {
    if (signal.aborted) resolve();
    signal.addEventListener("abort", () => resolve(), { once: true });
    fiber.addObserver(() => resolve());
  });
  await Effect.runPromise(Fiber.interrupt(fiber));
  await Effect.runPromise(Scope.close(scope, Exit.void));
  await Promise.all(
    servers.map(
      (server) =>
        new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve()))),
    ),
  );
  await inspector?.stop();
  return lostLeadership ? "lost" : "stopped";
};

/** The Lease's namespace: as configured, else the pod's (service account mount), else `default`. */
const leaseNamespace = (configured: string): string => {
  if (configured !== "") return configured;
  if (process.env.POD_NAMESPACE !== undefined && process.env.POD_NAMESPACE !== "")
    return process.env.POD_NAMESPACE;
  try {
    return readFileSync("/var/run/secrets/kubernetes.io/serviceaccount/namespace", "utf8").trim();
  } catch {
    return "default";
  }
};

export const controllerCommand = async (argv: ReadonlyArray<string>): Promise<number> => {
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(`${controllerHelp()}\n`);
    return 0;
  }
  const options = readControllerOptions(argv);
  // The named file, else in-cluster when running in a pod, else $KUBECONFIG or ~/.kube/config.
  const kubeConfig = await loadKubeClient(options.kubeconfig).catch((error: unknown) => {
    throw error instanceof KubeconfigError ? new OptionError(error.message) : error;
  });
  const stop = new AbortController();
  process.once("SIGTERM", () => stop.abort());
  process.once("SIGINT", () => stop.abort());
  return (await serveController(kubeConfig, options, stop.signal)) === "lost" ? 1 : 0;
};
