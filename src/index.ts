/**
 * opstask as a library: the task lifecycle of etcd-druid's EtcdOpsTask (finalizer, admission with a
 * duplicate policy, Execute with backoff, TTL deletion, cleanup, status in druid's schema, Events)
 * for any task resource an operator defines.
 *
 * Two levels, as in kube-rs:
 * - easy: `defineTaskKind` + handlers + `runTaskController`, and `simulate` (opstask/testing) for tests;
 * - hard: the parts underneath — `runController` and the Kubernetes interpreter, the pass protocol
 *   (`start`/`answer`/`drive`: one reconcile pass as requests and answers), the per-key scheduler
 *   (`TaskScheduler`), the effect union, the pure lifecycle machine.
 * Tests import `simulate` and the memory interpreter (`SimulatedController`, `MemoryApiServer`,
 * `FakeClock`) from `opstask/testing` (src/testing.ts); CRD generation is `opstask/crd` (src/crd.ts).
 */

// ---- the vocabulary: handlers, outcomes, task kinds, status --------------------------------------
export { DecodeError, formatDecodeError } from "./api/decode-error.ts";
export { ManifestMeta, ObjectMeta } from "./api/meta.ts";
export {
  isTerminal,
  type LastError,
  type LastOperation,
  type OperationState,
  type OperationType,
  type TaskState,
  TaskStates,
  type TaskStatus,
} from "./api/status.ts";
export { LastErrorsMaxItems, TaskStatusSchema } from "./api/status-schema.ts";
// ---- hard level: one pass as a value, the effects, the machine ----------------------------------
export { nextRetryState, noRetry, type RetryState } from "./effects/retry-state.ts";
export {
  isPassEnd,
  isTaskWrite,
  type PassEnd,
  type RequeueReason,
  TaskEffect,
} from "./effects/task-effect.ts";
export { etcdOpsTaskKind } from "./etcd/api/etcdopstask-kind.ts";
export type { HandlerRegistry, TaskHandler, TaskPhase } from "./handlers/handler.ts";
export type {
  HandlerContext,
  MemberContext,
  ObjectGetter,
  ObjectResource,
  OwnTask,
  TaskEventRecorder,
  TaskLogger,
} from "./handlers/handler-context.ts";
export { ApiUnavailableCode, ObjectsUnavailable } from "./handlers/objects-unavailable.ts";
// ---- hard level: the controller and the Kubernetes interpreter -----------------------------------
export { EventRecorder } from "./interpreters/kubernetes/event-recorder.ts";
export {
  KubeRequests,
  type KubernetesLayerOptions,
  kubernetesLayer,
} from "./interpreters/kubernetes/layer.ts";
export { TaskWriter } from "./interpreters/kubernetes/task-writer.ts";
export type { JsonObject, JsonValue } from "./interpreters/memory/merge-patch.ts";
export { KubeError } from "./kube/errors.ts";
export type { KubeClient } from "./kube/kube-client.ts";
export type { KubeAccess } from "./kube/kube-client-node.ts";
export { kubeClientOf } from "./kube/kube-client-node.ts";
export { KubeconfigError, loadKubeClient } from "./kube/kubeconfig-loader.ts";
export { RequestCounter } from "./kube/request-metrics.ts";
// ---- easy level: define a kind, write handlers, run them -------------------------------------------
export {
  type ConfigMembers,
  type ConfigOf,
  configMember,
  configUnion,
  type UnsupportedConfig,
} from "./library/config-union.ts";
export {
  decodeFailure,
  defineTaskKind,
  type TaskKindAccessors,
  type TaskKindDefinition,
  type TaskSource,
} from "./library/define-task-kind.ts";
export type { HandlersFor, MemberOf } from "./library/handlers-for.ts";
export type { LifecycleOptions } from "./library/lifecycle-options.ts";
export {
  type MemberHandler,
  type MemberHandlersFor,
  type MemberPhase,
  memberHandlers,
} from "./library/member-handlers.ts";
export { completed, failed, retry } from "./library/outcome.ts";
export { type PromiseHandler, type PromisePhase, promiseHandler } from "./library/promise-handler.ts";
export {
  type LeaderElectionOptions,
  type LifecycleTiming,
  type LogLevel,
  type MetricsEndpoint,
  type OtherController,
  runTaskController,
  type TaskController,
  type TaskControllerBaseOptions,
  type TaskControllerOptions,
  TaskControllerStartError,
} from "./library/run-task-controller.ts";
export type { ServicesOption } from "./library/services-option.ts";
export type { StartFailure } from "./library/start-checks.ts";
export {
  type PromiseStep,
  promiseStep,
  type StepAnswer,
  type StepStop,
  type StepWait,
  type TaskStep,
} from "./library/steps/step.ts";
export { StepErrorCodes } from "./library/steps/step-errors.ts";
export { type StepAnnotations, stepAnnotations } from "./library/steps/step-progress.ts";
export {
  type StepsHandlerOptions,
  stepAnnotationNames,
  stepsHandler,
} from "./library/steps/steps-handler.ts";
export { machineVersion, type TaskMachine, taskMachine } from "./machine/task-machine.ts";
export type {
  DuplicatePolicy,
  KnownResult,
  LifecycleConfig,
  PassInput,
  PeerTask,
  Phase,
  PhaseOutcome,
  TaskError,
  TaskObservation,
  Vocabulary,
} from "./machine/types.ts";
export { druidTiming, lifecycleConfig } from "./reconcile/defaults.ts";
export {
  defaultHandlerDefectLimit,
  defectOf,
  type HandlerDefect,
  type HandlerReply,
} from "./reconcile/handler-defect.ts";
export { observe, peersOf } from "./reconcile/observe.ts";
export {
  DefaultMaxTaskBytes,
  type OversizedTask,
} from "./reconcile/oversized-task.ts";
export {
  Answer,
  answer,
  drive,
  driveSync,
  type Pass,
  type PassRequest,
  type Perform,
  type Step,
  type Stop,
  start,
  statePath,
  type TaskSnapshot,
  type TransitionRecord,
} from "./reconcile/pass.ts";
export type { Jitter } from "./reconcile/pass-timers.ts";
export {
  type Kept,
  type PassHold,
  type PassStart,
  type SchedulerOptions,
  type TaskChange,
  TaskScheduler,
  type Wake,
} from "./reconcile/scheduler.ts";
export {
  type CachedMetadata,
  type Decoded,
  machineVersionAnnotation,
  type ResourceRef,
  readFacts,
  type TaskDecodeFailure,
  type TaskFacts,
  type TaskKind,
  type TaskMeta,
  type UndecodedFacts,
} from "./reconcile/task-kind.ts";
export type { TriggerReason } from "./reconcile/trigger-reason.ts";
export {
  type ControllerHandle,
  type ControllerOptions,
  type ControllerStats,
  runController,
} from "./runtime/controller.ts";
export {
  type ControllerMetrics,
  type ControllerMetricsOptions,
  type ControllerObserver,
  makeControllerMetrics,
  metricLabelOf,
  noObserver,
} from "./runtime/metrics.ts";
