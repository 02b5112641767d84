/** The error codes of resumable steps (docs/library.md, "Resumable steps"). */
export const StepErrorCodes = {
  /** A step's wait outlived its deadline; the message names the step. */
  deadlineExceeded: "ERR_STEP_DEADLINE_EXCEEDED",
  /** A progress annotation names a step the handler does not have. */
  progressUnknown: "ERR_STEP_PROGRESS_UNKNOWN",
  /** Recording progress on the task failed (retried). */
  progressWrite: "ERR_STEP_PROGRESS_WRITE",
  /** The driver gives handlers no way to annotate their task (a hand-made context). */
  unsupported: "ERR_STEPS_UNSUPPORTED",
} as const;
