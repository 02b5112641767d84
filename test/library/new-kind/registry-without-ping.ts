/**
 * Type-checking fixture: a registry that leaves out the `ping` member does not compile. `tsc` checks
 * this file (tsconfig includes test/); if the error ever disappeared, the `@ts-expect-error` line
 * would itself be an error ("Unused '@ts-expect-error' directive") and type-checking would fail.
 */
import type { HandlersFor } from "../../../src/index.ts";
import { sweepHandler } from "./chore-handlers.ts";
import type { Chore } from "./chore-kind.ts";

// @ts-expect-error -- property 'ping' is missing: every member of the config union needs a handler.
export const incomplete: HandlersFor<Chore["spec"]["config"], Chore> = {
  sweep: sweepHandler,
};
