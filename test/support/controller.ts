/**
 * Runs the real controller (src/runtime/controller.ts) against a control plane inside a test, with
 * scripted handlers, and gives the test a way to stop it (a crash, or a graceful stop).
 */
import { Effect, Exit, Layer, Logger, References, Scope } from "effect";
import type { EtcdOpsTask } from "../../src/etcd/api/etcdopstask.ts";
import { etcdOpsTaskKind } from "../../src/etcd/api/etcdopstask-kind.ts";
import type { HandlerRegistry, TaskHandler } from "../../src/handlers/handler.ts";
import { kubernetesLayer } from "../../src/interpreters/kubernetes/layer.ts";
import type { KubeAccess } from "../../src/kube/kube-client-node.ts";
import { RequestCounter } from "../../src/kube/request-metrics.ts";
import type { LifecycleConfig, Phase, PhaseOutcome } from "../../src/machine/types.ts";
import { lifecycleConfig } from "../../src/reconcile/defaults.ts";
import { type ControllerHandle, runController } from "../../src/runtime/controller.ts";
import type { ControllerObserver } from "../../src/runtime/metrics.ts";

/** What a scripted handler does on one call. */
export type Step = { readonly outcome: PhaseOutcome } | { readonly hang: true } | { readonly throws: string };

export interface CallRecord {
  readonly task: string;
  readonly uid: string;
  readonly phase: Phase;
  readonly at: number;
  interrupted: boolean;
  /** Ends a hanging call with `outcome` (as a handler whose own timeout passed would end it). */
  release?: (outcome: PhaseOutcome) => void;
}

/** Handlers whose calls follow per-task scripts (by task name); unscripted calls complete. */
export const scriptedHandlers = () => {
  const scripts = new Map<string, Partial<Record<Phase, Step[]>>>();
  const calls: CallRecord[] = [];
  const texts: Record<Phase, string> = {
    admit: "Admit check passed",
    execute: "Snapshot created successfully",
    cleanup: "Cleanup completed",
  };
  const phase =
    (name: Phase) =>
    (task: EtcdOpsTask): Effect.Effect<PhaseOutcome> => {
      const record: CallRecord = {
        task: task.metadata.name,
        uid: task.metadata.uid,
        phase: name,
        at: Date.now(),
        interrupted: false,
      };
      calls.push(record);
      const step = scripts.get(task.metadata.name)?.[name]?.shift();
      if (step === undefined) return Effect.succeed({ kind: "completed", description: texts[name] });
      if ("hang" in step) {
        const interrupted = Effect.sync(() => {
          record.interrupted = true;
        });
        const released = new Promise<PhaseOutcome>((resolve) => {
          record.release = resolve;
        });
        return Effect.promise(() => released).pipe(Effect.onInterrupt(() => interrupted));
      }
      if ("throws" in step) return Effect.die(new Error(step.throws));
      return Effect.succeed(step.outcome);
    };
  const handler: TaskHandler<EtcdOpsTask> = {
    admit: phase("admit"),
    execute: phase("execute"),
    cleanup: phase("cleanup"),
  };
  const registry: HandlerRegistry<EtcdOpsTask> = { onDemandSnapshot: handler };
  return { registry, scripts, calls };
};

export interface RunningController {
  readonly handle: ControllerHandle;
  /** Every API request the controller made, by verb and code. */
  readonly counter: RequestCounter;
  readonly stop: () => Promise<void>;
}

/** Starts the controller; `stop()` closes its scope (interrupting calls in flight, like a crash of the process). */
export const startController = (
  kubeConfig: KubeAccess,
  registry: HandlerRegistry<EtcdOpsTask>,
  overrides: Partial<LifecycleConfig> = {},
  namespace?: string,
): Promise<RunningController> => startControllerWith(kubeConfig, registry, Layer.empty, overrides, namespace);

/** As `startController`, for handlers that need services (`services` provides them). */
export const startControllerWith = async <R>(
  kubeConfig: KubeAccess,
  registry: HandlerRegistry<EtcdOpsTask, R>,
  services: Layer.Layer<R>,
  overrides: Partial<LifecycleConfig> = {},
  namespace?: string,
  observer?: ControllerObserver,
): Promise<RunningController> => {
  const scope = Scope.makeUnsafe();
  const counter = new RequestCounter();
  const layer = Layer.mergeAll(
    kubernetesLayer({ kubeConfig, resource: etcdOpsTaskKind.resource, counter }),
    services,
    Logger.layer([]),
  );
  const program = runController({
    kind: etcdOpsTaskKind,
    handlers: registry,
    config: lifecycleConfig(etcdOpsTaskKind, { requeueIntervalMs: 5_000, backoffCapMs: 5_000, ...overrides }),
    kubeConfig,
    concurrency: 3,
    counter,
    groupResource: { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcds" },
    ...(namespace === undefined ? {} : { namespace }),
    ...(observer === undefined ? {} : { observer }),
  }).pipe(
    Effect.tap((handle) => handle.synced),
    Effect.provide(layer),
    Effect.provideService(References.MinimumLogLevel, "Warn"),
    Scope.provide(scope),
  );
  const handle = await Effect.runPromise(program);
  return { handle, counter, stop: () => Effect.runPromise(Scope.close(scope, Exit.void)) };
};
