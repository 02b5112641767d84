/** What `runController` takes and what it exposes while it runs. */
import type * as Duration from "effect/Duration";
import type * as Effect from "effect/Effect";
import type { HandlerRegistry } from "../handlers/handler.ts";
import type { KubeAccess } from "../kube/kube-client-node.ts";
import type { RequestCounter } from "../kube/request-metrics.ts";
import type { LifecycleConfig } from "../machine/types.ts";
import type { ResourceRef, TaskKind } from "../reconcile/task-kind.ts";
import type { OtherController } from "./foreign-writers.ts";
import type { GroupObjects } from "./group-objects.ts";
import type { ControllerObserver } from "./metrics.ts";
import type { WorkQueueMetrics } from "./work-queue.ts";

export interface ControllerOptions<Task, R> {
  readonly kind: TaskKind<Task>;
  readonly handlers: HandlerRegistry<Task, R>;
  readonly config: LifecycleConfig;
  /** opstask's lean `KubeClient` (`loadKubeClient`) or a client-node `KubeConfig`. */
  readonly kubeConfig: KubeAccess;
  /** Watch one namespace; all when absent. */
  readonly namespace?: string;
  /**
   * The controller's own namespace, where it keeps a record per task that task authors cannot write
   * (resumable steps' progress: own-record-kube.ts). Without it handlers get no `ownRecord`, and a
   * steps handler fails its tasks with ERR_STEPS_UNSUPPORTED.
   */
  readonly progressNamespace?: string;
  /** Passes run at once (druid: 3). Handler calls do not count: they never hold a worker. */
  readonly concurrency: number;
  /** Every task is reconciled again this often, whatever happened (default 10 minutes). */
  readonly resyncInterval?: Duration.Input;
  /**
   * Objects that name the admission groups (Etcd for EtcdOpsTask): a change to one re-triggers the
   * unfinished tasks of its group in its namespace.
   */
  readonly groupResource?: Pick<ResourceRef, "group" | "version" | "plural">;
  /** Shares the cache of `groupResource` objects with handlers (and says what it keeps of each). */
  readonly groupObjects?: GroupObjects;
  /** Where the informers count their LIST and WATCH requests (share the writer's to see every request). */
  readonly counter?: RequestCounter;
  /** Told about every pass and every finished task (metrics). */
  readonly observer?: ControllerObserver;
  /**
   * The field manager the writer's client writes as (default `opstask`, the lean client's): never
   * reported as a foreign writer, and how the foreign-writer Event names this controller.
   */
  readonly fieldManager?: string;
  /** Other field managers of our own writes (earlier names of this controller): not foreign either. */
  readonly fieldManagers?: ReadonlyArray<string>;
  /** Another controller known to act on this kind's objects: the foreign-writer Event names it. */
  readonly otherController?: OtherController;
  /**
   * The bound on one task as cached, in bytes of JSON (default 64 KiB, reconcile/oversized-task.ts):
   * a larger task is kept as a stub and Rejected with ERR_TASK_TOO_LARGE.
   */
  readonly maxTaskBytes?: number;
}

/** What the controller exposes while it runs. */
export interface ControllerHandle {
  /** Completes once the task cache holds the first LIST. */
  readonly synced: Effect.Effect<void>;
  readonly stats: () => ControllerStats;
  readonly queue: () => WorkQueueMetrics;
}

export interface ControllerStats {
  readonly passes: number;
  readonly aborted: number;
  readonly handlerCalls: number;
  /** Handler calls running, those of deleted tasks (still holding their group) included. */
  readonly inFlightCalls: number;
  /** Of those, calls of deleted tasks: they hold their admission group until they end. */
  readonly orphanedCalls: number;
  readonly writes: Readonly<Record<string, number>>;
  /** Per-task entries kept beside the cache (retry state, unwritten results, released tasks). */
  readonly remembered: number;
}
