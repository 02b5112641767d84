/**
 * Runs `program` with a fresh fault counter (`KubeFaults`) and a logger that keeps the WARN messages,
 * so a test can check what was counted and what was said.
 */
import { Effect, Logger } from "effect";
import { FaultCounter, KubeFaults } from "../../src/interpreters/kubernetes/fault-counter.ts";

export const observed = <A, E, R>(
  program: (faults: FaultCounter, warnings: string[]) => Effect.Effect<A, E, R>,
) => {
  const faults = new FaultCounter();
  const warnings: string[] = [];
  const keep = Logger.make((options: Logger.Options<unknown>) => {
    if (options.logLevel === "Warn") warnings.push(String(options.message));
  });
  return program(faults, warnings).pipe(
    Effect.provideService(KubeFaults, faults),
    Effect.provide(Logger.layer([keep])),
  );
};
