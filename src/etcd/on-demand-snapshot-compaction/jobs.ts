/**
 * Kubernetes Jobs as an Effect service, for handlers that run their work in a Job (the snapshot
 * compaction task). Three calls, each one API request: create, get and delete (background propagation,
 * so the Job's pods go too). Implementations: the apiserver (`jobs-kubernetes.ts`) and in memory
 * (`jobs-memory.ts`).
 *
 * Failures are the API's own `KubeError`s, so callers match on `reason`: a create whose name is taken
 * fails with `Conflict` (409 AlreadyExists), a get or delete of a missing Job with `NotFound`, and a
 * delete whose UID precondition does not hold with `Conflict`.
 *
 * Jobs are written in their wire form (typed with client-node's `V1Job`, a type only) and read back
 * reduced to what a handler decides on (`JobInfo`).
 */
import type { V1Job } from "@kubernetes/client-node";
import * as Context from "effect/Context";
import type * as Effect from "effect/Effect";
import type { KubeError } from "../../advanced.ts";

/** The Job to create, as the apiserver takes it (`metadata.name` and `metadata.namespace` set). */
export type JobManifest = V1Job;

/** The apiserver's resource name, as it appears in its messages (`jobs.batch "x" not found`). */
export const JobResource = "jobs.batch";

/** A condition of `status.conditions` (`Complete`, `Failed`, `SuccessCriteriaMet`, `FailureTarget`, …). */
export interface JobCondition {
  readonly type: string;
  /** `True`, `False` or `Unknown`. */
  readonly status: string;
  readonly reason?: string;
  readonly message?: string;
}

/** What a handler needs to know about an existing Job. */
export interface JobInfo {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly labels: Readonly<Record<string, string>>;
  /** `metadata.deletionTimestamp` is set: the Job is on its way out (finalizers still pending). */
  readonly deleting: boolean;
  readonly conditions: ReadonlyArray<JobCondition>;
  /** `status.active`, `status.succeeded`, `status.failed` (0 when absent). */
  readonly active: number;
  readonly succeeded: number;
  readonly failed: number;
}

/** A Job as returned by the apiserver (or stored in memory), reduced to `JobInfo`. */
export const jobInfoOf = (job: V1Job): JobInfo => ({
  namespace: job.metadata?.namespace ?? "",
  name: job.metadata?.name ?? "",
  uid: job.metadata?.uid ?? "",
  labels: { ...job.metadata?.labels },
  deleting: job.metadata?.deletionTimestamp !== undefined,
  conditions: (job.status?.conditions ?? []).map((condition) => ({
    type: condition.type,
    status: condition.status,
    ...(condition.reason === undefined ? {} : { reason: condition.reason }),
    ...(condition.message === undefined ? {} : { message: condition.message }),
  })),
  active: job.status?.active ?? 0,
  succeeded: job.status?.succeeded ?? 0,
  failed: job.status?.failed ?? 0,
});

/** The condition of `type` when its status is `True`. */
export const trueCondition = (job: JobInfo, type: string): JobCondition | undefined =>
  job.conditions.find((condition) => condition.type === type && condition.status === "True");

export interface DeleteJobOptions {
  /** Delete only the object with this UID (a `Conflict` when the name now holds another object). */
  readonly uid?: string;
}

export interface JobsShape {
  /** Creates the Job; `Conflict` when a Job of that name exists (in whatever state). */
  readonly create: (job: JobManifest) => Effect.Effect<JobInfo, KubeError>;
  readonly get: (namespace: string, name: string) => Effect.Effect<JobInfo, KubeError>;
  /**
   * Deletes the Job with `propagationPolicy: Background`: the Job goes at once (unless it carries
   * finalizers), its pods are removed by the garbage collector. `NotFound` when there is none.
   */
  readonly delete: (
    namespace: string,
    name: string,
    options?: DeleteJobOptions,
  ) => Effect.Effect<void, KubeError>;
}

export class Jobs extends Context.Service<Jobs, JobsShape>()("opstask/handlers/Jobs") {}
