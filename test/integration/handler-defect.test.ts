/**
 * Issue 22 point 6 on a real apiserver: a handler that throws is logged at ERROR with its stack and
 * the task (namespace/name, phase, reconcile ID) once per kind of defect, counted in
 * `opstask_handler_defects_total{phase}`, and its task Fails with ERR_HANDLER_DEFECT after
 * `handlerDefectLimit` calls instead of being retried for ever.
 */
import { CustomObjectsApi } from "@kubernetes/client-node";
import { Effect, Exit, Layer, Logger, References, Scope } from "effect";
import { describe, expect, it } from "vitest";
import type { EtcdOpsTask } from "../../src/etcd/api/etcdopstask.ts";
import { etcdOpsTaskKind } from "../../src/etcd/api/etcdopstask-kind.ts";
import type { TaskHandler } from "../../src/handlers/handler.ts";
import { kubernetesLayer } from "../../src/interpreters/kubernetes/layer.ts";
import { lifecycleConfig } from "../../src/reconcile/defaults.ts";
import { runController } from "../../src/runtime/controller.ts";
import { makeControllerMetrics } from "../../src/runtime/metrics.ts";
import { createTestNamespace, druidCrds, useControlPlane } from "../support/cluster.ts";
import { waitFor } from "../support/wait.ts";

const cluster = useControlPlane({ crds: druidCrds });
const group = { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcdopstasks" };

interface LogEntry {
  readonly level: string;
  readonly message: unknown;
  readonly annotations: Record<string, unknown>;
}

/** A bug: the snapshot type is read from a field that does not exist. */
const snapshotTypeOf = (task: EtcdOpsTask): string =>
  (task.spec as unknown as { snapshot: { type: string } }).snapshot.type;

describe("a handler defect on a cluster", () => {
  it("is logged once with its stack, counted, and Fails the task after the limit", async () => {
    const kc = cluster().makeKubeConfig();
    const api = kc.makeApiClient(CustomObjectsApi);
    const namespace = await createTestNamespace(kc, "defect");
    let calls = 0;
    const handler: TaskHandler<EtcdOpsTask> = {
      admit: () => Effect.succeed({ kind: "completed", description: "Admitted" }),
      execute: (task) =>
        Effect.sync(() => {
          calls += 1;
          return { kind: "completed", description: snapshotTypeOf(task) };
        }),
      cleanup: () => Effect.succeed({ kind: "completed", description: "Cleaned up" }),
    };
    const logs: LogEntry[] = [];
    const capture = Logger.map(Logger.formatStructured, (entry) => {
      logs.push(entry);
    });
    const metrics = makeControllerMetrics();
    const scope = Scope.makeUnsafe();
    const program = runController({
      kind: etcdOpsTaskKind,
      handlers: { onDemandSnapshot: handler },
      config: lifecycleConfig(etcdOpsTaskKind, {
        backoffBaseMs: 50,
        backoffCapMs: 200,
        handlerDefectLimit: 3,
      }),
      kubeConfig: kc,
      concurrency: 3,
      namespace,
      observer: metrics.observer,
    }).pipe(
      Effect.tap((handle) => handle.synced),
      Effect.provide(
        Layer.mergeAll(
          kubernetesLayer({ kubeConfig: kc, resource: etcdOpsTaskKind.resource }),
          Logger.layer([capture]),
        ),
      ),
      Effect.provideService(References.MinimumLogLevel, "Info"),
      Scope.provide(scope),
    );
    await Effect.runPromise(program);
    try {
      await api.createNamespacedCustomObject({
        ...group,
        namespace,
        body: {
          apiVersion: "druid.gardener.cloud/v1alpha1",
          kind: "EtcdOpsTask",
          metadata: { name: "buggy", namespace },
          spec: {
            etcdName: "e",
            ttlSecondsAfterFinished: 3600,
            config: { onDemandSnapshot: { type: "full" } },
          },
        },
      });
      const failed = await waitFor(
        "the task Failed",
        async () => {
          const task = (await api.getNamespacedCustomObject({ ...group, namespace, name: "buggy" })) as {
            status?: EtcdOpsTask["status"];
          };
          return task.status?.state === "Failed" ? task.status : undefined;
        },
        60_000,
      );
      expect(calls).toBe(3);
      const last = failed.lastErrors?.at(-1);
      expect(last?.code).toBe("ERR_HANDLER_DEFECT");
      expect(last?.description).toContain("handler failed unexpectedly 3 times (limit 3)");
      expect(last?.description).toContain("TypeError: Cannot read properties of undefined (reading 'type')");
      expect(failed.lastOperation?.description).toMatch(
        /^Handler failed unexpectedly 3 times; giving up: TypeError/,
      );

      const defects = logs.filter((entry) => String(entry.message).startsWith("handler defect:"));
      expect(defects).toHaveLength(1);
      const [line] = defects;
      expect(line?.level).toBe("ERROR");
      expect(line?.annotations).toMatchObject({
        task: `${namespace}/buggy`,
        phase: "execute",
        name: "buggy",
      });
      expect(line?.annotations.reconcileID).toEqual(expect.any(String));
      expect(String(line?.annotations.stack)).toMatch(/TypeError[^\n]*\n\s+at snapshotTypeOf/);

      const exposed = await metrics.registry.metrics();
      expect(exposed).toContain('opstask_handler_defects_total{phase="execute"} 3');
      expect(exposed).toContain('opstask_handler_defects_total{phase="admit"} 0');
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void));
    }
  });
});
