/** The Chore operator's handlers: one per config member, in a registry the compiler checks against the union. */
import * as Effect from "effect/Effect";
import { completed, failed, type HandlersFor, type TaskHandler } from "../../../src/index.ts";
import type { Chore } from "./chore-kind.ts";

const done = (description: string) => () => Effect.succeed(completed(description));

export const sweepHandler: TaskHandler<Chore> = {
  admit: done("Room found"),
  execute: done("Swept"),
  cleanup: done("Nothing to clean"),
};

// new member (2/3): its handler.
export const pingHandler: TaskHandler<Chore> = {
  admit: (task) =>
    Effect.succeed(
      task.spec.config.kind === "ping" && task.spec.config.target !== ""
        ? completed("Target named")
        : failed("No target", {
            code: "ERR_NO_TARGET",
            message: "no target",
            cause: "spec.config.ping.target is empty",
          }),
    ),
  execute: (task) =>
    Effect.succeed(completed(`Pinged ${task.spec.config.kind === "ping" ? task.spec.config.target : "?"}`)),
  cleanup: done("Nothing to clean"),
};

export const choreHandlers: HandlersFor<Chore["spec"]["config"], Chore> = {
  sweep: sweepHandler,
  // new member (3/3): its registry entry.
  ping: pingHandler,
};
