/** The on-demand snapshot handler's error codes (druid's, docs/contract.md §6) and its stop helpers. */
import { stops } from "../step-failure.ts";

/** druid's error codes for this task type (docs/contract.md §6). */
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
  /** opstask's: an externally managed member address that is no IP and no host name. */
  invalidMemberAddress: "ERR_INVALID_MEMBER_ADDRESS",
} as const;
export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

export { outcomeOf, StepFailure } from "../step-failure.ts";

/** A final failure, and a transient one (retried with backoff). */
export const { failed, retry } = stops<ErrorCode>();
