/**
 * Issue 27 point 8: `sim.create` takes the kind's spec as its schema writes it, so a test's misspelt
 * or missing spec field is a compile error (`npm run typecheck` checks the @ts-expect-error lines);
 * `createUnchecked` stores what the schema rejects, to test the controller with it.
 */
import * as Schema from "effect/Schema";
import { describe, expect, expectTypeOf, it } from "vitest";
import { withDefault } from "../../src/crd.ts";
import {
  completed,
  configMember,
  configUnion,
  defineTaskKind,
  ObjectMeta,
  TaskStatusSchema,
} from "../../src/index.ts";
import { type Simulation, simulate, type TaskManifest } from "../../src/testing.ts";

const GreetingSpec = Schema.Struct({
  ttlSecondsAfterFinished: Schema.Number.pipe(withDefault(600)),
  config: configUnion({ hello: Schema.Struct({ name: Schema.String }) }),
});
const GreetingSchema = Schema.Struct({
  metadata: ObjectMeta,
  spec: GreetingSpec,
  status: Schema.optionalKey(TaskStatusSchema),
});
const greetingKind = defineTaskKind({
  group: "tests.opstask.dev",
  version: "v1",
  kind: "Greeting",
  plural: "greetings",
  finalizer: "tests.opstask.dev/greeting",
  schema: GreetingSchema,
  ttlSeconds: (task) => task.spec.ttlSecondsAfterFinished,
  member: (task) => configMember(task.spec.config),
  status: (task) => task.status,
});
type Greeting = typeof GreetingSchema.Type;

const greet = () =>
  simulate({ kind: greetingKind, handlers: { hello: { execute: () => completed("Hello") } } });

describe("sim.create takes the kind's spec type", () => {
  it("is the schema's encoded spec: defaults optional, fields checked", () => {
    expectTypeOf<Parameters<ReturnType<typeof greet>["create"]>[0]>().toEqualTypeOf<
      TaskManifest<typeof GreetingSpec.Encoded>
    >();
    // A simulation of a typed kind still goes where a `Simulation<Task>` is asked for.
    expectTypeOf(greet()).toExtend<Simulation<Greeting>>();
  });

  it("a misspelt or missing spec field does not compile; createUnchecked stores it for the controller to reject", () => {
    const sim = greet();
    sim.create({ metadata: { name: "ok" }, spec: { config: { hello: { name: "Ada" } } } });
    // @ts-expect-error `ttlSecondsAfterFinshed` is not a field of the spec
    sim.create({ metadata: { name: "typo" }, spec: { ttlSecondsAfterFinshed: 5, config: { hello: {} } } });
    // @ts-expect-error `config` is required
    sim.create({ metadata: { name: "empty" }, spec: { ttlSecondsAfterFinished: 5 } });
    sim.createUnchecked({ metadata: { name: "unchecked" }, spec: { ttlSecondsAfterFinished: "soon" } });
    sim.run();
    expect(sim.state("ok")).toBe("Succeeded");
    expect(sim.state("unchecked")).toBe("Rejected");
    expect(sim.status("unchecked")?.lastErrors?.at(-1)).toMatchObject({
      code: "ERR_INVALID_TASK",
      description: expect.stringContaining("spec.ttlSecondsAfterFinished"),
    });
  });
});
