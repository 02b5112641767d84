/**
 * `promiseHandler`: a `TaskHandler` from plain functions returning a `PhaseOutcome` or a Promise of one,
 * each given the call's `HandlerContext` (its `signal` fires when the lifecycle drops the call). A throw
 * or rejection is a bug, not a verdict: it is logged and the phase tried again, and the
 * `handlerDefectLimit`-th (default 5) fails the task with ERR_HANDLER_DEFECT. The exception is
 * `ObjectsUnavailable` from `context.objects.get`: a `retry` with ERR_API_UNAVAILABLE, however long the
 * outage. Say `retry(...)` for what is worth another try, `failed(...)` when retrying cannot help.
 */
import * as Effect from "effect/Effect";
import type { TaskHandler } from "../handlers/handler.ts";
import type { HandlerContext } from "../handlers/handler-context.ts";
import { ApiUnavailableCode, ObjectsUnavailable } from "../handlers/objects-unavailable.ts";
import type { PhaseOutcome } from "../machine/types.ts";
import { completed, retry } from "./outcome.ts";

export type PromisePhase<Task, Context extends HandlerContext = HandlerContext> = (
  task: Task,
  context: Context,
) => PhaseOutcome | Promise<PhaseOutcome>;

export interface PromiseHandler<Task, Context extends HandlerContext = HandlerContext> {
  /** Preconditions only; must not change the world. Default: admit. */
  readonly admit?: PromisePhase<Task, Context>;
  /** May run more than once (at-least-once): make it safe to repeat. */
  readonly execute: PromisePhase<Task, Context>;
  /** Runs when the task is deleted (not for Rejected tasks); must be idempotent. Default: nothing to do. */
  readonly cleanup?: PromisePhase<Task, Context>;
}

/** An API outage met through `context.objects` is a retry with backoff; anything else stays a defect. */
const outageAsRetry = (error: unknown): PhaseOutcome => {
  if (!(error instanceof ObjectsUnavailable)) throw error;
  return retry("Waiting for the API server", {
    error: { code: ApiUnavailableCode, message: error.message },
  });
};

const fromPromise =
  <Task, Context extends HandlerContext>(phase: PromisePhase<Task, Context>) =>
  (task: Task, context: Context): Effect.Effect<PhaseOutcome> =>
    Effect.suspend(() => {
      // Aborted by the driver (task deleted, controller stopped) or by this fiber's interruption.
      const abort = new AbortController();
      const signal = AbortSignal.any([context.signal, abort.signal]);
      const result = phase(task, { ...context, signal });
      // A synchronous answer stays synchronous: the simulation then runs it in the same step.
      if (!(result instanceof Promise)) return Effect.succeed(result);
      return Effect.promise(() => result.catch(outageAsRetry)).pipe(
        Effect.onInterrupt(() => Effect.sync(() => abort.abort())),
      );
    });

/**
 * `Context` is inferred where the handler is expected with a typed config (`memberHandlers`); write
 * `promiseHandler<Task>` for a plain registry.
 */
export const promiseHandler = <Task, Context extends HandlerContext = HandlerContext>(
  phases: PromiseHandler<Task, Context>,
): TaskHandler<Task, never, Context> => ({
  admit: fromPromise(phases.admit ?? (() => completed("Admitted"))),
  execute: fromPromise(phases.execute),
  cleanup: fromPromise(phases.cleanup ?? (() => completed("Nothing to clean up"))),
});
