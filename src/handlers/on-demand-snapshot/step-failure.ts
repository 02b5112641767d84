/**
 * How a step of the on-demand snapshot handler stops: a `failed` or `retry` outcome with druid's
 * description and error (contract §1.5, §1.6). Steps fail with this tagged value; the handler turns it
 * into its `PhaseOutcome`, so the handler's own Effect never fails.
 */
import { Data } from "effect";
import type { PhaseOutcome, TaskError } from "../../machine/types.ts";

/** druid's error codes for this task type (contract §1.6). */
export const ErrorCodes = {
  getEtcd: "ERR_GET_ETCD",
  backupNotEnabled: "ERR_BACKUP_NOT_ENABLED",
  etcdNotReady: "ERR_ETCD_NOT_READY",
  getStatefulSet: "ERR_GET_STATEFULSET",
  getCASecret: "ERR_GET_CA_SECRET",
  caDataKeyNotFound: "ERR_CA_DATA_KEY_NOT_FOUND",
  appendCACerts: "ERR_APPEND_CA_CERTS",
  createHttpRequest: "ERR_CREATE_HTTP_REQUEST",
  executeHttpRequest: "ERR_EXECUTE_HTTP_REQUEST",
  createSnapshot: "ERR_CREATE_SNAPSHOT",
  unsupportedTask: "ERR_UNSUPPORTED_TASK",
} as const;
export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

export class StepFailure extends Data.TaggedError("SnapshotStepFailure")<{
  /** `failed`: retrying cannot help (Admit → Rejected, Execute → Failed); `retry`: back off and retry. */
  readonly verdict: "failed" | "retry";
  readonly description: string;
  readonly error: TaskError;
}> {}

const stop =
  (verdict: StepFailure["verdict"]) =>
  (description: string, code: ErrorCode, message: string, cause: string): StepFailure =>
    new StepFailure({ verdict, description, error: { code, message, cause } });

/** A final failure. */
export const failed = stop("failed");
/** A transient failure, retried with backoff. */
export const retry = stop("retry");

export const outcomeOf = (failure: StepFailure): PhaseOutcome =>
  failure.verdict === "failed"
    ? { kind: "failed", description: failure.description, error: failure.error }
    : { kind: "retry", description: failure.description, error: failure.error };

export const completed = (description: string): PhaseOutcome => ({ kind: "completed", description });
