/**
 * Resumable steps under the cluster controller (runController) on a real apiserver: each handler
 * call's context carries `ownRecord` and `ownTask`, so a steps handler records its progress in the
 * controller's record (a ConfigMap in its own namespace, removed with the task) and mirrors it in the
 * task's annotations, and the task Succeeds. Found by the quorum-recovery e2e test: the controller's calls
 * lacked the task's resource, and every steps task Failed with ERR_STEPS_UNSUPPORTED at step 1.
 */
import { CustomObjectsApi } from "@kubernetes/client-node";
import { Effect, Exit, Scope } from "effect";
import { describe, expect, it } from "vitest";
import { RecoveryAnnotations } from "../../src/etcd/api/config/recover-from-quorum-loss.ts";
import type { EtcdOpsTask } from "../../src/etcd/api/etcdopstask.ts";
import { etcdOpsTaskKind } from "../../src/etcd/api/etcdopstask-kind.ts";
import { kubernetesLayer } from "../../src/interpreters/kubernetes/layer.ts";
import { stepsHandler } from "../../src/library/steps/steps-handler.ts";
import { lifecycleConfig } from "../../src/reconcile/defaults.ts";
import { runController } from "../../src/runtime/controller.ts";
import { createTestNamespace, druidCrds, useControlPlane } from "../support/cluster.ts";
import { waitFor } from "../support/wait.ts";

const cluster = useControlPlane({ crds: druidCrds });
const group = { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcdopstasks" };

describe("a steps handler under the cluster controller", () => {
  it("records its progress on the task and Succeeds", async () => {
    const kc = cluster().makeKubeConfig();
    const api = kc.makeApiClient(CustomObjectsApi);
    const namespace = await createTestNamespace(kc, "steps");
    const records = await createTestNamespace(kc, "records");
    const ran: string[] = [];
    // The recovery's progress prefix: etcdOpsTaskKind's cache keeps those annotations.
    const handler = stepsHandler<EtcdOpsTask>(etcdOpsTaskKind, {
      progress: RecoveryAnnotations.progressPrefix,
      steps: ["First", "Second"].map((name) => ({
        name,
        run: () => Effect.sync(() => void ran.push(name)),
      })),
    });
    const scope = Scope.makeUnsafe();
    await Effect.runPromise(
      runController({
        kind: etcdOpsTaskKind,
        handlers: { onDemandSnapshot: handler },
        config: lifecycleConfig(etcdOpsTaskKind, { backoffBaseMs: 50, backoffCapMs: 200 }),
        kubeConfig: kc,
        concurrency: 2,
        namespace,
        progressNamespace: records,
      }).pipe(
        Effect.tap((handle) => handle.synced),
        Effect.provide(kubernetesLayer({ kubeConfig: kc, resource: etcdOpsTaskKind.resource })),
        Scope.provide(scope),
      ),
    );
    try {
      await api.createNamespacedCustomObject({
        ...group,
        namespace,
        body: {
          apiVersion: "druid.gardener.cloud/v1alpha1",
          kind: "EtcdOpsTask",
          metadata: { name: "stepped", namespace },
          spec: {
            etcdName: "e",
            ttlSecondsAfterFinished: 3600,
            config: { onDemandSnapshot: { type: "full" } },
          },
        },
      });
      const done = await waitFor(
        "the task to finish",
        async () => {
          const task = (await api.getNamespacedCustomObject({ ...group, namespace, name: "stepped" })) as {
            metadata?: { annotations?: Record<string, string> };
            status?: EtcdOpsTask["status"];
          };
          const state = task.status?.state;
          return state === "Succeeded" || state === "Failed" ? task : undefined;
        },
        60_000,
      );
      expect(done.status?.state, JSON.stringify(done.status)).toBe("Succeeded");
      expect(done.metadata?.annotations?.[`${RecoveryAnnotations.progressPrefix}-last-completed-step`]).toBe(
        "Second",
      );
      expect(ran).toEqual(["First", "Second"]);
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void));
    }
  });
});
