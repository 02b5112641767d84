/**
 * The outcome vocabulary of the maintenance handler, in druid's style (contract §1.5, §1.6): a
 * capitalised `description`, a lower-case error `message`, and the cause verbatim (the API's or etcd's
 * text). Codes shared with the snapshot handler keep druid's spelling and meaning.
 */
import { Data } from "effect";
import type { PhaseOutcome, TaskError } from "../../machine/types.ts";

export const ErrorCodes = {
  // Shared with the on-demand snapshot handler.
  getEtcd: "ERR_GET_ETCD",
  etcdNotReady: "ERR_ETCD_NOT_READY",
  unsupportedTask: "ERR_UNSUPPORTED_TASK",
  getCASecret: "ERR_GET_CA_SECRET",
  caDataKeyNotFound: "ERR_CA_DATA_KEY_NOT_FOUND",
  appendCACerts: "ERR_APPEND_CA_CERTS",
  createHttpRequest: "ERR_CREATE_HTTP_REQUEST",
  // Maintenance only.
  getClientTLSSecret: "ERR_GET_CLIENT_TLS_SECRET",
  etcdUnreachable: "ERR_ETCD_UNREACHABLE",
  etcdStatus: "ERR_ETCD_STATUS",
  memberList: "ERR_MEMBER_LIST",
  compaction: "ERR_COMPACTION",
  defragmentation: "ERR_DEFRAGMENTATION",
} as const;
export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

export class StepFailure extends Data.TaggedError("MaintenanceStepFailure")<{
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
