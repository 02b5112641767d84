/**
 * `opstask/advanced`: the parts under `runTaskController`, for operators who compose their own
 * controller or test the lifecycle's pieces. Two levels, as kube-rs has `Controller` over `applier`:
 * - the controller and the Kubernetes interpreter: `runController`, `kubernetesLayer`, `TaskWriter`,
 *   `EventRecorder`, metrics and observers;
 * - one reconcile pass as a value (`start`/`answer`/`drive`: requests and answers), the per-key
 *   core (`TaskCore`: `step(input) → commands`), the effect union, the pure lifecycle machine and
 *   its configuration (`lifecycleConfig`, `druidTiming`: etcd-druid's timing, the default).
 * What an operator writes with is in `opstask`; nothing here is needed to define, run or test a kind.
 * These names may change between 0.x minor versions more freely than the root entry's.
 */
export { DecodeError, formatDecodeError } from "./api/decode-error.ts";
export { ManifestMeta } from "./api/meta.ts";
export type { PolicyRule } from "./api/policy-rule.ts";
export {
  boundedInt32,
  type DefaultedIntLimits,
  emptyObject,
  Int32,
  Int64,
  int32WithDefault,
} from "./api/schema-helpers.ts";
export {
  type LastError,
  type LastOperation,
  type OperationState,
  type OperationType,
  type TaskCondition,
  TaskStates,
} from "./api/status.ts";
export { LastErrorsMaxItems } from "./api/status-schema.ts";
export { capText, MaxEchoLength, MaxStatusTextLength } from "./api/text-cap.ts";
export { nextRetryState, noRetry, type RetryState } from "./effects/retry-state.ts";
export {
  isPassEnd,
  isTaskWrite,
  type PassEnd,
  type RequeueReason,
  TaskEffect,
} from "./effects/task-effect.ts";
export type { TaskPhase } from "./handlers/handler.ts";
export type {
  ObjectGetter,
  OwnRecord,
  OwnTask,
  TaskEventRecorder,
  TaskLogger,
} from "./handlers/handler-context.ts";
export { ApiUnavailableCode } from "./handlers/objects-unavailable.ts";
export type { TargetAtRest } from "./history/history-metrics.ts";
export { EventRecorder } from "./interpreters/kubernetes/event-recorder.ts";
export {
  KubeRequests,
  type KubernetesLayerOptions,
  kubernetesLayer,
} from "./interpreters/kubernetes/layer.ts";
export { TaskWriter } from "./interpreters/kubernetes/task-writer.ts";
export type { JsonObject, JsonValue } from "./interpreters/memory/merge-patch.ts";
export { type ApiResource, apiPath } from "./kube/api-path.ts";
export { jsonPatch, kubeRequest, mergePatch, type RequestSettings } from "./kube/client.ts";
export { KubeError } from "./kube/errors.ts";
export type { ApiRequest, ApiResponse } from "./kube/kube-client.ts";
export { type KubeAccess, kubeClientOf } from "./kube/kube-client-node.ts";
export {
  isDns1123Label,
  isDns1123Subdomain,
  LabelRule,
  MaxLabelLength,
  MaxSubdomainLength,
  SubdomainRule,
  subdomainProblem,
} from "./kube/names.ts";
export type { KubeObject, KubeObjectMeta } from "./kube/object.ts";
export { RequestCounter } from "./kube/request-metrics.ts";
export type { ConfigMembers, UnsupportedConfig } from "./library/config-union.ts";
// Also in opstask/crd, which loads the CRD generator and yaml with it: a controller takes it from here.
export { celRule } from "./library/crd/schema-annotations.ts";
export {
  decodeFailure,
  type LibraryTaskKind,
  type SpecTask,
  type SpecTaskKind,
  type SpecTaskKindDefinition,
  type TaskKindAccessors,
  type TaskResultDefinition,
  type TaskSource,
  type TaskSpecSchema,
  type TaskSpecShape,
} from "./library/define-task-kind.ts";
export type { MemberOf } from "./library/handlers-for.ts";
export type { LifecycleOptions } from "./library/lifecycle-options.ts";
export type { MemberHandler, MemberHandlersFor, MemberPhase } from "./library/member-handlers.ts";
export type { CompletedOutcome, FailedOutcome, RetryOutcome } from "./library/outcome.ts";
export type { PromisePhase } from "./library/promise-handler.ts";
export type {
  LeaderElectionOptions,
  LogLevel,
  MetricsEndpoint,
  OtherController,
  TaskControllerBaseOptions,
} from "./library/run-task-controller.ts";
export type { ServicesOption } from "./library/services-option.ts";
export type { StartFailure } from "./library/start-checks.ts";
export type { PromiseStep, StepAnswer, StepStop, StepWait } from "./library/steps/step.ts";
export { StepErrorCodes } from "./library/steps/step-errors.ts";
export { type StepAnnotations, stepAnnotations } from "./library/steps/step-progress.ts";
export { stepAnnotationNames } from "./library/steps/steps-handler.ts";
export {
  DefaultMaxResultBytes,
  MaxResultBytesLimit,
  type SucceededOutcome,
} from "./library/task-result.ts";
export { machineVersion, type TaskMachine, taskMachine } from "./machine/task-machine.ts";
export type {
  AdmissionActivity,
  ConditionTypes,
  EncodedResult,
  KnownResult,
  LifecycleConfig,
  PassInput,
  PeerTask,
  Phase,
  TaskError,
  TaskObservation,
  Vocabulary,
} from "./machine/types.ts";
export {
  type CoreCommand,
  type CoreInput,
  type CoreOptions,
  type Jitter,
  type PassView,
  TaskCore,
  type TaskObject,
  type TriggerReason,
} from "./reconcile/core.ts";
export { druidTiming, lifecycleConfig } from "./reconcile/defaults.ts";
export {
  defaultHandlerDefectLimit,
  defectOf,
  type HandlerDefect,
  type HandlerReply,
} from "./reconcile/handler-defect.ts";
export { observe, peersOf } from "./reconcile/observe.ts";
export { DefaultMaxTaskBytes, type OversizedTask } from "./reconcile/oversized-task.ts";
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
export {
  type CachedMetadata,
  type Decoded,
  machineVersionAnnotation,
  type ResourceRef,
  readFacts,
  type TaskDecodeFailure,
  type TaskFacts,
  type TaskMeta,
  type UndecodedFacts,
} from "./reconcile/task-kind.ts";
export { cacheObject } from "./runtime/cache-object.ts";
export {
  type ControllerHandle,
  type ControllerOptions,
  type ControllerStats,
  runController,
} from "./runtime/controller.ts";
export { type GroupObjects, makeGroupObjects, type ObjectLookup } from "./runtime/group-objects.ts";
export {
  type ControllerMetrics,
  type ControllerMetricsOptions,
  type ControllerObserver,
  makeControllerMetrics,
  metricLabelOf,
  noObserver,
} from "./runtime/metrics.ts";
export type { GuardInput, GuardVerdict } from "./schedule/guard.ts";
export type { KindSchedules } from "./schedule/task-controller-schedules.ts";
export { MaxTimerDelayMs, timerDelayMs } from "./timer-limit.ts";
