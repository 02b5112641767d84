/**
 * `promiseHandler`: a `TaskHandler` from plain functions, for handlers that do not want Effect. Each
 * phase returns a `PhaseOutcome` or a Promise of one and gets an `AbortSignal` that fires when the
 * lifecycle drops the call (the task was deleted while Admit or Execute ran, or the controller stops).
 *
 * A phase that throws or rejects is a bug, not a verdict: the runtime turns it into a `retry` with
 * ERR_HANDLER_DEFECT. Say `failed(...)` when retrying cannot help.
 */
import * as Effect from "effect/Effect";
import type { TaskHandler } from "../handlers/handler.ts";
import type { PhaseOutcome } from "../machine/types.ts";
import { completed } from "./outcome.ts";

export type PromisePhase<Task> = (task: Task, signal: AbortSignal) => PhaseOutcome | Promise<PhaseOutcome>;

export interface PromiseHandler<Task> {
  /** Preconditions only; must not change the world. Default: admit. */
  readonly admit?: PromisePhase<Task>;
  /** May run more than once (at-least-once): make it safe to repeat. */
  readonly execute: PromisePhase<Task>;
  /** Runs when the task is deleted (not for Rejected tasks); must be idempotent. Default: nothing to do. */
  readonly cleanup?: PromisePhase<Task>;
}

const fromPromise =
  <Task>(phase: PromisePhase<Task>) =>
  (task: Task): Effect.Effect<PhaseOutcome> =>
    Effect.suspend(() => {
      const abort = new AbortController();
      const result = phase(task, abort.signal);
      // A synchronous answer stays synchronous: the simulation then runs it in the same step.
      if (!(result instanceof Promise)) return Effect.succeed(result);
      return Effect.promise(() => result).pipe(Effect.onInterrupt(() => Effect.sync(() => abort.abort())));
    });

export const promiseHandler = <Task>(phases: PromiseHandler<Task>): TaskHandler<Task> => ({
  admit: fromPromise(phases.admit ?? (() => completed("Admitted"))),
  execute: fromPromise(phases.execute),
  cleanup: fromPromise(phases.cleanup ?? (() => completed("Nothing to clean up"))),
});
