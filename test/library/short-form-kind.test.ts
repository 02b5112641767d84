/**
 * Issue 27 point 5: `defineTaskKind`'s short form takes group, version, kind and the spec schema and
 * derives the object schema, plural, finalizer, the accessors and the short names; the kind it gives
 * is the one the full form gives for the same names (`npm run typecheck` checks the @ts-expect-error
 * lines).
 */
import * as Schema from "effect/Schema";
import { describe, expect, expectTypeOf, it } from "vitest";
import { cliKindOf } from "../../src/cli.ts";
import { taskCrd, withDefault } from "../../src/crd.ts";
import {
  completed,
  configMember,
  configUnion,
  defineTaskKind,
  memberHandlers,
  ObjectMeta,
  promiseHandler,
  TaskStatusSchema,
} from "../../src/index.ts";
import { simulate, type TaskManifest } from "../../src/testing.ts";

const Hello = Schema.Struct({ name: Schema.String });
const Sum = Schema.Struct({ numbers: Schema.Array(Schema.Number) });
const BackupCheckSpec = Schema.Struct({
  ttlSecondsAfterFinished: Schema.Number.pipe(withDefault(600)),
  config: configUnion({ hello: Hello, sum: Sum }),
});
const Result = Schema.Struct({ total: Schema.Number });

const shortKind = defineTaskKind({
  group: "tests.opstask.dev",
  version: "v1",
  kind: "BackupCheck",
  spec: BackupCheckSpec,
  result: Result,
  shortNames: ["bp"],
});

const BackupCheckSchema = Schema.Struct({
  metadata: ObjectMeta,
  spec: BackupCheckSpec,
  status: Schema.optionalKey(TaskStatusSchema),
});
const fullKind = defineTaskKind({
  group: "tests.opstask.dev",
  version: "v1",
  kind: "BackupCheck",
  plural: "backupchecks",
  finalizer: "tests.opstask.dev/backup-check",
  schema: BackupCheckSchema,
  ttlSeconds: (task) => task.spec.ttlSecondsAfterFinished,
  member: (task) => configMember(task.spec.config),
  status: (task) => task.status,
  result: Result,
});

const stored = {
  metadata: {
    name: "c",
    namespace: "default",
    uid: "u1",
    resourceVersion: "1",
    generation: 1,
    creationTimestamp: "2026-01-01T00:00:00Z",
  },
  spec: { ttlSecondsAfterFinished: 30, config: { sum: { numbers: [1, 2] } } },
  status: { state: "Pending" },
};

describe("defineTaskKind's short form", () => {
  it("infers the task from the spec schema: config members typed, a misspelt one does not compile", () => {
    type Task = typeof shortKind.schema.Type;
    expectTypeOf<Task["spec"]>().toEqualTypeOf<typeof BackupCheckSpec.Type>();
    expectTypeOf<Task>().toEqualTypeOf<typeof BackupCheckSchema.Type>();
    memberHandlers((task: Task) => task.spec.config, {
      hello: promiseHandler({ execute: (_task, { config }) => completed(`Hello, ${config.name}`) }),
      sum: promiseHandler({ execute: (_task, { config }) => completed(`${config.numbers.length}`) }),
    });
    memberHandlers((task: Task) => task.spec.config, {
      hello: promiseHandler({ execute: () => completed("Hello") }),
      // @ts-expect-error `summ` is not a member of the config union
      summ: promiseHandler({ execute: () => completed("sum") }),
    });
    const sim = simulate({ kind: shortKind, handlers: {} });
    expectTypeOf<Parameters<typeof sim.create>[0]>().toEqualTypeOf<
      TaskManifest<typeof BackupCheckSpec.Encoded>
    >();
    // @ts-expect-error `ttlSecondsAfterFinshed` is not a field of the spec
    sim.create({ metadata: { name: "typo" }, spec: { ttlSecondsAfterFinshed: 5, config: { sum: {} } } });
    // @ts-expect-error the result has no field `sum`
    shortKind.succeeded({ description: "done", result: { sum: 3 } });
  });

  it("derives plural, finalizer and the accessors the full form states", () => {
    expect(shortKind.resource).toEqual(fullKind.resource);
    expect(shortKind.resource.plural).toBe("backupchecks");
    expect(shortKind.finalizer).toBe("tests.opstask.dev/backup-check");
    expect(shortKind.finalizer).toBe(fullKind.finalizer);
    expect(shortKind.vocabulary).toEqual(fullKind.vocabulary);
    expect(shortKind.defaultTtlSeconds).toBe(fullKind.defaultTtlSeconds);
    expect(shortKind.conditions).toEqual(fullKind.conditions);
    const short = shortKind.decode(stored);
    const full = fullKind.decode(stored);
    expect(short.ok && full.ok).toBe(true);
    if (!short.ok || !full.ok) return;
    expect(short.task).toEqual(full.task);
    expect(shortKind.facts(short.task)).toEqual(fullKind.facts(full.task));
    expect(shortKind.facts(short.task)).toMatchObject({
      ttlSeconds: 30,
      member: "sum",
      status: { state: "Pending" },
    });
    const invalid = { ...stored, spec: { config: { hello: {} } } };
    expect(shortKind.decode(invalid)).toEqual(fullKind.decode(invalid));
  });

  it("takes only a spec with a TTL and a config union", () => {
    const names = { group: "tests.opstask.dev", version: "v1", kind: "Check" } as const;
    // @ts-expect-error the spec has no ttlSecondsAfterFinished
    defineTaskKind({ ...names, spec: Schema.Struct({ config: configUnion({ hello: Hello }) }) });
    defineTaskKind({
      ...names,
      // @ts-expect-error the spec's config is not a config union
      spec: Schema.Struct({ ttlSecondsAfterFinished: Schema.Number, config: Hello }),
    });
    const HttpCheckSpec = Schema.Struct({
      ttlSecondsAfterFinished: Schema.Number,
      config: configUnion({ hello: Hello }),
    });
    expect(defineTaskKind({ ...names, kind: "HTTPCheck", spec: HttpCheckSpec }).finalizer).toBe(
      "tests.opstask.dev/http-check",
    );
  });

  it("plural and finalizer can be given", () => {
    const named = defineTaskKind({
      group: "tests.opstask.dev",
      version: "v1",
      kind: "BackupPolicy",
      plural: "backuppolicies",
      finalizer: "tests.opstask.dev/policy",
      spec: BackupCheckSpec,
    });
    expect(named.resource.plural).toBe("backuppolicies");
    expect(named.finalizer).toBe("tests.opstask.dev/policy");
  });

  it("taskCrd takes the kind as is: the full form's CRD plus its short names", () => {
    const short = taskCrd(shortKind, { description: "A policy." });
    const full = taskCrd(fullKind, BackupCheckSpec, { description: "A policy.", shortNames: ["bp"] });
    expect(short.ok).toBe(true);
    expect(short).toEqual(full);
    // Options still win over the kind's own short names.
    const renamed = taskCrd(shortKind, { shortNames: ["pol"] });
    expect(renamed.ok && renamed.crd.spec.names.shortNames).toEqual(["pol"]);
  });

  it("the task CLI accepts the short names as --kind aliases", () => {
    expect(cliKindOf(shortKind).aliases).toEqual(["bp"]);
    expect(cliKindOf(fullKind).aliases).toEqual([]);
    expect(cliKindOf(shortKind, { aliases: ["policy"] }).aliases).toEqual(["policy"]);
  });

  it("runs end to end under simulate", async () => {
    const sim = simulate({
      kind: shortKind,
      handlers: memberHandlers((task: typeof shortKind.schema.Type) => task.spec.config, {
        hello: promiseHandler({ execute: (_task, { config }) => completed(`Hello, ${config.name}`) }),
        sum: promiseHandler({
          execute: (_task, { config }) =>
            shortKind.succeeded({
              description: "Added",
              result: { total: config.numbers.reduce((sum, n) => sum + n, 0) },
            }),
        }),
      }),
    });
    sim.create({ metadata: { name: "s", generation: 1 }, spec: { config: { sum: { numbers: [1, 2, 3] } } } });
    sim.run();
    await sim.settle();
    sim.run();
    const status = sim.object("s")?.status as Record<string, unknown> | undefined;
    expect(status).toMatchObject({ state: "Succeeded", result: { total: 6 } });
    const metadata = sim.object("s")?.metadata as { finalizers?: ReadonlyArray<string> } | undefined;
    expect(metadata?.finalizers).toContain("tests.opstask.dev/backup-check");
  });
});
