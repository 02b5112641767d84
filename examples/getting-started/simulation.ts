/**
 * Step 3 of docs/library.md: the operator in simulation, no cluster needed. `simulate` runs the real
 * lifecycle against an in-memory apiserver with a fake clock. `node simulation.ts` prints what
 * happened as JSON; the tests check it.
 */
import { simulate } from "opstask/testing";
import { greetingKind } from "./greeting.ts";
import { handlers } from "./handlers.ts";

export const simulateGreetings = async () => {
  const sim = simulate({ kind: greetingKind, handlers });
  sim.create({ metadata: { name: "hi" }, spec: { config: { hello: { name: "Ada" } } } });
  sim.create({ metadata: { name: "bad-sum" }, spec: { config: { sum: { numbers: [1, 2], expected: 4 } } } });
  sim.create({ metadata: { name: "unknown" }, spec: { config: { shout: {} } } });
  sim.run();
  await sim.settle(); // the async sum handler answers in a later step
  const states = {
    hi: sim.state("hi"),
    "bad-sum": sim.state("bad-sum"),
    unknown: sim.state("unknown"),
  };
  const description = sim.status("hi")?.lastOperation?.description;
  sim.advance(600_000); // the default TTL: finished tasks are deleted
  const remaining = ["hi", "bad-sum", "unknown"].filter((name) => sim.exists(name));
  return { states, description, remaining };
};

if (import.meta.main) console.log(JSON.stringify(await simulateGreetings()));
