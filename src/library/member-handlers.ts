/**
 * `memberHandlers`: a registry whose handlers each get their own config member, typed (a `checksum`
 * handler sees `Extract<Config, { kind: "checksum" }>`, not the whole union). The result is a plain
 * `HandlerRegistry`; the compiler checks that there is exactly one handler per member.
 *
 *   export const handlers = memberHandlers((task: Verification) => task.spec.config, {
 *     checksum: promiseHandler({ execute: async (task, { config }) => verify(config.url, config.sha256) }),
 *     restoreTest: { admit, execute, cleanup },   // Effect phases: (task, context) => Effect
 *   });
 */
import type * as Effect from "effect/Effect";
import type { HandlerRegistry, TaskHandler, TaskPhase } from "../handlers/handler.ts";
import type { HandlerContext, MemberContext } from "../handlers/handler-context.ts";
import type { Phase, PhaseOutcome } from "../machine/types.ts";
import type { MemberOf } from "./handlers-for.ts";

/** One phase of a member's handler: the task and a context carrying the member's own config. */
export type MemberPhase<Task, Config, R = never> = TaskPhase<Task, R, MemberContext<Config>>;

/** A handler of one config member: its phases get the member's own config as `context.config`. */
export type MemberHandler<Task, Config, R = never> = TaskHandler<Task, R, MemberContext<Config>>;

/** Exactly one handler per member of `Config`, each typed by its own member. */
export type MemberHandlersFor<Config extends { readonly kind: string }, Task, R = never> = {
  readonly [Member in MemberOf<Config>]: MemberHandler<Task, Extract<Config, { readonly kind: Member }>, R>;
};

export const memberHandlers = <Task, Config extends { readonly kind: string }, R = never>(
  /** The task's config union, e.g. `(task) => task.spec.config`. */
  configOf: (task: Task) => Config,
  handlers: MemberHandlersFor<Config, Task, R>,
): HandlerRegistry<Task, R> => {
  const registry: Record<string, TaskHandler<Task, R>> = {};
  // Every member's handler accepts a context whose config is `never` (a context of any member).
  const entries: ReadonlyArray<[string, MemberHandler<Task, never, R>]> = Object.entries(handlers);
  for (const [member, handler] of entries) {
    const phase =
      (name: Phase) =>
      (task: Task, context: HandlerContext): Effect.Effect<PhaseOutcome, never, R> =>
        // The driver picks this handler by the task's member, so its config is this member's.
        handler[name](task, { ...context, config: configOf(task) as never });
    registry[member] = { admit: phase("admit"), execute: phase("execute"), cleanup: phase("cleanup") };
  }
  return registry;
};
