/**
 * Step 2 of docs/library.md: one handler per config member. `memberHandlers` gives each handler its
 * own member's config, typed (`config.name` for hello, `config.numbers` for sum), and the compiler
 * checks there is one per member. `promiseHandler` takes plain (async) functions, no Effect needed;
 * each phase returns `completed`, `failed` (ends the task) or `retry`, and gets the call's context
 * (`config`, `attempt`, `log`, `objects`, `events`, `kube`, `signal`). Only Execute is given here:
 * Admit then admits and Cleanup has nothing to clean up.
 */
import { completed, failed, memberHandlers, promiseHandler } from "opstask";
import type { Greeting } from "./greeting.ts";

export const handlers = memberHandlers((task: Greeting) => task.spec.config, {
  hello: promiseHandler({
    execute: (_task, { config, log }) => {
      log.info("greeting", { name: config.name });
      return completed(`Hello, ${config.name}!`);
    },
  }),
  sum: promiseHandler({
    execute: async (_task, { config, events }) => {
      const total = config.numbers.reduce((sum, number) => sum + number, 0);
      if (total === config.expected) return completed(`The numbers add up to ${total}`);
      events.record("Warning", "SumMismatch", `${config.numbers.join(" + ")} is ${total}`);
      return failed("Wrong total", {
        code: "ERR_SUM_MISMATCH",
        message: `sum is ${total}, not ${config.expected}`,
      });
    },
  }),
});
