/**
 * The differential test's real world: the cluster runtime (src/runtime/controller.ts) against a real
 * kube-apiserver + etcd, with scripted handlers; its writes are read back from the audit log.
 */
import { CustomObjectsApi, type KubeConfig } from "@kubernetes/client-node";
import type { JsonObject } from "../../src/interpreters/memory/merge-patch.ts";
import type { Phase } from "../../src/machine/types.ts";
import { createTestNamespace } from "./cluster.ts";
import { type RunningController, scriptedHandlers, startController } from "./controller.ts";
import type { WriteAudit } from "./differential-audit.ts";
import { type Command, executeSteps, foreignFinalizer, settleMs, timing } from "./differential-scenario.ts";
import type { ObservedEvent, ObservedWrite } from "./differential-writes.ts";
import { namespace as memoryNamespace, taskObject } from "./simulation.ts";

const group = { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcdopstasks" };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** `value` with the test namespace's name as the memory world's (messages name it, e.g. `<ns>/e1`). */
const asInMemory = <A>(value: A, namespace: string): A =>
  JSON.parse(
    JSON.stringify(value)
      .replaceAll(`"${namespace}"`, `"${memoryNamespace}"`)
      .replaceAll(`${namespace}/`, `${memoryNamespace}/`),
  );

const metadataOf = (object: JsonObject) =>
  object.metadata as { finalizers?: string[]; deletionTimestamp?: string };

export interface ClusterWorld {
  readonly writes: ReadonlyArray<ObservedWrite>;
  readonly calls: ReadonlyArray<{ readonly uid: string; readonly phase: Phase }>;
  readonly events: ReadonlyArray<ObservedEvent>;
  readonly finals: ReadonlyArray<JsonObject>;
}

/**
 * Runs `commands` against the cluster in a new namespace, each followed by `settleMs` of wall time.
 * `user` acts for the test (audited as the user); `controller` is the controller's own user.
 */
export const runOnCluster = async (
  kubeConfigs: { readonly user: KubeConfig; readonly controller: KubeConfig },
  audit: WriteAudit,
  commands: ReadonlyArray<Command>,
): Promise<ClusterWorld> => {
  const api = kubeConfigs.user.makeApiClient(CustomObjectsApi);
  const namespace = await createTestNamespace(kubeConfigs.user, "diff");
  const handlers = scriptedHandlers();
  const start = () => startController(kubeConfigs.controller, handlers.registry, timing, namespace);
  let controller: RunningController = await start();
  const read = async (name: string): Promise<JsonObject | undefined> => {
    try {
      return (await api.getNamespacedCustomObject({ ...group, namespace, name })) as JsonObject;
    } catch {
      return undefined;
    }
  };
  const setFinalizers = (name: string, finalizers: string[]) =>
    api
      .patchNamespacedCustomObject({
        ...group,
        namespace,
        name,
        body: [{ op: "add", path: "/metadata/finalizers", value: finalizers }],
      })
      .catch(() => undefined);
  try {
    for (const command of commands) {
      if (command.kind === "restart") {
        await controller.stop();
        controller = await start();
        await sleep(settleMs);
        continue;
      }
      const stored = await read(command.name);
      const finalizers = stored === undefined ? [] : (metadataOf(stored).finalizers ?? []);
      switch (command.kind) {
        case "create":
          if (stored !== undefined) break;
          handlers.scripts.set(command.name, { execute: executeSteps(command.plan) });
          await api.createNamespacedCustomObject({
            ...group,
            namespace,
            body: {
              ...taskObject(command.name, { etcd: command.etcd, ttl: command.ttl }),
              metadata: { name: command.name, namespace },
            },
          });
          break;
        case "delete":
          await api
            .deleteNamespacedCustomObject({ ...group, namespace, name: command.name })
            .catch(() => undefined);
          break;
        case "label":
          if (stored !== undefined)
            await api
              .patchNamespacedCustomObject({
                ...group,
                namespace,
                name: command.name,
                body: [{ op: "add", path: "/metadata/labels", value: { touched: "yes" } }],
              })
              .catch(() => undefined);
          break;
        case "foreign":
          if (
            stored !== undefined &&
            metadataOf(stored).deletionTimestamp === undefined &&
            !finalizers.includes(foreignFinalizer)
          )
            await setFinalizers(command.name, [...finalizers, foreignFinalizer]);
          break;
        case "unforeign":
          if (finalizers.includes(foreignFinalizer))
            await setFinalizers(
              command.name,
              finalizers.filter((f) => f !== foreignFinalizer),
            );
          break;
      }
      await sleep(settleMs);
    }
    const list = (await api.listNamespacedCustomObject({ ...group, namespace })) as { items: JsonObject[] };
    return {
      writes: asInMemory(audit.writesIn(namespace), namespace),
      events: asInMemory(audit.eventsIn(namespace), namespace),
      calls: handlers.calls.map((call) => ({ uid: call.uid, phase: call.phase })),
      finals: asInMemory(list.items, namespace),
    };
  } finally {
    await controller.stop();
  }
};
