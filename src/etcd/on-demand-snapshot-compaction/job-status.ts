/**
 * What a compaction Job's status means for the task: its terminal conditions decide (`Complete` or
 * `Failed` with status True, set by the Job controller once the pods are gone); anything else is still
 * running and is looked at again after the poll interval.
 */

import { completed, failed, type PhaseOutcome, retry } from "../../index.ts";
import { type JobInfo, trueCondition } from "./jobs.ts";
import { ErrorCodes } from "./step-failure.ts";

export const JobTexts = {
  running: (name: string) => `Compaction job ${name} is running`,
  succeeded: (name: string) => `Snapshot compaction job ${name} succeeded`,
  failed: (name: string) => `Snapshot compaction job ${name} failed`,
  deleting: (name: string) => `Compaction job ${name} is being deleted; a new one will be created`,
  earlierDeleting: (name: string) => `Waiting for job ${name} of an earlier task to be deleted`,
} as const;

/** `<reason>: <message>` of a condition, with whichever parts it has. */
const conditionText = (reason: string | undefined, message: string | undefined): string =>
  [reason, message].filter((part) => part !== undefined && part !== "").join(": ") ||
  "the job failed without a reason";

export const jobOutcome = (job: JobInfo, pollIntervalMs: number): PhaseOutcome => {
  if (trueCondition(job, "Complete") !== undefined) {
    return completed(JobTexts.succeeded(job.name));
  }
  const failure = trueCondition(job, "Failed");
  if (failure !== undefined) {
    return failed(JobTexts.failed(job.name), {
      code: ErrorCodes.jobFailed,
      message: "snapshot compaction job failed",
      cause: conditionText(failure.reason, failure.message),
    });
  }
  return retry(job.deleting ? JobTexts.deleting(job.name) : JobTexts.running(job.name), {
    afterMs: pollIntervalMs,
  });
};
