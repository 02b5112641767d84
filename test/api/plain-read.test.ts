/**
 * The hand-written reads of a settled task (src/api/plain-read.ts for `metadata` and `status`,
 * `readTtlSecondsPlainly` of the etcd kind for the TTL) against the schema decodes they stand in for,
 * over objects of the apiserver's shape and over mutations of them (a wrong type, a bad time, an
 * unsafe generation, 11 lastErrors, an unknown state, null, an array for an object, a key removed, an
 * extra key, a key set to undefined, another prototype). Where a plain read answers, the schema decodes
 * the object to exactly that value; and it answers for every object of the plain shape, so the schema
 * decode is not what a takeover runs.
 */
import * as Result from "effect/Result";
import * as Schema from "effect/Schema";
import * as SchemaParser from "effect/SchemaParser";
import * as fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ObjectMeta } from "../../src/api/meta.ts";
import { readMetadataAndStatusPlainly } from "../../src/api/plain-read.ts";
import { TaskStates } from "../../src/api/status.ts";
import {
  LastErrorsMaxItems,
  OperationStates,
  OperationTypes,
  TaskStatusSchema,
} from "../../src/api/status-schema.ts";
import { TtlLimits } from "../../src/etcd/api/etcdopstask.ts";
import {
  decodeTtlSeconds,
  etcdOpsTaskKind,
  readTtlSecondsPlainly,
} from "../../src/etcd/api/etcdopstask-kind.ts";

const decodeMetadataAndStatus = SchemaParser.decodeUnknownResult(
  Schema.Struct({ metadata: ObjectMeta, status: Schema.optionalKey(TaskStatusSchema) }),
);

const digits = (length: number) =>
  fc.integer({ min: 0, max: 10 ** length - 1 }).map((n) => String(n).padStart(length, "0"));
/** RFC 3339 as the pattern takes it: either case of `T` and `Z`, fractions, offsets. */
const time = fc
  .tuple(
    digits(4),
    digits(2),
    digits(2),
    fc.constantFrom("T", "t"),
    digits(2),
    digits(2),
    digits(2),
    fc.constantFrom("", ".5", ".123456789"),
    fc.constantFrom("Z", "z", "+02:00", "-11:30"),
  )
  .map(([y, mo, d, t, h, mi, s, fraction, zone]) => `${y}-${mo}-${d}${t}${h}:${mi}:${s}${fraction}${zone}`);
const text = fc.string({ maxLength: 8 });
const stringMap = fc.dictionary(text, text, { maxKeys: 3, noNullPrototype: true });

const metadata = fc.record(
  {
    name: fc.string({ minLength: 1, maxLength: 8 }),
    namespace: text,
    uid: text,
    resourceVersion: text,
    generation: fc.oneof(
      fc.nat(5),
      fc.maxSafeInteger(),
      fc.maxSafeNat().map((n) => -n),
    ),
    creationTimestamp: time,
    deletionTimestamp: time,
    finalizers: fc.array(text, { maxLength: 3 }),
    labels: stringMap,
    annotations: stringMap,
    // What the apiserver adds and the schema drops.
    managedFields: fc.constant([{ manager: "opstask", operation: "Apply", fieldsV1: { "f:status": {} } }]),
    ownerReferences: fc.constant([]),
  },
  {
    requiredKeys: ["name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp"],
  },
);
const lastError = fc.record({ code: text, description: text, observedAt: time });
const status = fc.record(
  {
    state: fc.constantFrom(...TaskStates),
    lastTransitionTime: time,
    startedAt: time,
    lastOperation: fc.record({
      type: fc.constantFrom(...OperationTypes),
      state: fc.constantFrom(...OperationStates),
      description: text,
      runID: text,
      lastUpdateTime: time,
    }),
    lastErrors: fc.array(lastError, { maxLength: LastErrorsMaxItems }),
  },
  { requiredKeys: [] },
);
const spec = fc.record(
  {
    ttlSecondsAfterFinished: fc.oneof(
      fc.integer({ min: TtlLimits.minimum, max: 2_147_483_647 }),
      fc.constantFrom(TtlLimits.minimum, TtlLimits.default, 2_147_483_647),
    ),
    etcdName: text,
    config: fc.constant({ onDemandSnapshot: { type: "full" } }),
  },
  { requiredKeys: ["config"] },
);
/** Objects as the apiserver returns them: plain JSON, every field of the type the schemas require. */
const plainObjects = fc.record(
  {
    apiVersion: fc.constant("druid.gardener.cloud/v1alpha1"),
    kind: fc.constant("EtcdOpsTask"),
    metadata,
    spec,
    status,
  },
  { requiredKeys: ["apiVersion", "kind", "metadata", "spec"] },
);

type Path = ReadonlyArray<string | number>;
type Container = Record<string | number, unknown>;

/** The paths of every value in `value`, itself included (`[]`). */
const pathsOf = (value: unknown, path: Path = []): Array<Path> => {
  const nested =
    typeof value === "object" && value !== null
      ? Object.keys(value).flatMap((key) =>
          pathsOf((value as Container)[key], [...path, Array.isArray(value) ? Number(key) : key]),
        )
      : [];
  return [path, ...nested];
};

const elevenErrors = Array.from({ length: LastErrorsMaxItems + 1 }, () => ({
  code: "ERR_X",
  description: "d",
  observedAt: "2026-11-22T12:00:00Z",
}));
/** Values that are wrong for most fields, and right for some (the mutation may keep a valid object). */
const replacements: ReadonlyArray<unknown> = [
  null,
  undefined,
  0,
  -0,
  1.5,
  -1,
  2 ** 53,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  2_147_483_648,
  "",
  "x",
  "60",
  "Unknown",
  "Succeeded",
  "Execution",
  "Completed",
  "2026-11-22 12:00:00Z",
  "2026-11-22T12:00:00",
  "2026-11-22T12:00:00Z ",
  "2026-11-22T12:00:00Z",
  true,
  [],
  ["x"],
  [1],
  {},
  { a: 1 },
  elevenErrors,
];

type Mutation =
  | { readonly at: number; readonly op: "replace"; readonly value: unknown }
  | { readonly at: number; readonly op: "delete" | "null-prototype" | "inherited" | "as-array" }
  | { readonly at: number; readonly op: "extra-key"; readonly key: string };

const mutations: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ at: fc.nat(), op: fc.constant("replace" as const), value: fc.constantFrom(...replacements) }),
  fc.record({
    at: fc.nat(),
    op: fc.constantFrom(
      "delete" as const,
      "null-prototype" as const,
      "inherited" as const,
      "as-array" as const,
    ),
  }),
  fc.record({
    at: fc.nat(),
    op: fc.constant("extra-key" as const),
    key: fc.constantFrom("extra", "__proto__", "constructor", "state", "ttlSecondsAfterFinished"),
  }),
);

/** `value` with `mutation` applied at one of its paths (chosen by `at`); `value` is left alone. */
const mutate = (value: unknown, mutation: Mutation): unknown => {
  const copy: unknown = structuredClone(value);
  const paths = pathsOf(copy);
  const path = paths[mutation.at % paths.length] ?? [];
  const target = path.reduce<unknown>((at, key) => (at as Container)[key], copy);
  const changed = (): unknown => {
    switch (mutation.op) {
      case "replace":
        return mutation.value;
      case "delete":
        return deleted;
      case "null-prototype":
        return typeof target === "object" && target !== null
          ? Object.assign(Object.create(null), target)
          : target;
      case "inherited":
        return typeof target === "object" && target !== null
          ? Object.assign(Object.create({ inherited: "x" }), target)
          : target;
      case "as-array":
        return typeof target === "object" && target !== null ? Object.values(target) : target;
      case "extra-key":
        if (typeof target === "object" && target !== null)
          Object.defineProperty(target, mutation.key, {
            value: "extra",
            enumerable: true,
            writable: true,
            configurable: true,
          });
        return target;
    }
  };
  const next = changed();
  if (path.length === 0) return next === deleted ? undefined : next;
  const parent = path.slice(0, -1).reduce<unknown>((at, key) => (at as Container)[key], copy) as Container;
  const key = path[path.length - 1] ?? "";
  if (next === deleted) delete parent[key];
  else parent[key] = next;
  return copy;
};
const deleted = Symbol("deleted");

const mutated = fc
  .tuple(plainObjects, fc.array(mutations, { minLength: 1, maxLength: 3 }))
  .map(([object, changes]) => changes.reduce<unknown>(mutate, object));

/** The plain reads agree with the schema decodes; counts which way each went. */
const agrees = (object: unknown, counts: { plain: number; fallback: number }) => {
  const plain = readMetadataAndStatusPlainly(object);
  const decoded = decodeMetadataAndStatus(object);
  if (plain === undefined) counts.fallback += 1;
  else {
    counts.plain += 1;
    expect(Result.isSuccess(decoded)).toBe(true);
    if (Result.isSuccess(decoded)) {
      expect(plain.metadata).toStrictEqual(decoded.success.metadata);
      expect(plain.status).toStrictEqual(decoded.success.status);
    }
  }
  const plainTtl = readTtlSecondsPlainly(object);
  if (plainTtl !== undefined) expect(plainTtl).toBe(decodeTtlSeconds(object));
};

describe("a settled task's facts read by hand", () => {
  it("are read for every object of the apiserver's plain shape, exactly as the schemas decode it", () => {
    fc.assert(
      fc.property(plainObjects, (object) => {
        const counts = { plain: 0, fallback: 0 };
        agrees(object, counts);
        expect(counts.plain).toBe(1);
        expect(readTtlSecondsPlainly(object)).toBeDefined();
      }),
      { numRuns: 2_000 },
    );
  });

  it("equal the schema decode wherever they answer, for broken and unusual objects too", () => {
    const counts = { plain: 0, fallback: 0 };
    fc.assert(
      fc.property(mutated, (object) => agrees(object, counts)),
      { numRuns: 5_000 },
    );
    // Both ways come up: mutations that keep the object valid (an extra key, another valid value) and
    // those that do not.
    expect(counts.plain).toBeGreaterThan(500);
    expect(counts.fallback).toBeGreaterThan(500);
  });

  it("fall back to the schema, through the kind, for what they do not read", () => {
    const object = {
      metadata: Object.assign(Object.create({ inherited: true }), {
        name: "t",
        namespace: "default",
        uid: "u",
        resourceVersion: "1",
        generation: 1,
        creationTimestamp: "2026-11-22T12:00:00Z",
      }),
      spec: Object.assign(Object.create({ inherited: true }), { ttlSecondsAfterFinished: 30 }),
      status: { state: "Succeeded" },
    };
    expect(readTtlSecondsPlainly(object)).toBeUndefined();
    expect(etcdOpsTaskKind.undecodedFacts?.(object)).toStrictEqual({
      metadata: { ...object.metadata },
      status: { state: "Succeeded" },
      ttlSeconds: 30,
    });
  });

  it("give the CRD's default TTL when the key is absent, and none when it is there as undefined", () => {
    expect(readTtlSecondsPlainly({ spec: {} })).toBe(TtlLimits.default);
    expect(decodeTtlSeconds({ spec: {} })).toBe(TtlLimits.default);
    expect(readTtlSecondsPlainly({ spec: { ttlSecondsAfterFinished: undefined } })).toBeUndefined();
    expect(decodeTtlSeconds({ spec: { ttlSecondsAfterFinished: undefined } })).toBeUndefined();
  });
});
