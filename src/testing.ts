/**
 * `opstask/testing`: test a task kind's handlers.
 * - Without a cluster: `simulate` drives the real lifecycle against an in-memory apiserver with a
 *   fake clock (crashes, hangs, recorded writes and Events); `SimulatedController`, `MemoryApiServer`
 *   and `FakeClock` are the parts underneath, for tests that drive the controller step by step.
 * - On a real API server: `startControlPlane` runs kube-apiserver and etcd locally (envtest's
 *   recipe), installs CRDs, applies RBAC and gives kubeconfigs and ServiceAccount tokens. Its code
 *   (and `@kubernetes/client-node`, which it needs) loads only when it is called. `taskClient` is a
 *   typed client for one kind (create, get, list, delete, waitFor) over any `KubeClient`.
 * Nothing here is needed in production, so the library's entry (`opstask`) does not load it.
 */
export { MemoryApiServer, type WatchEvent } from "./interpreters/memory/api-server.ts";
export { FakeClock } from "./interpreters/memory/clock.ts";
export {
  type Behaviour,
  type CallInfo,
  type HandlerCall,
  type PassRecord,
  type RecordedEvent,
  SimulatedController,
  type SimulatedControllerOptions,
  type WriteRecord,
} from "./interpreters/memory/controller.ts";
export { MemoryObjects } from "./interpreters/memory/memory-objects.ts";
export { handlerContext } from "./library/handler-context-of.ts";
export {
  type ControlPlane,
  type ControlPlaneOptions,
  type CrdSource,
  type ServiceAccountOptions,
  startControlPlane,
} from "./library/harness/control-plane.ts";
export {
  type TaskClient,
  type TaskClientOptions,
  type TaskRecord,
  taskClient,
  type WaitOptions,
} from "./library/harness/task-client.ts";
export {
  type CallContext,
  type Hang,
  hang,
  type LoggedLine,
  type SimulateBaseOptions,
  type SimulatedHandler,
  type SimulatedPhase,
  type SimulatedResult,
  type SimulateOptions,
  type Simulation,
  simulate,
  type TaskManifest,
} from "./library/simulate.ts";
