/**
 * The error codes of the snapshot compaction task and its stop helpers. Steps fail with the flagship's
 * one `StepFailure` (../step-failure.ts); the codes shared with the snapshot handler (Etcd lookup,
 * backup not enabled) are its values.
 */

import { ErrorCodes as SnapshotErrorCodes } from "../on-demand-snapshot/step-failure.ts";
import { StepFailure, stops } from "../step-failure.ts";

export { StepFailure };

export const ErrorCodes = {
  getEtcd: SnapshotErrorCodes.getEtcd,
  backupNotEnabled: SnapshotErrorCodes.backupNotEnabled,
  /** `Etcd.spec.backup.store.provider` names no provider etcd-backup-restore knows. */
  unsupportedStoreProvider: "ERR_UNSUPPORTED_STORE_PROVIDER",
  /** The Local provider's store secret (it holds the host path) could not be read. */
  getBackupSecret: "ERR_GET_BACKUP_SECRET",
  /** The task names an image the controller does not allow (`spec.config.onDemandSnapshotCompaction.image`). */
  imageNotAllowed: "ERR_COMPACTION_IMAGE_NOT_ALLOWED",
  createJob: "ERR_CREATE_JOB",
  getJob: "ERR_GET_JOB",
  deleteJob: "ERR_DELETE_JOB",
  /** The Job ended with its `Failed` condition (backoff limit, deadline, pod failure policy). */
  jobFailed: "ERR_COMPACTION_JOB_FAILED",
} as const;
export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

/** A final failure (Admit → Rejected, Execute → Failed), and a transient one (retried with backoff). */
export const { failed, retry } = stops<ErrorCode>();
