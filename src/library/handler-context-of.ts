/**
 * `handlerContext`: a context for calling a handler phase directly, in a unit test of the handler
 * (`await Effect.runPromise(handler.execute(task, handlerContext({ attempt: 2 })))`). Nothing is
 * logged or recorded unless the test passes its own members; the object reader finds nothing.
 */
import { type HandlerContext, silentLogger } from "../handlers/handler-context.ts";

export const handlerContext = (overrides: Partial<HandlerContext> = {}): HandlerContext => ({
  phase: "execute",
  attempt: 1,
  log: silentLogger,
  objects: { get: () => Promise.resolve(undefined) },
  events: { record: () => undefined },
  signal: new AbortController().signal,
  ...overrides,
});
