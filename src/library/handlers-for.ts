/**
 * A handler registry typed by its task kind's config union: one handler per declared member, checked
 * by the compiler. Leaving a member out, or keeping a handler for a member the union no longer has, is
 * a type error; the controller derives the list of supported members from the registry's keys, so no
 * list of members is ever written twice.
 *
 *   export const handlers: HandlersFor<Verification["spec"]["config"], Verification, Downloader> = {
 *     checksum: checksumHandler,
 *     restoreTest: restoreTestHandler,
 *   };
 */
import type { TaskHandler } from "../handlers/handler.ts";

/** The member names of a decoded config union (`ConfigOf<M>`), its `unsupported` variant aside. */
export type MemberOf<Config extends { readonly kind: string }> = Exclude<Config["kind"], "unsupported">;

/** Exactly one handler per member of `Config`. */
export type HandlersFor<Config extends { readonly kind: string }, Task, R = never> = {
  readonly [Member in MemberOf<Config>]: TaskHandler<Task, R>;
};
