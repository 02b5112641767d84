/**
 * A handler that throws or dies has a bug, not a verdict on the task: the runtime turns the defect into
 * a transient error, so the task backs off and retries (and the optional phase deadline bounds it)
 * instead of the controller crashing or the task being wedged.
 */
import type { PhaseOutcome } from "../machine/types.ts";

export const defectOutcome = (cause: string): PhaseOutcome => ({
  kind: "retry",
  description: "Handler failed unexpectedly",
  error: { code: "ERR_HANDLER_DEFECT", message: "handler failed unexpectedly", cause },
});
