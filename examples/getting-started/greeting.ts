/**
 * Step 1 of docs/library.md: the task resource. One Effect Schema describes a `Greeting`'s spec; the
 * controller decodes with it and the CRD is generated from it, so the two cannot disagree. The
 * config union has two members, each selecting its own handler (handlers.ts). `defineTaskKind`
 * derives the rest: plural `greetings`, finalizer `getting-started.opstask.dev/greeting`, metadata
 * and status.
 */
import * as Schema from "effect/Schema";
import { configUnion, defineTaskKind } from "opstask";
import { taskCrd, withDefault } from "opstask/crd";

/** `spec.config.hello`: greet someone. */
export const Hello = Schema.Struct({
  name: Schema.String.check(Schema.isNonEmpty()).annotate({ description: "Who to greet." }),
}).annotate({ description: "Completes with a greeting for name." });

/** `spec.config.sum`: add numbers and compare with the expected total. */
export const Sum = Schema.Struct({
  numbers: Schema.Array(Schema.Number.check(Schema.isInt32())).check(Schema.isMaxLength(100)),
  expected: Schema.Number.check(Schema.isInt32()),
}).annotate({ description: "Fails with ERR_SUM_MISMATCH unless the numbers add up to expected." });

export const GreetingSpec = Schema.Struct({
  ttlSecondsAfterFinished: Schema.Number.check(Schema.isInt32(), Schema.isGreaterThanOrEqualTo(1)).pipe(
    withDefault(600, { description: "Seconds a finished task is kept before it is deleted." }),
  ),
  config: configUnion({ hello: Hello, sum: Sum }, { description: "What to do; exactly one member." }),
});

export const greetingKind = defineTaskKind({
  group: "getting-started.opstask.dev",
  version: "v1alpha1",
  kind: "Greeting",
  spec: GreetingSpec,
  shortNames: ["greet"],
});
export type Greeting = typeof greetingKind.schema.Type;

/** `opstask crd --module greeting.ts --export crd` prints it as YAML for `kubectl apply -f -`. */
export const crd = taskCrd(greetingKind, { description: "A greeting, done once." });
