/**
 * Step 2 of docs/library.md: one handler per config member. `promiseHandler` takes plain (async)
 * functions, no Effect needed; each phase returns `completed`, `failed` (ends the task) or `retry`.
 * Only Execute is given here: Admit then admits and Cleanup has nothing to clean up.
 */
import { completed, failed, type HandlerRegistry, promiseHandler } from "opstask";
import type { Greeting } from "./greeting.ts";

export const handlers: HandlerRegistry<Greeting> = {
  hello: promiseHandler<Greeting>({
    execute: (task) => {
      const { config } = task.spec;
      return config.kind === "hello"
        ? completed(`Hello, ${config.name}!`)
        : failed("Not a hello task", { code: "ERR_WRONG_MEMBER", message: `got ${config.kind}` });
    },
  }),
  sum: promiseHandler<Greeting>({
    execute: async (task) => {
      const { config } = task.spec;
      if (config.kind !== "sum") {
        return failed("Not a sum task", { code: "ERR_WRONG_MEMBER", message: `got ${config.kind}` });
      }
      const total = config.numbers.reduce((sum, number) => sum + number, 0);
      return total === config.expected
        ? completed(`The numbers add up to ${total}`)
        : failed("Wrong total", {
            code: "ERR_SUM_MISMATCH",
            message: `sum is ${total}, not ${config.expected}`,
          });
    },
  }),
};
