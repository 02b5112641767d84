/**
 * The outcome vocabulary of the maintenance handler, in druid's style (docs/contract.md §5, §6): a
 * capitalised `description`, a lower-case error `message`, and the cause verbatim (the API's or etcd's
 * text). Codes shared with the snapshot handler keep druid's spelling and meaning.
 */
import { stops } from "../step-failure.ts";

export const ErrorCodes = {
  // Shared with the on-demand snapshot handler.
  getEtcd: "ERR_GET_ETCD",
  etcdNotReady: "ERR_ETCD_NOT_READY",
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

export { outcomeOf, StepFailure } from "../step-failure.ts";

/** A final failure, and a transient one (retried with backoff). */
export const { failed, retry } = stops<ErrorCode>();
