/**
 * Handler phases and their results: what a pass asks a handler for (`RunPhase`) and what comes back.
 * Part of the boundary between the machine and its drivers, so it lives beside the effects; the
 * machine imports it, never the other way round.
 */

declare const encodedResult: unique symbol;

/**
 * A task's result as JSON, already encoded by its kind's result schema and within its byte limit. Only
 * a kind's `succeeded` makes one (src/library/task-result.ts), so no unchecked value reaches status.
 */
export type EncodedResult = { readonly [encodedResult]: "EncodedResult" };

/** The handler phases of a task, in lifecycle order. */
export type Phase = "admit" | "execute" | "cleanup";

/** An error a handler (or the lifecycle itself) attaches to a result; rendered per docs/contract.md §6. */
export interface TaskError {
  readonly code: string;
  readonly message: string;
  readonly cause: string;
}

/**
 * The result of one handler phase call (docs/contract.md §4):
 * - `completed`: the phase succeeded; the lifecycle moves on;
 * - `failed`: retrying cannot help; Admit → Rejected, Execute → Failed, Cleanup → released with a warning;
 * - `retry`: try again later; with an error it backs off exponentially, without one it polls after
 *   `afterMs` (or the requeue interval).
 */
export type PhaseOutcome =
  | { readonly kind: "completed"; readonly description: string; readonly result?: EncodedResult }
  | { readonly kind: "failed"; readonly description: string; readonly error: TaskError }
  | {
      readonly kind: "retry";
      readonly description: string;
      readonly error?: TaskError;
      readonly afterMs?: number;
    };
