/**
 * Issue 27 point 2: a library kind's typed result (`kind.succeeded({ description, result })`) lands in
 * `status.result`, bounded in bytes; the standard conditions are written with the final state; the CRD
 * declares both. `npm run typecheck` checks the @ts-expect-error lines (a wrong result type).
 */
import { fc, test } from "@fast-check/vitest";
import * as Schema from "effect/Schema";
import { describe, expect, it } from "vitest";
import { taskCrd, withDefault } from "../../src/crd.ts";
import { etcdOpsTaskKind } from "../../src/etcd/api/etcdopstask-kind.ts";
import {
  configMember,
  configUnion,
  defineTaskKind,
  failed,
  memberHandlers,
  ObjectMeta,
  promiseHandler,
  TaskStatusSchema,
} from "../../src/index.ts";
import { type Simulation, simulate } from "../../src/testing.ts";
import { druidTaskCrd, openApiOf } from "../api/crd-support.ts";

const VacuumSpec = Schema.Struct({
  ttlSecondsAfterFinished: Schema.Number.pipe(withDefault(600)),
  config: configUnion({
    vacuum: Schema.Struct({
      bytes: Schema.Number.check(Schema.isInt()),
      fail: Schema.optionalKey(Schema.Boolean),
    }),
  }),
});
const VacuumSchema = Schema.Struct({
  metadata: ObjectMeta,
  spec: VacuumSpec,
  status: Schema.optionalKey(TaskStatusSchema),
});
const VacuumResult = Schema.Struct({
  reclaimedBytes: Schema.Number.check(Schema.isInt()),
  tables: Schema.Array(Schema.String),
});

const definition = {
  group: "tests.opstask.dev",
  version: "v1",
  kind: "Vacuum",
  plural: "vacuums",
  finalizer: "tests.opstask.dev/vacuum",
  schema: VacuumSchema,
  ttlSeconds: (task: typeof VacuumSchema.Type) => task.spec.ttlSecondsAfterFinished,
  member: (task: typeof VacuumSchema.Type) => configMember(task.spec.config),
  status: (task: typeof VacuumSchema.Type) => task.status,
} as const;

const vacuumKind = defineTaskKind({ ...definition, result: VacuumResult, maxResultBytes: 512 });

const handlers = memberHandlers((task: typeof VacuumSchema.Type) => task.spec.config, {
  vacuum: promiseHandler({
    execute: (_task, { config }) => {
      const { bytes, fail } = config;
      if (fail === true) return failed("Locked", { code: "ERR_LOCKED", message: "the table is locked" });
      const tables = Array.from({ length: Math.ceil(bytes / 1000) }, (_, i) => `table-${i}`);
      return vacuumKind.succeeded({
        description: `Reclaimed ${bytes} bytes`,
        result: { reclaimedBytes: bytes, tables },
      });
    },
  }),
});

/** The task's stored statuses, one per change, oldest first. */
const statuses = (sim: Pick<Simulation<unknown>, "history">) =>
  sim.history("v").map((event) => (event.object.status ?? {}) as Record<string, unknown>);

const run = async (config: { bytes: number; fail?: boolean }, kind = vacuumKind) => {
  const sim = simulate({ kind, handlers });
  sim.create({ metadata: { name: "v", generation: 1 }, spec: { config: { vacuum: config } } });
  sim.run();
  await sim.settle();
  sim.run();
  const status = sim.object("v")?.status as Record<string, unknown> | undefined;
  return { sim, status };
};

describe("a kind's result", () => {
  it("Execute's result is written to status.result with Succeeded, in the same write", async () => {
    const { sim, status } = await run({ bytes: 2048 });
    expect(status?.state).toBe("Succeeded");
    expect(status?.result).toEqual({ reclaimedBytes: 2048, tables: ["table-0", "table-1", "table-2"] });
    // The result arrives with the state, not before it.
    const first = statuses(sim).findIndex((stored) => stored.result !== undefined);
    expect(statuses(sim)[first]?.state).toBe("Succeeded");
    expect(statuses(sim)[first - 1]?.state).toBe("InProgress");
  });

  it("only Execute's result is written: one from Admit or Cleanup is not the task's", async () => {
    const result = { reclaimedBytes: 1, tables: [] };
    const sim = simulate({
      kind: vacuumKind,
      handlers: {
        vacuum: {
          admit: () => vacuumKind.succeeded({ description: "Admitted", result }),
          execute: () => failed("Locked", { code: "ERR_LOCKED", message: "locked" }),
          cleanup: () => vacuumKind.succeeded({ description: "Cleaned", result }),
        },
      },
    });
    sim.create({ metadata: { name: "v" }, spec: { config: { vacuum: { bytes: 1 } } } });
    sim.run();
    expect(statuses(sim).some((stored) => stored.result !== undefined)).toBe(false);
    expect(sim.state("v")).toBe("Failed");
  });

  it("a result over maxResultBytes fails the task, naming the field and the limit", async () => {
    const { status } = await run({ bytes: 90_000 });
    expect(status?.state).toBe("Failed");
    expect(status?.result).toBeUndefined();
    const errors = status?.lastErrors as ReadonlyArray<{ code: string; description: string }>;
    expect(errors.at(-1)?.code).toBe("ERR_RESULT_TOO_LARGE");
    expect(errors.at(-1)?.description).toMatch(
      /status\.result is \d+ bytes of JSON, over the kind's limit of 512/,
    );
  });

  it("a result that does not match the schema at run time fails the task with ERR_INVALID_RESULT", () => {
    const wrong = { reclaimedBytes: "2 KiB", tables: [] };
    // @ts-expect-error reclaimedBytes is a number
    const outcome = vacuumKind.succeeded({ description: "x", result: wrong });
    expect(outcome).toMatchObject({ kind: "failed", error: { code: "ERR_INVALID_RESULT" } });
    expect(outcome.kind === "failed" && outcome.error.message).toContain("status.result.reclaimedBytes");
  });

  it("is typed by the kind's schema", () => {
    // @ts-expect-error the result is required for a kind with a result schema
    vacuumKind.succeeded({ description: "no result" });
    // @ts-expect-error `tables` is missing
    vacuumKind.succeeded({ description: "x", result: { reclaimedBytes: 1 } });
    const plain = defineTaskKind(definition);
    // @ts-expect-error a kind without a result schema takes no result
    plain.succeeded({ description: "x", result: { reclaimedBytes: 1, tables: [] } });
    expect(plain.succeeded({ description: "done" })).toEqual({ kind: "completed", description: "done" });
  });

  it("a bad maxResultBytes or condition name is an error naming the field", () => {
    expect(() => defineTaskKind({ ...definition, maxResultBytes: 0 })).toThrow(
      /maxResultBytes must be an integer/,
    );
    expect(() => defineTaskKind({ ...definition, conditions: { succeeded: "Not a type" } })).toThrow(
      /conditions\.succeeded must be a condition type/,
    );
  });
});

describe("standard conditions", () => {
  test.prop([fc.integer({ min: 0, max: 200_000 }), fc.boolean()])(
    "the final state writes Succeeded and Failed with observedGeneration, reason and message; never before",
    async (bytes, fail) => {
      const { sim, status } = await run({ bytes, fail });
      const state = status?.state;
      expect(["Succeeded", "Failed"]).toContain(state);
      const succeeded = state === "Succeeded";
      const operation = status?.lastOperation as { description: string };
      const common = {
        observedGeneration: 1,
        lastTransitionTime: status?.lastTransitionTime,
        reason: state,
        message: operation.description,
      };
      expect(status?.conditions).toEqual([
        { type: "Succeeded", status: succeeded ? "True" : "False", ...common },
        { type: "Failed", status: succeeded ? "False" : "True", ...common },
      ]);
      // Written once, with the final state, and no other write carries conditions.
      const stored = statuses(sim);
      const first = stored.findIndex((one) => one.conditions !== undefined);
      expect(stored[first]?.state).toBe(state);
      expect(stored[first - 1]?.state).toBe("InProgress");
      const writes = sim.writes("v").length;
      // More passes (the TTL wait) neither rewrite nor remove them.
      sim.advance(1000);
      sim.run();
      const after = sim.object("v")?.status as Record<string, unknown> | undefined;
      expect(after?.conditions).toEqual(status?.conditions);
      expect(sim.writes("v")).toHaveLength(writes);
    },
  );

  it("a Rejected task gets Failed=True and Succeeded=False, reason Rejected", () => {
    const sim = simulate({ kind: vacuumKind, handlers });
    sim.createUnchecked({
      metadata: { name: "v", generation: 1 },
      spec: { config: { vacuum: { bytes: "lots" } } },
    });
    sim.run();
    const status = sim.object("v")?.status as Record<string, unknown> | undefined;
    expect(status?.state).toBe("Rejected");
    expect(status?.conditions).toMatchObject([
      { type: "Succeeded", status: "False", reason: "Rejected", observedGeneration: 1 },
      { type: "Failed", status: "True", reason: "Rejected", observedGeneration: 1 },
    ]);
  });

  it("names are the kind's own, and `false` writes none", async () => {
    const renamed = defineTaskKind({
      ...definition,
      result: VacuumResult,
      conditions: { succeeded: "Done", failed: "Broken" },
    });
    const { status } = await run({ bytes: 1 }, renamed);
    const conditions = status?.conditions as ReadonlyArray<{ type: string }> | undefined;
    expect(conditions?.map((condition) => condition.type)).toEqual(["Done", "Broken"]);
    const none = defineTaskKind({ ...definition, result: VacuumResult, conditions: false });
    expect((await run({ bytes: 1 }, none)).status?.conditions).toBeUndefined();
  });
});

describe("the CRD", () => {
  it("declares status.result from the result schema and the conditions, so the apiserver keeps them", () => {
    const crd = taskCrd(vacuumKind, VacuumSpec);
    if (!crd.ok) throw new Error(crd.errors.join("\n"));
    const status = crd.crd.spec.versions[0]?.schema.openAPIV3Schema.properties?.status;
    expect(status?.properties?.result).toMatchObject({
      type: "object",
      properties: {
        reclaimedBytes: { type: "integer" },
        tables: { type: "array", items: { type: "string" } },
      },
    });
    expect(status?.properties?.conditions).toMatchObject({
      type: "array",
      "x-kubernetes-list-type": "map",
      "x-kubernetes-list-map-keys": ["type"],
      items: { required: ["type", "status", "lastTransitionTime", "reason", "message"] },
    });
    const none = taskCrd(defineTaskKind({ ...definition, conditions: false }), VacuumSpec);
    expect(
      none.ok &&
        Object.keys(none.crd.spec.versions[0]?.schema.openAPIV3Schema.properties?.status?.properties ?? {}),
    ).toEqual(["state", "lastTransitionTime", "startedAt", "lastOperation", "lastErrors"]);
  });
});

describe("EtcdOpsTask keeps druid's exact status", () => {
  it("a finished EtcdOpsTask has no result and no conditions: only the fields druid's CRD declares", async () => {
    const done = { execute: () => etcdOpsTaskKind.succeeded({ description: "Snapshot taken" }) };
    const sim = simulate({ kind: etcdOpsTaskKind, handlers: { onDemandSnapshot: done } });
    sim.create({
      metadata: { name: "snap", generation: 1 },
      spec: { etcdName: "main", config: { onDemandSnapshot: { type: "full" } } },
    });
    sim.run();
    await sim.settle();
    sim.run();
    const status = sim.object("snap")?.status as Record<string, unknown> | undefined;
    expect(status?.state).toBe("Succeeded");
    const druidFields = Object.keys(openApiOf(druidTaskCrd()).properties?.status?.properties ?? {});
    expect(druidFields).not.toContain("conditions");
    expect(Object.keys(status ?? {}).filter((field) => !druidFields.includes(field))).toEqual([]);
  });
});
