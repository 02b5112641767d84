/** The error codes of resumable steps (docs/library.md, "Resumable steps"). */
export const StepErrorCodes = {
  /** A step's wait outlived its deadline; the message names the step. */
  deadlineExceeded: "ERR_STEP_DEADLINE_EXCEEDED",
  /** The task was created carrying progress annotations: only the controller records progress. */
  forgedProgress: "ERR_FORGED_PROGRESS",
  /** The controller's record names a step the handler does not have. */
  progressUnknown: "ERR_STEP_PROGRESS_UNKNOWN",
  /** Reading or recording the progress failed (retried). */
  progressWrite: "ERR_STEP_PROGRESS_WRITE",
  /** The driver gives handlers no record of their own (no `progressNamespace`, or a hand-made context). */
  unsupported: "ERR_STEPS_UNSUPPORTED",
} as const;
