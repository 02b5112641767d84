/**
 * What the task machine works on: its context (rebuilt from the pass's input every pass) and the
 * events a pass feeds it (the start, handler results, the answer to its DELETE).
 */
import type { TaskStatus } from "../api/status.ts";
import type { EncodedResult, PassInput, Phase, PhaseOutcome, TaskError } from "./types.ts";

/** Bumped when the meaning of persisted fields changes; objects stamped by a newer machine are left alone. */
export const machineVersion = 1;

export interface TaskContext {
  readonly input: PassInput;
  /** The status as persisted (the object's, then each successful write's). */
  readonly persisted: TaskStatus;
  /** The status as this pass wants it; `flushStatus` writes the difference. */
  readonly status: TaskStatus;
  readonly ownsFinalizer: boolean;
  /** When deletion was requested (the object's deletionTimestamp, or our own DELETE in this pass). */
  readonly deletingSince: number | undefined;
  /** The pass used `input.known` instead of calling the handler (so that result is now being persisted). */
  readonly replayed: boolean;
  /** The time of the latest event: a handler result can arrive long after the pass started. */
  readonly now: number;
  /** The task's cancel: from the input, or one that arrived while a handler call ran (`PhaseEvent.cancel`). */
  readonly cancel: { readonly by: string } | undefined;
}

/** Starts a pass: the machine re-reads everything from its context (set from the pass's input). */
export type ReconcileEvent = { readonly type: "reconcile" };

/** The answer to the `deleteTask` effect (the TTL's DELETE): done, or failed with the API's error text. */
export type DeleteEvent =
  | { readonly type: "delete.done"; readonly now: number }
  | { readonly type: "delete.failed"; readonly now: number; readonly cause: string };

/**
 * A handler result; `now` is when it arrived (the times written with it are this one); `cancel`: the
 * task was cancelled while the call ran, so the pass must not call a handler again.
 */
export type PhaseEvent = { readonly cancel?: { readonly by: string } } & (
  | {
      readonly type: "phase.completed";
      readonly phase: Phase;
      readonly now: number;
      readonly description: string;
      readonly result?: EncodedResult;
    }
  | {
      readonly type: "phase.failed";
      readonly phase: Phase;
      readonly now: number;
      readonly description: string;
      readonly error: TaskError;
    }
  | {
      readonly type: "phase.retry";
      readonly phase: Phase;
      readonly now: number;
      readonly description: string;
      readonly error?: TaskError;
      readonly afterMs?: number;
    }
);

export const phaseEvent = (
  phase: Phase,
  outcome: PhaseOutcome,
  now: number,
  cancel?: { readonly by: string },
): PhaseEvent => ({ ...resultEvent(phase, outcome, now), ...(cancel === undefined ? {} : { cancel }) });

const resultEvent = (phase: Phase, outcome: PhaseOutcome, now: number): PhaseEvent => {
  switch (outcome.kind) {
    case "completed":
      return {
        type: "phase.completed",
        phase,
        now,
        description: outcome.description,
        ...(outcome.result === undefined ? {} : { result: outcome.result }),
      };
    case "failed":
      return { type: "phase.failed", phase, now, description: outcome.description, error: outcome.error };
    case "retry":
      return {
        type: "phase.retry",
        phase,
        now,
        description: outcome.description,
        ...(outcome.error === undefined ? {} : { error: outcome.error }),
        ...(outcome.afterMs === undefined ? {} : { afterMs: outcome.afterMs }),
      };
  }
};

export const contextOf = (input: PassInput): TaskContext => ({
  input,
  persisted: input.task.status,
  status: input.task.status,
  ownsFinalizer: input.task.finalizers.includes(input.config.finalizer),
  deletingSince: input.task.deletingSince,
  replayed: false,
  now: input.now,
  cancel: input.task.cancel,
});
