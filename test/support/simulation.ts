/** A simulated controller over the in-memory API server, wired for EtcdOpsTask, for tests. */
import type { EtcdOpsTask } from "../../src/etcd/api/etcdopstask.ts";
import { etcdOpsTaskKind } from "../../src/etcd/api/etcdopstask-kind.ts";
import { etcdHandlers } from "../../src/etcd/registry.ts";
import { supportedMembers } from "../../src/handlers/handler.ts";
import { MemoryApiServer } from "../../src/interpreters/memory/api-server.ts";
import { FakeClock } from "../../src/interpreters/memory/clock.ts";
import { type Behaviour, SimulatedController } from "../../src/interpreters/memory/controller.ts";
import type { JsonObject } from "../../src/interpreters/memory/merge-patch.ts";
import type { LifecycleConfig, Phase, PhaseOutcome } from "../../src/machine/types.ts";
import { lifecycleConfig } from "../../src/reconcile/defaults.ts";
import type { TaskFacts, TaskKind } from "../../src/reconcile/task-kind.ts";

export const epoch = Date.UTC(2026, 10, 22, 12, 0, 0);
export const namespace = "default";

export const completed = (description = "done"): Behaviour => ({
  kind: "return",
  outcome: { kind: "completed", description },
});

/** The snapshot handler's answer to a refused connection: retry, with druid's error. */
export const transientHttpFailure = {
  kind: "retry",
  description: "Failed to execute HTTP request",
  error: {
    code: "ERR_EXECUTE_HTTP_REQUEST",
    message: "failed to execute HTTP request",
    cause: "connection refused",
  },
} as const satisfies PhaseOutcome;

/** A scripted handler call that fails transiently (`transientHttpFailure`). */
export const transient: Behaviour = { kind: "return", outcome: transientHttpFailure };

export interface TaskSpec {
  readonly etcd?: string;
  readonly ttl?: number;
  readonly member?: string;
}

export const taskObject = (name: string, spec: TaskSpec = {}): JsonObject => ({
  apiVersion: "druid.gardener.cloud/v1alpha1",
  kind: "EtcdOpsTask",
  metadata: { name, namespace },
  spec: {
    ...(spec.etcd === undefined ? {} : { etcdName: spec.etcd }),
    ttlSecondsAfterFinished: spec.ttl ?? 10,
    config: { [spec.member ?? "onDemandSnapshot"]: spec.member === undefined ? { type: "full" } : {} },
  },
});

/** How scripted handlers behave on each call. */
export type Script = (task: TaskFacts, phase: Phase) => Behaviour;

export const simulation = (
  script: Script,
  overrides: Partial<LifecycleConfig> = {},
  kind: TaskKind<EtcdOpsTask> = etcdOpsTaskKind,
) => {
  const clock = new FakeClock(epoch);
  const server = new MemoryApiServer({
    resource: "etcdopstasks.druid.gardener.cloud",
    now: () => clock.now(),
  });
  const config = lifecycleConfig(kind, overrides);
  const controller = new SimulatedController({
    kind,
    config,
    supported: supportedMembers(etcdHandlers),
    server,
    clock,
    behaviour: script,
  });
  return { clock, server, controller, config };
};

export const outcomeOf = (behaviour: Behaviour): PhaseOutcome | undefined =>
  behaviour.kind === "return" ? behaviour.outcome : undefined;
