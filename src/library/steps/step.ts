/**
 * One step of a resumable task (steps-handler.ts): a name, an idempotent `run`, an optional wait
 * (`until`, polled, with its own deadline) and an optional `undo`.
 *
 * The step author's contract: `run` may run more than once. The framework records a step's completion
 * on the task after `run` (and its wait) succeeded; a crash, a lost write or a retry between the two
 * runs it again, so `run` must reach the same world when repeated ("scale to 0", not "scale down by
 * 3"; "delete if present", not "delete or fail"). A step whose completion was recorded never runs
 * again for that task. `undo` has the same contract.
 */
import * as Effect from "effect/Effect";
import type { HandlerContext } from "../../handlers/handler-context.ts";
import { ApiUnavailableCode, ObjectsUnavailable } from "../../handlers/objects-unavailable.ts";
import type { PhaseOutcome } from "../../machine/types.ts";

/** How a step stops the task for now: `failed(...)` ends it, `retry(...)` calls the step again later. */
export type StepStop = Extract<PhaseOutcome, { readonly kind: "failed" | "retry" }>;

/** `undefined` (or `completed(...)`): done. `failed(...)` / `retry(...)`: not done (the description is prefixed with the step). */
export type StepAnswer = PhaseOutcome | undefined;

export interface StepWait<Task, R = never, Context extends HandlerContext = HandlerContext> {
  /** True once the world is where the step wants it; asked after `run`, every `pollMs`, until true. */
  readonly check: (task: Task, context: Context) => Effect.Effect<boolean | StepStop, never, R>;
  /**
   * How long the wait may take, counted from the end of `run` (recorded on the task, so a restart
   * does not restart the clock). Past it the task fails with ERR_STEP_DEADLINE_EXCEEDED naming the
   * step. Absent: the step waits until the task is deleted.
   */
  readonly deadlineMs?: number | ((task: Task, context: Context) => number);
  /** Between checks (default 5 s; never past the deadline). */
  readonly pollMs?: number;
  /** The description while waiting (default `waiting`): `Step 5/11 WaitScaleDown: <waiting>`. */
  readonly waiting?: string;
}

export interface TaskStep<Task, R = never, Context extends HandlerContext = HandlerContext> {
  /** Unique within the handler, and stable: it is what the task records (CamelCase, `ScaleDown`). */
  readonly name: string;
  /** The change; idempotent (see above). Absent for a step that only waits. */
  readonly run?: (task: Task, context: Context) => Effect.Effect<StepAnswer, never, R>;
  /** What the step did, for the description once it completed (`Step 4/13 ScaleDown: <done>`; default `done`). */
  readonly done?: string;
  readonly until?: StepWait<Task, R, Context>;
  /** Reverts `run` when the task failed (run in reverse order during Cleanup); idempotent too. */
  readonly undo?: (task: Task, context: Context) => Effect.Effect<StepAnswer, never, R>;
}

/** What a plain step function answers: nothing (done), or a `StepStop`. */
// biome-ignore lint/suspicious/noConfusingVoidType: lets `async (task) => { await x(task); }` be a step.
export type PromiseStepAnswer = PhaseOutcome | undefined | void;

/** A step written with plain (async) functions; see `promiseStep`. */
export interface PromiseStep<Task, Context extends HandlerContext = HandlerContext> {
  readonly name: string;
  readonly done?: string;
  /** Answers nothing (`async () => { … }`) when done, or a `StepStop`. */
  readonly run?: (task: Task, context: Context) => PromiseStepAnswer | Promise<PromiseStepAnswer>;
  readonly until?: Omit<StepWait<Task, never, Context>, "check"> & {
    readonly check: (task: Task, context: Context) => boolean | StepStop | Promise<boolean | StepStop>;
  };
  readonly undo?: (task: Task, context: Context) => PromiseStepAnswer | Promise<PromiseStepAnswer>;
}

/** An API outage met through `context.objects` or `context.ownTask` is a retry; anything else a defect. */
const outageAsRetry = (error: unknown): StepStop => {
  if (!(error instanceof ObjectsUnavailable)) throw error;
  return {
    kind: "retry",
    description: "Waiting for the API server",
    error: { code: ApiUnavailableCode, message: error.message, cause: error.message },
  };
};

const lift =
  <Task, Context extends HandlerContext, A>(fn: (task: Task, context: Context) => A | Promise<A>) =>
  (task: Task, context: Context): Effect.Effect<A | StepStop> =>
    Effect.suspend(() => {
      const result = fn(task, context);
      return result instanceof Promise
        ? Effect.promise(() => result.catch(outageAsRetry))
        : Effect.succeed(result);
    });

/** `void` is `undefined` at run time; the type says so. */
const answered =
  <Task, Context extends HandlerContext>(
    fn: (task: Task, context: Context) => Effect.Effect<PromiseStepAnswer | StepStop>,
  ) =>
  (task: Task, context: Context): Effect.Effect<StepAnswer> =>
    Effect.map(fn(task, context), (answer) => (answer === undefined ? undefined : (answer as PhaseOutcome)));

/**
 * A `TaskStep` from plain functions (no Effect). A function that throws is a handler defect (logged,
 * retried, the phase's Nth defect ends it), as in `promiseHandler`.
 */
export const promiseStep = <Task, Context extends HandlerContext = HandlerContext>(
  step: PromiseStep<Task, Context>,
): TaskStep<Task, never, Context> => ({
  name: step.name,
  ...(step.done === undefined ? {} : { done: step.done }),
  ...(step.run === undefined ? {} : { run: answered(lift(step.run)) }),
  ...(step.undo === undefined ? {} : { undo: answered(lift(step.undo)) }),
  ...(step.until === undefined ? {} : { until: { ...step.until, check: lift(step.until.check) } }),
});
