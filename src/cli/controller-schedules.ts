/**
 * `opstask controller` runs EtcdOpsTask schedules beside the tasks: once the task controller leads
 * and its caches are filled, a schedule controller (src/schedule) per watched namespace, with the
 * `defragmentation` guard reading member sizes through the handlers' own services. Without the
 * TaskSchedule CRD installed, schedules are off and one line says how to turn them on.
 */
import * as ManagedRuntime from "effect/ManagedRuntime";
import { etcdOpsTaskKind } from "../etcd/api/etcdopstask-kind.ts";
import { etcdHandlerLayer } from "../etcd/registry.ts";
import type { ResolveOverride } from "../etcd/resolve-override.ts";
import { defragmentationGuard } from "../etcd/schedule/defragmentation-guard.ts";
import { type KubeAccess, kubeClientOf } from "../kube/kube-client-node.ts";
import type { KubeObject } from "../kube/object.ts";
import { checkServed } from "../library/start-checks.ts";
import type { GroupObjects } from "../runtime/group-objects.ts";
import { runScheduleController, type ScheduleController } from "../schedule/schedule-controller.ts";
import { scheduleResource } from "../schedule/schedule-spec.ts";

export interface EtcdSchedulesOptions {
  readonly kubeConfig: KubeAccess;
  readonly namespaces: ReadonlyArray<string | undefined>;
  readonly resolve: ReadonlyArray<ResolveOverride>;
  readonly etcds: GroupObjects;
  readonly fieldManager: string;
  /** `--max-task-bytes`: the schedule controller's caches are bounded by it too. */
  readonly maxTaskBytes: number;
  readonly logLevel: "debug" | "info" | "warn" | "error" | "none";
  readonly say: (line: string) => void;
  /** The task board's schedule list, when the board is on. */
  readonly observe?: (key: string, schedule: KubeObject | undefined) => void;
}

export const startEtcdSchedules = async (
  options: EtcdSchedulesOptions,
): Promise<{ readonly stop: () => Promise<void> }> => {
  try {
    await checkServed({
      client: kubeClientOf(options.kubeConfig),
      resource: scheduleResource,
      timeoutMs: 10_000,
    });
  } catch {
    options.say(
      "TaskSchedules are off: the CRD taskschedules.opstask.gardener.cloud is not served (kubectl apply -f deploy/crds/opstask.gardener.cloud_taskschedules.yaml)",
    );
    return { stop: async () => undefined };
  }
  const services = ManagedRuntime.make(
    etcdHandlerLayer({ kubeConfig: options.kubeConfig, resolve: options.resolve, etcds: options.etcds }),
  );
  const guards = { defragmentation: defragmentationGuard((effect) => services.runPromise(effect)) };
  const controllers: ScheduleController[] = [];
  for (const namespace of options.namespaces)
    controllers.push(
      await runScheduleController({
        kubeConfig: options.kubeConfig,
        targets: [{ kind: etcdOpsTaskKind, guards }],
        fieldManager: options.fieldManager,
        maxTaskBytes: options.maxTaskBytes,
        logLevel: options.logLevel,
        ...(options.observe === undefined ? {} : { observe: options.observe }),
        ...(namespace === undefined ? {} : { namespace }),
      }),
    );
  return {
    stop: async () => {
      await Promise.all(controllers.map((controller) => controller.stop()));
      await services.dispose();
    },
  };
};
