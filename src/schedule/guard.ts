/**
 * A schedule's guard: a predicate a task kind's author supplies (by name, in `spec.guard.name`), asked
 * before a run is created. A refusal is recorded as a skipped run (`GuardRefused`, with the reason), so
 * "why did no defragmentation run last night?" is answered by `opstask schedule describe`.
 */
import type { RunObject } from "./run-object.ts";
import type { TaskSchedule } from "./schedule-spec.ts";

export type GuardVerdict = { readonly allow: true } | { readonly allow: false; readonly reason: string };

export interface GuardInput {
  readonly schedule: TaskSchedule;
  /** The run that would be created. */
  readonly run: RunObject;
  /** `spec.guard.parameters`. */
  readonly parameters: Readonly<Record<string, string>>;
  readonly signal: AbortSignal;
}

/**
 * Answers whether the run should be created. A guard that cannot tell (its inputs unreachable) should
 * refuse with the reason: a skipped run is visible, a run that should not have happened may not be.
 */
export type ScheduleGuard = (input: GuardInput) => Promise<GuardVerdict>;
