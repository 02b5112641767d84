/**
 * How a handler step stops: a `failed` or `retry` outcome with a description and an error in druid's
 * style (docs/contract.md §5, §6). Steps fail with this one tagged value; each handler turns it into its
 * `PhaseOutcome` at the end, so a handler's own Effect never fails. Each task type keeps its error
 * codes beside its steps and builds its `failed`/`retry` helpers with `stops`.
 */
import * as Data from "effect/Data";
import type { PhaseOutcome, TaskError } from "../machine/types.ts";

export class StepFailure extends Data.TaggedError("HandlerStepFailure")<{
  /** `failed`: retrying cannot help (Admit → Rejected, Execute → Failed); `retry`: back off and retry. */
  readonly verdict: "failed" | "retry";
  readonly description: string;
  readonly error: TaskError;
}> {}

/** `failed(description, code, message, cause)` and `retry(…)`, typed to a task type's codes. */
export const stops = <Code extends string>() => {
  const stop =
    (verdict: StepFailure["verdict"]) =>
    (description: string, code: Code, message: string, cause: string): StepFailure =>
      new StepFailure({ verdict, description, error: { code, message, cause } });
  return { failed: stop("failed"), retry: stop("retry") };
};

export const outcomeOf = (failure: StepFailure): PhaseOutcome =>
  failure.verdict === "failed"
    ? { kind: "failed", description: failure.description, error: failure.error }
    : { kind: "retry", description: failure.description, error: failure.error };

export const completed = (description: string): PhaseOutcome => ({ kind: "completed", description });
