/**
 * Constructors for `PhaseOutcome`, the one result type of every handler phase. A handler says what
 * happened; the lifecycle decides what it means (Admit `failed` → Rejected, Execute `failed` → Failed,
 * `retry` with an error → exponential backoff, `retry` without one → poll after `afterMs`).
 */
import type { PhaseOutcome, TaskError } from "../machine/types.ts";

/** The outcome of each kind, so a `failed(...)` or `retry(...)` fits where a step's stop is asked for. */
export type CompletedOutcome = Extract<PhaseOutcome, { readonly kind: "completed" }>;
export type FailedOutcome = Extract<PhaseOutcome, { readonly kind: "failed" }>;
export type RetryOutcome = Extract<PhaseOutcome, { readonly kind: "retry" }>;

/** The phase succeeded; `description` becomes `status.lastOperation.description`. */
export const completed = (description: string): CompletedOutcome => ({ kind: "completed", description });

/**
 * Retrying cannot help. `error.code` is the stable, greppable part (`ERR_CHECKSUM_MISMATCH`); `cause`
 * defaults to the message.
 */
export const failed = (
  description: string,
  error: { readonly code: string; readonly message: string; readonly cause?: string },
): FailedOutcome => ({ kind: "failed", description, error: taskError(error) });

/**
 * Try again later. With an `error` the task backs off exponentially and the error is recorded in
 * `status.lastErrors`; without one it is polled after `afterMs` (default: the requeue interval), which
 * is how a handler waits for something slow without holding anything.
 */
export const retry = (
  description: string,
  options: {
    readonly error?: { readonly code: string; readonly message: string; readonly cause?: string };
    readonly afterMs?: number;
  } = {},
): RetryOutcome => ({
  kind: "retry",
  description,
  ...(options.error === undefined ? {} : { error: taskError(options.error) }),
  ...(options.afterMs === undefined ? {} : { afterMs: options.afterMs }),
});

const taskError = (error: {
  readonly code: string;
  readonly message: string;
  readonly cause?: string;
}): TaskError => ({
  code: error.code,
  message: error.message,
  cause: error.cause ?? error.message,
});
