/**
 * `runTaskController` with the kind's schedules: the package's `runTaskController` is this one. Given
 * `schedules`, the kind's TaskSchedules run in the same controller: through its client and request
 * counter, once it leads and its caches are filled (so only the leader creates runs), one schedule
 * controller per watched namespace, stopped with it (by `stop()`, the signal or a lost Lease). It lives
 * here, over the library's controller, because the schedule controller is built on the library.
 */

import { kubeClientOf } from "../kube/kube-client-node.ts";
import { loadKubeClient } from "../kube/kubeconfig-loader.ts";
import { RequestCounter } from "../kube/request-metrics.ts";
import { defaultControllerName } from "../library/controller-name.ts";
import {
  runTaskController as runTasks,
  type TaskController,
  type TaskControllerOptions as TasksOnlyOptions,
} from "../library/run-task-controller.ts";
import { checkServed, TaskControllerStartError } from "../library/start-checks.ts";
import type { ScheduleGuard } from "./guard.ts";
import { runScheduleController, type ScheduleController } from "./schedule-controller.ts";
import { scheduleResource } from "./schedule-spec.ts";

/** The kind's schedules, run by its controller (the TaskSchedule CRD, `scheduleCrd()`, installed). */
export interface KindSchedules {
  /** The guards its schedules may name in `spec.guard.name`; a run a guard refuses is recorded as skipped. */
  readonly guards?: Readonly<Record<string, ScheduleGuard>>;
}

export type TaskControllerOptions<Task, R = never> = TasksOnlyOptions<Task, R> & {
  /** Also run the TaskSchedules that create this kind's tasks (docs/schedules.md). Off when absent. */
  readonly schedules?: KindSchedules;
};

/** The schedule caches' first LIST within the start's time, or the start fails saying what to check. */
const filledWithin = async (filled: Promise<unknown>, timeoutMs: number): Promise<void> => {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new TaskControllerStartError(
            "NotSynced",
            `the ${scheduleResource.plural} cache was not filled within ${Math.round(timeoutMs / 1000)} s: check that the kubeconfig may list and watch ${scheduleResource.plural}.${scheduleResource.group}`,
          ),
        ),
      timeoutMs,
    );
  });
  try {
    await Promise.race([filled, late]);
  } finally {
    clearTimeout(timer);
  }
};

export const runTaskController = async <Task, R = never>(
  options: TaskControllerOptions<Task, R>,
): Promise<TaskController> => {
  const { schedules, ...tasksOptions } = options;
  if (schedules === undefined) return runTasks(tasksOptions as TasksOnlyOptions<Task, R>);
  const fieldManager = options.fieldManager ?? defaultControllerName(options.kind.resource);
  // One client and one counter for both controllers.
  const kubeConfig = options.kubeConfig ?? (await loadKubeClient(undefined, { fieldManager }));
  const counter = options.counter ?? new RequestCounter();
  await checkServed({
    client: kubeClientOf(kubeConfig),
    resource: scheduleResource,
    timeoutMs: options.startTimeoutMs ?? 30_000,
    crdManifest: "<the TaskSchedule CRD, scheduleCrd() from opstask/crd>",
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  });
  const tasks = await runTasks({ ...tasksOptions, kubeConfig, counter } as TasksOnlyOptions<Task, R>);
  const namespaces: ReadonlyArray<string | undefined> =
    options.namespace === undefined
      ? [undefined]
      : typeof options.namespace === "string"
        ? [options.namespace]
        : options.namespace;
  const running: ScheduleController[] = [];
  let stopped = false;
  const stopSchedules = async () => {
    stopped = true;
    await Promise.all(running.map((controller) => controller.stop()));
  };
  // Only once leading with filled caches: a standby instance creates no run.
  const synced = tasks.synced.then(async () => {
    if (stopped) return;
    for (const namespace of namespaces) {
      const controller = await runScheduleController({
        kubeConfig,
        targets: [
          { kind: options.kind, ...(schedules.guards === undefined ? {} : { guards: schedules.guards }) },
        ],
        fieldManager,
        counter,
        ...(options.maxTaskBytes === undefined ? {} : { maxTaskBytes: options.maxTaskBytes }),
        ...(options.logLevel === undefined ? {} : { logLevel: options.logLevel }),
        ...(tasks.observeSchedule === undefined ? {} : { observe: tasks.observeSchedule }),
        ...(namespace === undefined ? {} : { namespace }),
      });
      running.push(controller);
      // Stopped while this one started: stopSchedules did not see it.
      if (stopped) return controller.stop();
    }
    await filledWithin(
      Promise.all(running.map((controller) => controller.synced)),
      options.startTimeoutMs ?? 30_000,
    );
  });
  // Stopped by the signal or a lost Lease: the schedules go with the tasks.
  const done = tasks.done.then(async (how) => {
    await synced.catch(() => undefined);
    await stopSchedules();
    return how;
  });
  const stop = async () => {
    await stopSchedules();
    await tasks.stop();
    await done;
  };
  const controller: TaskController = { ...tasks, stop, synced, done };
  if (options.leaderElection === undefined) {
    try {
      await synced;
    } catch (error) {
      await stop();
      throw error;
    }
  }
  // Leading, but the schedules did not start: the controller stops, as when its own caches do not fill.
  else synced.catch(() => stop());
  return controller;
};
