/**
 * Child entry of bench/cluster.ts: runs the real controller (as test/support/controller.ts's
 * `startController` does, but with a configurable concurrency and handlers that keep no records) in a
 * process of its own, so that its memory and CPU figures are the controller's alone.
 *
 *   node bench/cluster-controller.ts <kubeconfig> <namespace> <concurrency>   (forked with an IPC channel)
 *
 * It is wired as `opstask controller` (src/cli/controller-command.ts `serveController`): the same
 * modules, the etcd handlers' services, Prometheus metrics observing every pass; only the handlers
 * are no-ops, so that its memory is the binary's.
 *
 * Parent → child: start | sample (memory, CPU, request counts, controller stats) | stop.
 */
import { getHeapStatistics } from "node:v8";
import * as Effect from "effect/Effect";
import * as Exit from "effect/Exit";
import * as Layer from "effect/Layer";
import * as Logger from "effect/Logger";
import * as References from "effect/References";
import * as Scope from "effect/Scope";
import type { EtcdOpsTask } from "../src/etcd/api/etcdopstask.ts";
import { etcdOpsTaskKind } from "../src/etcd/api/etcdopstask-kind.ts";
import { etcdHandlerLayer } from "../src/etcd/registry.ts";
import type { HandlerRegistry, TaskHandler } from "../src/handlers/handler.ts";
import { kubernetesLayer } from "../src/interpreters/kubernetes/layer.ts";
import { TaskWriter, type WriteTarget } from "../src/interpreters/kubernetes/task-writer.ts";
import type { KubeError } from "../src/kube/errors.ts";
import { loadKubeClient } from "../src/kube/kubeconfig-loader.ts";
import { RequestCounter } from "../src/kube/request-metrics.ts";
import type { PhaseOutcome } from "../src/machine/types.ts";
import { lifecycleConfig } from "../src/reconcile/defaults.ts";
import { type ControllerHandle, runController } from "../src/runtime/controller.ts";
import { makeControllerMetrics } from "../src/runtime/metrics.ts";
import { sumQueueMetrics } from "../src/runtime/work-queue.ts";
import { asParentMessage, type ChildMessage, type Memory, type Sample } from "./cluster-protocol.ts";

const [kubeconfigPath, namespace, concurrencyArg] = process.argv.slice(2);
if (kubeconfigPath === undefined || namespace === undefined || concurrencyArg === undefined) {
  throw new Error("usage: cluster-controller.ts <kubeconfig> <namespace> <concurrency>");
}
const concurrency = Number(concurrencyArg);

const send = (message: ChildMessage): void => {
  process.send?.(message);
};

/** Every phase completes at once, with druid's texts (as `scriptedHandlers()` with no script). */
const completed = (description: string): Effect.Effect<PhaseOutcome> =>
  Effect.succeed({ kind: "completed", description });
const admitted = completed("Admit check passed");
const executed = completed("Snapshot created successfully");
const cleaned = completed("Cleanup completed");
const noop: TaskHandler<EtcdOpsTask> = {
  admit: () => admitted,
  execute: () => executed,
  cleanup: () => cleaned,
};
const registry: HandlerRegistry<EtcdOpsTask> = { onDemandSnapshot: noop };

/** OPSTASK_BENCH_TRACE=1: the controller's debug logs of each pass go into the per-task traces. */
const tracePasses = process.env.OPSTASK_BENCH_TRACE === "1";

/** The last writes (and, when tracing, passes) of recent tasks, and the tasks with a write not ok. */
const traces = new Map<string, string[]>();
const troubled: string[] = [];
const trace = (key: string, line: string, ok = true) => {
  const lines = traces.get(key) ?? [];
  traces.delete(key);
  traces.set(key, [...lines.slice(tracePasses ? -24 : -7), `${line} @${Date.now() % 1_000_000}`]);
  if (traces.size > 2_000) traces.delete(traces.keys().next().value ?? "");
  if (!ok && troubled.length < 5 && !troubled.includes(key)) troubled.push(key);
};

const logCounts: Record<string, number> = {};
const firstLogs: string[] = [];
const collector = Logger.make((options: Logger.Options<unknown>) => {
  if (options.logLevel === "Debug") {
    const notes = options.fiber.getRef(References.CurrentLogAnnotations);
    const task = notes.task;
    if (typeof task !== "string") return;
    const fields = ["trigger", "transitions", "end", "reason"]
      .filter((field) => notes[field] !== undefined && notes[field] !== "")
      .map((field) => `${field}=${String(notes[field])}`);
    trace(task, `[${String(notes.reconcileID ?? "")} ${String(options.message)} ${fields.join(" ")}]`);
    return;
  }
  logCounts[options.logLevel] = (logCounts[options.logLevel] ?? 0) + 1;
  if (firstLogs.length < 10) firstLogs.push(Logger.formatLogFmt.log(options).slice(0, 400));
});

/** What became of the controller's writes (the request counter cannot tell which write got a 404). */
const writerOutcomes: Record<string, number> = {};
const tally = (key: string) => {
  writerOutcomes[key] = (writerOutcomes[key] ?? 0) + 1;
};
const tallied =
  <A>(method: string, target: WriteTarget) =>
  (effect: Effect.Effect<A, KubeError>): Effect.Effect<A, KubeError> =>
    effect.pipe(
      Effect.tap((result) =>
        Effect.sync(() => {
          const outcome = result === undefined ? "gone" : "ok";
          tally(`${method} ${outcome}`);
          trace(`${target.namespace}/${target.name}`, `${method} rv${target.resourceVersion}→${outcome}`);
        }),
      ),
      Effect.tapError((error) =>
        Effect.sync(() => {
          tally(`${method} ${error.code} ${error.reason}`);
          trace(
            `${target.namespace}/${target.name}`,
            `${method} rv${target.resourceVersion}→${error.code}`,
            false,
          );
        }),
      ),
    );
const countWrites = (writer: TaskWriter["Service"]): TaskWriter["Service"] =>
  TaskWriter.of({
    addFinalizer: (target, finalizer, version) =>
      writer.addFinalizer(target, finalizer, version).pipe(tallied("addFinalizer", target)),
    patchStatus: (target, patch) =>
      writer.patchStatus(target, patch).pipe(tallied(`patchStatus(${String(patch.state ?? "-")})`, target)),
    deleteTask: (target) => writer.deleteTask(target).pipe(tallied("deleteTask", target)),
    removeFinalizer: (target, finalizer) =>
      writer.removeFinalizer(target, finalizer).pipe(tallied("removeFinalizer", target)),
  });

const counter = new RequestCounter();
const scope = Scope.makeUnsafe();
let handle: ControllerHandle | undefined;

const memory = (): Memory => {
  const m = process.memoryUsage();
  const heap = getHeapStatistics();
  return {
    rss: m.rss,
    heapUsed: m.heapUsed,
    heapTotal: m.heapTotal,
    external: m.external,
    malloced: heap.malloced_memory,
    heapPhysical: heap.total_physical_size,
  };
};

const sample = (gc: boolean): Sample => {
  const before = memory();
  let afterGc: Memory | undefined;
  if (gc && typeof globalThis.gc === "function") {
    globalThis.gc();
    afterGc = memory();
  }
  const cpu = process.cpuUsage();
  return {
    memory: before,
    ...(afterGc === undefined ? {} : { memoryAfterGc: afterGc }),
    cpuMs: (cpu.user + cpu.system) / 1000,
    requests: counter.snapshot(),
    ...(handle === undefined ? {} : { controller: handle.stats() }),
    writer: { ...writerOutcomes },
    traces: troubled.map((key) => `${key}: ${(traces.get(key) ?? []).join(", ")}`),
    logs: { counts: { ...logCounts }, first: [...firstLogs] },
  };
};

const start = async (): Promise<void> => {
  const kubeConfig = await loadKubeClient(kubeconfigPath);
  const layer = Layer.mergeAll(
    kubernetesLayer({ kubeConfig, resource: etcdOpsTaskKind.resource, counter }),
    etcdHandlerLayer({ kubeConfig, counter }),
    Logger.layer([collector]),
  );
  const began = performance.now();
  const metrics = makeControllerMetrics();
  metrics.attach({
    queue: () => sumQueueMetrics(handle === undefined ? [] : [handle.queue()]),
    handlerCallsInFlight: () => handle?.stats().inFlightCalls ?? 0,
    requests: counter,
    leader: () => true,
  });
  const program = runController({
    observer: metrics.observer,
    kind: etcdOpsTaskKind,
    handlers: registry,
    // The same settings as test/support/controller.ts.
    config: lifecycleConfig(etcdOpsTaskKind, { requeueIntervalMs: 5_000, backoffCapMs: 5_000 }),
    kubeConfig,
    concurrency,
    counter,
    groupResource: { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcds" },
    namespace,
  }).pipe(
    Effect.tap((running) => running.synced),
    Effect.updateService(TaskWriter, countWrites),
    Effect.provide(layer),
    Effect.provideService(References.MinimumLogLevel, tracePasses ? "Debug" : "Warn"),
    Scope.provide(scope),
  );
  handle = await Effect.runPromise(program);
  send({ type: "started", startMs: performance.now() - began });
};

const stop = async (): Promise<void> => {
  await Effect.runPromise(Scope.close(scope, Exit.void));
  send({ type: "stopped" });
  process.disconnect?.();
};

process.on("message", (raw: unknown) => {
  const message = asParentMessage(raw);
  if (message === undefined) return;
  const failed = (err: unknown) =>
    send({ type: "error", message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  switch (message.type) {
    case "start":
      start().catch(failed);
      break;
    case "sample":
      send({ type: "sample", id: message.id, sample: sample(message.gc) });
      break;
    case "stop":
      stop().catch(failed);
      break;
  }
});
// The parent went away: do not outlive it.
process.on("disconnect", () => {
  setTimeout(() => process.exit(0), 100).unref();
});

send({ type: "loaded", sample: sample(true) });
