/**
 * opstask as a library: the task lifecycle of etcd-druid's EtcdOpsTask (finalizer, admission with a
 * duplicate policy, Execute with backoff, TTL deletion, cleanup, status in druid's schema, Events)
 * for any task resource an operator defines.
 *
 * This entry holds what an operator writes with: define a kind, write its handlers (or ordered
 * steps), run the controller. The other entries:
 * - `opstask/testing`: `simulate` (in memory, fake clock) and `startControlPlane` (a real
 *   kube-apiserver and etcd, as envtest);
 * - `opstask/crd`: the kind's CustomResourceDefinition from its schema;
 * - `opstask/cli`: kubectl-style commands for the kind;
 * - `opstask/advanced`: the parts underneath, as kube-rs's `applier` is under `Controller`:
 *   `runController` and the Kubernetes interpreter, one reconcile pass as a value, the per-key
 *   core, the effects, the lifecycle machine, metrics.
 */

// ---- define a kind -------------------------------------------------------------------------------
export { ObjectMeta } from "./api/meta.ts";
// ---- read its status -----------------------------------------------------------------------------
export { isTerminal, type TaskState, type TaskStatus } from "./api/status.ts";
export { TaskStatusSchema } from "./api/status-schema.ts";
export type { HandlerRegistry, TaskHandler } from "./handlers/handler.ts";
// ---- write its handlers --------------------------------------------------------------------------
export type { HandlerContext, MemberContext, ObjectResource } from "./handlers/handler-context.ts";
export { ObjectsUnavailable } from "./handlers/objects-unavailable.ts";
// ---- run it --------------------------------------------------------------------------------------
export type { KubeClient } from "./kube/kube-client.ts";
export { KubeconfigError, loadKubeClient } from "./kube/kubeconfig-loader.ts";
export { type ConfigOf, configMember, configUnion } from "./library/config-union.ts";
export { defineTaskKind, type TaskKindDefinition } from "./library/define-task-kind.ts";
export type { HandlersFor } from "./library/handlers-for.ts";
export { memberHandlers } from "./library/member-handlers.ts";
export { completed, failed, retry } from "./library/outcome.ts";
export { type PromiseHandler, promiseHandler } from "./library/promise-handler.ts";
export {
  type LifecycleTiming,
  type TaskController,
  TaskControllerStartError,
} from "./library/run-task-controller.ts";
export { promiseStep, type TaskStep } from "./library/steps/step.ts";
export { type StepsHandlerOptions, stepsHandler } from "./library/steps/steps-handler.ts";
export type { DuplicatePolicy, PhaseOutcome } from "./machine/types.ts";
export type { TaskKind } from "./reconcile/task-kind.ts";
// ---- schedule its tasks (docs/schedules.md) -------------------------------------------------------
export type { ScheduleGuard } from "./schedule/guard.ts";
export { runScheduleController } from "./schedule/schedule-controller.ts";
export { runTaskController, type TaskControllerOptions } from "./schedule/task-controller-schedules.ts";
