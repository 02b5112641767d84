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
// A `__proto__` label is left to the schema (its own test below), so the plain shape has none.
const labelKey = fc.string({ maxLength: 12 }).filter((key) => key !== "__proto__");
const stringMap = fc.dictionary(labelKey, text, { maxKeys: 3, noNullPrototype: true });

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

/** A change at one path: a value put there, or the value there changed. */
type Change =
  | { readonly op: "replace"; readonly value: unknown }
  | {
      readonly op:
        | "delete"
        | "null-prototype"
        | "inherited"
        | "all-inherited"
        | "as-array"
        | "array-with-keys";
    }
  | { readonly op: "extra-key"; readonly key: string };

const extraKeys = ["extra", "__proto__", "constructor", "state", "ttlSecondsAfterFinished"];
/** Every change, each once. */
const changes: ReadonlyArray<Change> = [
  ...replacements.map((value) => ({ op: "replace" as const, value })),
  ...(["delete", "null-prototype", "inherited", "all-inherited", "as-array", "array-with-keys"] as const).map(
    (op) => ({ op }),
  ),
  ...extraKeys.map((key) => ({ op: "extra-key" as const, key })),
];

const deleted = Symbol("deleted");

/** `change` applied to the value at `path` of a copy of `value`; `value` is left alone. */
const changedAt = (value: unknown, path: Path, change: Change): unknown => {
  const copy: unknown = structuredClone(value);
  const at = (to: Path): unknown =>
    to.reduce<unknown>(
      (on, key) => (typeof on === "object" && on !== null ? (on as Container)[key] : undefined),
      copy,
    );
  const target = at(path);
  const isObject = typeof target === "object" && target !== null;
  const next = ((): unknown => {
    switch (change.op) {
      case "replace":
        return change.value;
      case "delete":
        return deleted;
      case "null-prototype":
        return isObject ? Object.assign(Object.create(null), target) : target;
      case "inherited":
        return isObject ? Object.assign(Object.create({ inherited: "x" }), target) : target;
      // Every field inherited, none own.
      case "all-inherited":
        return isObject ? Object.create(target) : target;
      case "as-array":
        return isObject ? Object.values(target) : target;
      // An array that carries the object's fields as its own properties.
      case "array-with-keys":
        return isObject && !Array.isArray(target) && !("length" in target)
          ? Object.assign([], target)
          : target;
      case "extra-key":
        if (isObject)
          Object.defineProperty(target, change.key, {
            value: "extra",
            enumerable: true,
            writable: true,
            configurable: true,
          });
        return target;
    }
  })();
  if (path.length === 0) return next === deleted ? undefined : next;
  const parent = at(path.slice(0, -1));
  // A copy may lack a path of the value it copies (an array's own keys are not copied): no change.
  if (typeof parent !== "object" || parent === null) return copy;
  const key = path[path.length - 1] ?? "";
  if (next === deleted) delete (parent as Container)[key];
  else (parent as Container)[key] = next;
  return copy;
};

/** Every object one change away from `object`: each change at each path. */
const oneChangeAway = (object: unknown): Array<unknown> =>
  pathsOf(object).flatMap((path) => changes.map((change) => changedAt(object, path, change)));

/** A few changes in a row, at random paths. */
const mutated = fc
  .tuple(
    plainObjects,
    fc.array(fc.tuple(fc.nat(), fc.constantFrom(...changes)), { minLength: 1, maxLength: 3 }),
  )
  .map(([object, steps]) =>
    steps.reduce<unknown>((value, [at, change]) => {
      // A copy's paths: a copy drops what an earlier change put outside JSON (an array's own keys).
      const copy: unknown = structuredClone(value);
      const paths = pathsOf(copy);
      return changedAt(copy, paths[at % paths.length] ?? [], change);
    }, object),
  );

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

  it("equal the schema decode wherever they answer, for every object one change away from a plain one", () => {
    const counts = { plain: 0, fallback: 0 };
    fc.assert(
      fc.property(plainObjects, (object) => {
        for (const changed of oneChangeAway(object)) agrees(changed, counts);
      }),
      { numRuns: 10 },
    );
    expect(counts.plain).toBeGreaterThan(500);
    expect(counts.fallback).toBeGreaterThan(500);
  });

  it("equal the schema decode wherever they answer, after several changes too", () => {
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

  it("are what the kind reads for a plain object: the schema's `in` checks never run", () => {
    // The schema decode asks `key in object` for every declared key; the plain read asks only for an
    // optional key whose value is undefined, and every optional key here has a value.
    const asked: Array<string | symbol> = [];
    const watched = <T extends object>(target: T): T =>
      new Proxy(target, {
        has: (on, key) => {
          asked.push(key);
          return Reflect.has(on, key);
        },
      });
    const object = {
      metadata: watched({
        name: "t",
        namespace: "default",
        uid: "u",
        resourceVersion: "1",
        generation: 1,
        creationTimestamp: "2026-11-22T12:00:00Z",
        deletionTimestamp: "2026-11-22T12:00:00Z",
        finalizers: [],
        labels: {},
        annotations: {},
      }),
      spec: watched({ ttlSecondsAfterFinished: 30 }),
    };
    expect(etcdOpsTaskKind.undecodedFacts?.(object)).toMatchObject({ ttlSeconds: 30, status: {} });
    expect(asked).toEqual([]);
    // The probe works: the schema decodes do ask.
    expect(decodeTtlSeconds(object)).toBe(30);
    expect(Result.isSuccess(decodeMetadataAndStatus(object))).toBe(true);
    expect(asked).toEqual(expect.arrayContaining(["ttlSecondsAfterFinished", "name"]));
  });

  it("leave to the schema, through the kind, what they do not read: a `__proto__` label", () => {
    const object: unknown = JSON.parse(
      JSON.stringify({
        metadata: {
          name: "t",
          namespace: "default",
          uid: "u",
          resourceVersion: "1",
          generation: 1,
          creationTimestamp: "2026-11-22T12:00:00Z",
          labels: { a: "b" },
        },
        spec: { ttlSecondsAfterFinished: 30 },
        status: { state: "Succeeded" },
      }).replace('"a":"b"', '"__proto__":"x","a":"b"'),
    );
    const decoded = decodeMetadataAndStatus(object);
    expect(Result.isSuccess(decoded)).toBe(true);
    if (Result.isFailure(decoded)) return;
    expect(readMetadataAndStatusPlainly(object)).toBeUndefined();
    expect(etcdOpsTaskKind.undecodedFacts?.(object)).toStrictEqual({
      metadata: decoded.success.metadata,
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
