/**
 * fast-check arbitraries generated from a CRD's openAPIV3Schema: every value satisfies the schema's
 * types, enums, formats, patterns, bounds, required lists and min/maxProperties, plus the CEL rules it
 * knows (`celPredicates`). Transition rules (those mentioning `oldSelf`) do not apply on create and are
 * skipped. A CEL rule without a predicate makes construction fail, so a new rule in a CRD cannot be
 * ignored silently (unless `ignoreCel` is set for a schema whose rules only constrain fields the
 * decoder does not read; the generated superset must then decode too).
 *
 * Not modelled (the decoders read no field where they matter): list-type uniqueness, `maxLength` of
 * patterned strings, CEL rules of Etcd.
 */
import { fc } from "@fast-check/vitest";
import type { OpenApiSchema } from "../../src/api/crd/openapi.ts";

type Predicate = (self: Record<string, unknown>) => boolean;

export interface CrdArbitraryOptions {
  /** Replaces the generator at a path (`metadata`, `status.lastErrors[].code`). */
  readonly overrides?: ReadonlyMap<string, fc.Arbitrary<unknown>>;
  /** Optional properties that are always generated (`metadata`: the apiserver always returns it). */
  readonly alwaysPresent?: ReadonlySet<string>;
  /** Predicates for CEL rules, keyed by the rule's text. */
  readonly celPredicates?: ReadonlyMap<string, Predicate>;
  readonly ignoreCel?: boolean;
  readonly maxArrayLength?: number;
  readonly maxMapKeys?: number;
}

/** The CEL rules in druid's and opstask's EtcdOpsTask CRDs that apply on create. */
export const etcdOpsTaskCelPredicates: ReadonlyMap<string, Predicate> = new Map<string, Predicate>([
  [
    "self.type == 'delta' ? !has(self.isFinal) || self.isFinal == false : true",
    (self) => self.type !== "delta" || self.isFinal !== true,
  ],
  [
    "has(self.compaction) || has(self.defragmentation)",
    (self) => self.compaction !== undefined || self.defragmentation !== undefined,
  ],
]);

const INT32 = { min: -(2 ** 31), max: 2 ** 31 - 1 };

/** RFC 3339 with second precision, as the apiserver writes `format: date-time`. */
export const rfc3339Arbitrary: fc.Arbitrary<string> = fc
  .date({ min: new Date("2000-01-01T00:00:00Z"), max: new Date("2099-12-31T23:59:59Z"), noInvalidDate: true })
  .map((date) => `${date.toISOString().slice(0, 19)}Z`);

const integerArbitrary = (schema: OpenApiSchema): fc.Arbitrary<number> => {
  const range =
    schema.format === "int32" ? INT32 : { min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER };
  return fc.integer({
    min: Math.max(range.min, schema.minimum ?? range.min),
    max: Math.min(range.max, schema.maximum ?? range.max),
  });
};

const stringArbitrary = (schema: OpenApiSchema): fc.Arbitrary<string> => {
  if (schema.format === "date-time") return rfc3339Arbitrary;
  if (schema.pattern !== undefined) return fc.stringMatching(new RegExp(schema.pattern));
  return fc.string({
    minLength: schema.minLength ?? 0,
    ...(schema.maxLength === undefined ? {} : { maxLength: schema.maxLength }),
  });
};

export const crdArbitrary = (
  schema: OpenApiSchema,
  options: CrdArbitraryOptions = {},
  path = "",
): fc.Arbitrary<unknown> => {
  const override = options.overrides?.get(path);
  if (override !== undefined) return override;
  return withCel(baseArbitrary(schema, options, path), schema, options, path);
};

const withCel = (
  arbitrary: fc.Arbitrary<unknown>,
  schema: OpenApiSchema,
  options: CrdArbitraryOptions,
  path: string,
) => {
  const rules = (schema["x-kubernetes-validations"] ?? []).filter((rule) => !rule.rule.includes("oldSelf"));
  if (rules.length === 0 || options.ignoreCel === true) return arbitrary;
  const predicates = rules.map((rule) => {
    const predicate = options.celPredicates?.get(rule.rule);
    if (predicate === undefined)
      throw new Error(`no predicate for the CEL rule at ${path || "(root)"}: ${rule.rule}`);
    return predicate;
  });
  return arbitrary.filter(
    (value) =>
      typeof value === "object" &&
      value !== null &&
      predicates.every((p) => p(value as Record<string, unknown>)),
  );
};

const child = (path: string, key: string): string => (path === "" ? key : `${path}.${key}`);

const baseArbitrary = (
  schema: OpenApiSchema,
  options: CrdArbitraryOptions,
  path: string,
): fc.Arbitrary<unknown> => {
  if (schema.enum !== undefined) return fc.constantFrom(...schema.enum);
  if (schema["x-kubernetes-int-or-string"] === true) {
    const text = schema.pattern === undefined ? fc.string() : fc.stringMatching(new RegExp(schema.pattern));
    return fc.oneof(fc.nat(), text);
  }
  switch (schema.type) {
    case "boolean":
      return fc.boolean();
    case "integer":
      return integerArbitrary(schema);
    case "number":
      return fc.double({ noNaN: true, noDefaultInfinity: true });
    case "string":
      return stringArbitrary(schema);
    case "array": {
      const items =
        schema.items === undefined ? fc.anything() : crdArbitrary(schema.items, options, `${path}[]`);
      const maxLength = Math.min(schema.maxItems ?? Number.POSITIVE_INFINITY, options.maxArrayLength ?? 4);
      return fc.array(items, {
        minLength: schema.minItems ?? 0,
        maxLength: Math.max(maxLength, schema.minItems ?? 0),
      });
    }
    default:
      return objectArbitrary(schema, options, path);
  }
};

const objectArbitrary = (
  schema: OpenApiSchema,
  options: CrdArbitraryOptions,
  path: string,
): fc.Arbitrary<unknown> => {
  const properties = schema.properties ?? {};
  const names = Object.keys(properties);
  if (names.length === 0) {
    const additional = schema.additionalProperties;
    if (typeof additional === "object") {
      return fc.dictionary(fc.string({ minLength: 1 }), crdArbitrary(additional, options, `${path}{}`), {
        maxKeys: options.maxMapKeys ?? 3,
      });
    }
    // `type: object` without properties: the apiserver prunes whatever is inside.
    return fc.constant({});
  }
  const required = names.filter(
    (name) =>
      (schema.required ?? []).includes(name) || options.alwaysPresent?.has(child(path, name)) === true,
  );
  const optional = names.filter((name) => !required.includes(name));
  const minOptional = Math.max(0, (schema.minProperties ?? 0) - required.length);
  const maxOptional = Math.min(
    optional.length,
    (schema.maxProperties ?? Number.POSITIVE_INFINITY) - required.length,
  );
  const field = (name: string) => {
    const property = properties[name];
    if (property === undefined) throw new Error(`no property ${name}`);
    return crdArbitrary(property, options, child(path, name));
  };
  return fc
    .subarray(optional, { minLength: minOptional, maxLength: maxOptional })
    .chain((chosen) =>
      fc.record(Object.fromEntries([...required, ...chosen].map((name) => [name, field(name)]))),
    );
};
