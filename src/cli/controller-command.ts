/**
 * `opstask controller`: the EtcdOpsTask controller as a process, a thin command over the library's
 * `runTaskController` (the flagship is the framework's first user). Loads the kubeconfig, starts one
 * controller per watched namespace (or one for all) once this instance leads, serves metrics and
 * probes, logs as JSON lines with a reconcile ID per pass, and on SIGTERM/SIGINT stops taking work,
 * lets passes in flight finish, and exits 0.
 */
import { hostname } from "node:os";
import * as Effect from "effect/Effect";
import * as Logger from "effect/Logger";
import * as References from "effect/References";
import { etcdOpsTaskKind } from "../etcd/api/etcdopstask-kind.ts";
import { etcdAtRest, makeEtcdCache } from "../etcd/object-reader-cached.ts";
import { etcdHandlerLayer, makeEtcdHandlers } from "../etcd/registry.ts";
import { FaultCounter } from "../interpreters/kubernetes/fault-counter.ts";
import { controllerFieldManager } from "../kube/kube-client.ts";
import type { KubeAccess } from "../kube/kube-client-node.ts";
import { KubeconfigError, loadKubeClient } from "../kube/kubeconfig-loader.ts";
import { runTaskController, type TaskController } from "../library/run-task-controller.ts";
import { noObserver } from "../runtime/metrics.ts";
import { podNamespace } from "../runtime/pod-namespace.ts";
import { alsoObserve } from "../ui/also-observe.ts";
import { type ControllerOptions, controllerHelp, loadControllerOptions, OptionError } from "./options.ts";

const logLevels = { debug: "Debug", info: "Info", warn: "Warn", error: "Error" } as const;

/**
 * Runs the controllers until `signal` aborts (resolves "stopped") or the Lease is lost (resolves
 * "lost"), after passes in flight finished and the Lease was released; "failed" when the controller
 * could not start (the reason on stderr). The wiring — leader election, probes, metrics — is
 * `runTaskController`'s, as any operator gets it; the flagship only names its own parts.
 */
export const serveController = async (
  kubeConfig: KubeAccess,
  options: ControllerOptions,
  signal: AbortSignal,
): Promise<"stopped" | "lost" | "failed"> => {
  // The relay is loaded with --inspect only: an idle controller without it does not hold it.
  const inspector = options.inspect
    ? await (await import("../inspect/stately-inspector.ts")).startStatelyInspector({
        port: options.inspectPort,
      })
    : undefined;
  const observer = inspector === undefined ? undefined : alsoObserve(noObserver, inspector.observer);
  if (inspector !== undefined)
    process.stderr.write(`opstask: Stately inspector at ${inspector.page ?? inspector.url}\n`);
  // The operator's image policy reaches the compaction handler as configuration, never from a task.
  const handlers = makeEtcdHandlers({
    compaction: { defaultImage: options.compactionImage, allowedImages: options.compactionAllowedImages },
  });
  // The Etcd informer that wakes a group's tasks is also where the handlers read their Etcd.
  const etcds = makeEtcdCache();
  const explain = options.ui === "0" ? undefined : (await import("./board-why.ts")).boardWhy;
  const logLayer = Logger.layer([options.logFormat === "json" ? Logger.consoleJson : Logger.consoleLogFmt]);
  const log = (effect: Effect.Effect<void>) =>
    Effect.runPromise(
      effect.pipe(
        Effect.provide(logLayer),
        Effect.provideService(References.MinimumLogLevel, logLevels[options.logLevel]),
      ),
    );
  let controller: TaskController;
  try {
    // The flagship is the library's first user: the same `runTaskController` any operator calls.
    controller = await runTaskController({
      signal,
      kind: etcdOpsTaskKind,
      handlers,
      services: etcdHandlerLayer({ kubeConfig, resolve: options.resolve, etcds }),
      kubeConfig,
      ...(options.namespaces.length === 0 ? {} : { namespace: options.namespaces }),
      concurrency: options.concurrency,
      maxTaskBytes: options.maxTaskBytes,
      // Last outcomes per Etcd and task type, kept after the TTL (docs/history-and-alerts.md); a
      // hibernated Etcd is at rest, which the snapshot-age alert leaves out.
      history: { atRest: etcdAtRest(etcds) },
      duplicatePolicy: options.duplicatePolicy,
      handlerDefectLimit: options.handlerDefectLimit,
      crdManifest: "deploy/crds/",
      timing: {
        requeueIntervalMs: options.requeueInterval,
        backoffBaseMs: options.backoffBase,
        backoffCapMs: options.backoffCap,
        ...(options.phaseDeadline > 0 ? { phaseDeadlineMs: options.phaseDeadline } : {}),
        ...(options.queueDeadline > 0 ? { queueDeadlineMs: options.queueDeadline } : {}),
      },
      groupResource: { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcds" },
      groupObjects: etcds,
      ...(observer === undefined ? {} : { observer }),
      faults: new FaultCounter(),
      ...(options.ui === "0" || explain === undefined ? {} : { ui: options.ui, uiExplain: explain }),
      logLevel: options.logLevel,
      logFormat: options.logFormat === "json" ? "json" : "logfmt",
      // DEP-05's label for the admission group: the metrics stay those of etcd-druid's proposal.
      metricLabels: { group: "etcd" },
      // The flagship writes as `opstask`; etcd-druid ≥ v0.34 runs EtcdOpsTasks too (deploy/coexistence).
      fieldManager: controllerFieldManager,
      otherController: { name: "etcd-druid's EtcdOpsTask controller", guide: "deploy/coexistence" },
      metrics: {
        address: options.metricsAddress,
        secure: options.metricsSecure,
        certFile: options.metricsTlsCertFile,
        keyFile: options.metricsTlsKeyFile,
      },
      probes: options.probeAddress,
      // Where recovery's progress is kept, out of task authors' reach: the controller's own namespace.
      progressNamespace: leaseNamespace(options.leaderElectionNamespace),
      ...(options.leaderElect
        ? {
            leaderElection: {
              name: options.leaderElectionId,
              namespace: leaseNamespace(options.leaderElectionNamespace),
              identity: `${hostname()}_${process.pid}`,
            },
          }
        : {}),
    });
  } catch (error) {
    await inspector?.stop();
    if (signal.aborted) return "stopped";
    process.stderr.write(`opstask controller: ${error instanceof Error ? error.message : String(error)}\n`);
    return "failed";
  }
  if (controller.boardUrl !== undefined)
    process.stderr.write(`opstask: task board at ${controller.boardUrl}\n`);
  const namespaces: ReadonlyArray<string | undefined> =
    options.namespaces.length === 0 ? [undefined] : options.namespaces;
  const stopped = new Promise<void>((resolve) => {
    if (signal.aborted) resolve();
    signal.addEventListener("abort", () => resolve(), { once: true });
  });
  let startError: unknown;
  // Schedules run where the tasks run: on the leader, once its caches are filled.
  let schedules: Promise<{ readonly stop: () => Promise<void> }> | undefined;
  void controller.synced.then(
    () => {
      schedules = import("./controller-schedules.ts").then(({ startEtcdSchedules }) =>
        startEtcdSchedules({
          kubeConfig,
          namespaces,
          resolve: options.resolve,
          etcds,
          fieldManager: controllerFieldManager,
          maxTaskBytes: options.maxTaskBytes,
          logLevel: options.logLevel,
          say: (line) => void log(Effect.logWarning(line)),
          ...(controller.observeSchedule === undefined ? {} : { observe: controller.observeSchedule }),
        }),
      );
      for (const namespace of namespaces)
        void log(
          Effect.logInfo("watching EtcdOpsTasks").pipe(
            Effect.annotateLogs({ namespace: namespace ?? "(all)" }),
          ),
        );
    },
    (error: unknown) => {
      startError = error;
    },
  );
  // Until stopped, the Lease lost, or a start that failed once leading (its caches never filled).
  await Promise.race([
    stopped,
    controller.done.then(() => undefined),
    controller.synced.then(
      () => new Promise<void>(() => undefined),
      () => undefined,
    ),
  ]);
  await controller.stop();
  await (await schedules)?.stop();
  await inspector?.stop();
  if (startError !== undefined && !signal.aborted) {
    process.stderr.write(
      `opstask controller: ${startError instanceof Error ? startError.message : String(startError)}\n`,
    );
    return "failed";
  }
  return (await controller.done) === "lost" ? "lost" : "stopped";
};

/** The Lease's namespace: as configured, else the pod's (service account mount), else `default`. */
const leaseNamespace = (configured: string): string =>
  configured !== "" ? configured : (podNamespace() ?? "default");

export const controllerCommand = async (argv: ReadonlyArray<string>): Promise<number> => {
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(`${controllerHelp()}\n`);
    return 0;
  }
  const options = await loadControllerOptions(argv);
  // The named file, else in-cluster when running in a pod, else $KUBECONFIG or ~/.kube/config.
  const kubeConfig = await loadKubeClient(options.kubeconfig).catch((error: unknown) => {
    throw error instanceof KubeconfigError ? new OptionError(error.message) : error;
  });
  const stop = new AbortController();
  process.once("SIGTERM", () => stop.abort());
  process.once("SIGINT", () => stop.abort());
  return (await serveController(kubeConfig, options, stop.signal)) === "stopped" ? 0 : 1;
};
