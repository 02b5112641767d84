/**
 * A task handler: three phases, each returning one small result (docs/contract.md §4). Handlers never fail
 * their Effect: what went wrong is an outcome (`failed` ends the task, `retry` backs off). A defect
 * (a throw) is turned into a `retry` by the runtime (src/reconcile/handler-defect.ts).
 *
 * Handlers get what they need (object reads, HTTP, clock, logging) as Effect services in `R`, so one
 * handler runs under the Kubernetes runtime and under the memory interpreter alike.
 *
 * Contract for implementers:
 * - Admit runs while the task is Pending, at most once per successful admission; it checks
 *   preconditions and must not change the world.
 * - Execute may run more than once (after `retry`, or after a crash before its result was persisted:
 *   at-least-once), so it must be safe to repeat; it may run for a long time (it never blocks other tasks).
 * - Cleanup runs once the task is being deleted (after its TTL or on a user's delete) and must be
 *   idempotent; it is skipped for Rejected tasks.
 */
import type * as Effect from "effect/Effect";
import type { PhaseOutcome } from "../machine/types.ts";
import type { HandlerContext } from "./handler-context.ts";

/**
 * One phase: the task and its call's context (attempt, logger, object reader, Events, client, abort
 * signal; handler-context.ts). A phase that needs none of it may take the task alone.
 */
export type TaskPhase<Task, R = never, Context extends HandlerContext = HandlerContext> = (
  task: Task,
  context: Context,
) => Effect.Effect<PhaseOutcome, never, R>;

/** `Context` is the plain `HandlerContext`, or one with the member's typed config (`memberHandlers`). */
export interface TaskHandler<Task, R = never, Context extends HandlerContext = HandlerContext> {
  readonly admit: TaskPhase<Task, R, Context>;
  readonly execute: TaskPhase<Task, R, Context>;
  readonly cleanup: TaskPhase<Task, R, Context>;
}

/** Handlers by config member (e.g. `onDemandSnapshot`); a member without one is Rejected (`ERR_UNSUPPORTED_TASK`). */
export type HandlerRegistry<Task, R = never> = Readonly<Record<string, TaskHandler<Task, R>>>;

/** The members a registry supports, sorted (what an `ERR_UNSUPPORTED_TASK` message lists): its keys, never a list of their own. */
export const supportedMembers = (registry: object): string[] => Object.keys(registry).sort();
