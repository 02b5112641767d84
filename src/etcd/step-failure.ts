/**
 * How a handler step stops: a `failed` or `retry` with a description and an error in druid's style
 * (docs/contract.md §5, §6). Steps fail with this one tagged value so that a step's Effect says in its
 * type that it can stop; each handler turns it into its outcome at the end with `outcomeOf`, through
 * the library's own `failed`/`retry`, so a handler's Effect never fails. Each task type keeps its error
 * codes beside its steps and builds its `failed`/`retry` stops with `stops`.
 */
import * as Data from "effect/Data";
import type { TaskError } from "../advanced.ts";
import { failed, type PhaseOutcome, retry } from "../index.ts";

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

/** The handler's outcome for a step that stopped. */
export const outcomeOf = (failure: StepFailure): PhaseOutcome =>
  failure.verdict === "failed"
    ? failed(failure.description, failure.error)
    : retry(failure.description, { error: failure.error });
