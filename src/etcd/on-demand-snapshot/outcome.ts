/**
 * What the backup-restore server's answer means for the task (docs/contract.md §5, §9, §4): only 200
 * is success; a delta snapshot whose body is exactly `null` was skipped; transport errors, timeouts and
 * body-read errors are transient.
 */

import { completed, type PhaseOutcome } from "../../index.ts";
import type { SnapshotType } from "../api/config/on-demand-snapshot.ts";
import type { HttpError } from "../services.ts";
import { ErrorCodes, failed, retry, type StepFailure } from "./step-failure.ts";

export const SnapshotTexts = {
  created: "Snapshot created successfully",
  deltaSkipped: "Delta snapshot was skipped by backup-restore server",
  createFailed: "Failed to create snapshot",
  createRequestFailed: "Failed to create HTTP request",
  executeRequestFailed: "Failed to execute HTTP request",
  readBodyFailed: "Failed to read response body",
} as const;

/** The body with which backup-restore reports that there was nothing to put in a delta snapshot. */
export const SkippedDeltaBody = "null";

/** The request could not be sent, or no response arrived in time. */
export const requestFailure = (error: HttpError): StepFailure =>
  error.reason === "InvalidRequest"
    ? retry(
        SnapshotTexts.createRequestFailed,
        ErrorCodes.createHttpRequest,
        "failed to create HTTP request",
        error.message,
      )
    : retry(
        SnapshotTexts.executeRequestFailed,
        ErrorCodes.executeHttpRequest,
        "failed to execute HTTP request",
        error.message,
      );

/** Any status but 200 (201, 202 and 204 included) is a final failure. */
export const statusFailure = (status: number): StepFailure =>
  failed(
    SnapshotTexts.createFailed,
    ErrorCodes.createSnapshot,
    "failed to create snapshot",
    `failed to create snapshot, status code: ${status}`,
  );

/** Reading a delta snapshot's body failed (druid reuses `ERR_CREATE_SNAPSHOT` for this transient case). */
export const bodyReadFailure = (error: HttpError): StepFailure =>
  retry(
    SnapshotTexts.readBodyFailed,
    ErrorCodes.createSnapshot,
    "failed to read response body",
    error.message,
  );

/** A 200 answer: a full snapshot's body is never read; a delta's is compared verbatim (no trimming). */
export const successOutcome = (type: SnapshotType, body: string | undefined): PhaseOutcome =>
  type === "delta" && body === SkippedDeltaBody
    ? completed(SnapshotTexts.deltaSkipped)
    : completed(SnapshotTexts.created);
