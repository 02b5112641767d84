/**
 * CRD generation from Effect Schemas: what a kind's schema becomes in its CRD (config union members,
 * defaults, CEL rules, formats, immutability, status), and the clear errors for what has no
 * structural form. The generated CRDs are applied to a real apiserver by the examples' and
 * crd-rules' integration tests.
 */

import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as Schema from "effect/Schema";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { emptyObject } from "../../src/api/schema-helpers.ts";
import { scheduleCrd } from "../../src/crd.ts";
import { configUnion } from "../../src/library/config-union.ts";
import { celRule, maxChars, withDefault } from "../../src/library/crd/schema-annotations.ts";
import { structuralSchema } from "../../src/library/crd/structural-schema.ts";
import { taskCrd } from "../../src/library/crd/task-crd.ts";
import { repoRoot } from "../support/cluster.ts";

const converted = (schema: Schema.Top) => {
  const result = structuralSchema(schema);
  if (!result.ok) return expect.fail(result.errors.join("\n"));
  return result.schema;
};

const Copy = Schema.Struct({ from: Schema.String, to: Schema.String });
const Wipe = Schema.Struct({ path: Schema.String });
const Config = configUnion({ copy: Copy, wipe: Wipe }, { description: "exactly one" });
const Spec = Schema.Struct({
  target: Schema.optionalKey(Schema.String),
  retries: Schema.Number.check(Schema.isInt32(), Schema.isGreaterThanOrEqualTo(0)).pipe(withDefault(3)),
  config: Config,
});
const kind = { resource: { group: "ops.example.dev", version: "v1", kind: "Chore", plural: "chores" } };

describe("structuralSchema", () => {
  it("declares a config union's members as properties, exactly one present", () => {
    const schema = converted(Config);
    expect(schema).toEqual({
      type: "object",
      description: "exactly one",
      minProperties: 1,
      maxProperties: 1,
      properties: {
        copy: {
          type: "object",
          properties: { from: { type: "string" }, to: { type: "string" } },
          required: ["from", "to"],
        },
        wipe: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
      },
    });
  });

  it("writes a withDefault key's default and an int32's format; the decoder applies the same default", () => {
    expect(converted(Spec).properties?.retries).toEqual({
      type: "integer",
      format: "int32",
      minimum: 0,
      default: 3,
    });
    const decoded = Schema.decodeUnknownSync(Spec)({ config: { wipe: { path: "/x" } } });
    expect(decoded.retries).toBe(3);
  });

  it("puts a celRule on the node it checks, and the decoder enforces it with the same message", () => {
    const rule = { rule: "self.min <= self.max", message: "min must not exceed max" };
    const Range = Schema.Struct({ min: Schema.Number, max: Schema.Number }).check(
      celRule(rule, (range: { readonly min: number; readonly max: number }) => range.min <= range.max),
    );
    expect(converted(Range)["x-kubernetes-validations"]).toEqual([rule]);
    expect(() => Schema.decodeUnknownSync(Range)({ min: 2, max: 1 })).toThrow(rule.message);
  });

  it("inlines schemas Effect extracts into definitions (no $ref in a CRD)", () => {
    const Named = Schema.Struct({ name: Schema.String }).annotate({ identifier: "Named" });
    const schema = converted(Schema.Struct({ a: Named, b: Named }));
    expect(JSON.stringify(schema)).not.toContain("$ref");
    expect(schema.properties?.b).toEqual({
      type: "object",
      properties: { name: { type: "string" } },
      required: ["name"],
    });
  });

  it("turns literals into an enum, nullables into nullable, exclusive bounds into OpenAPI's booleans", () => {
    const schema = converted(
      Schema.Struct({
        mode: Schema.Literals(["fast", "safe"]),
        note: Schema.NullOr(Schema.String),
        // Schema.Finite: Schema.Number's JSON form admits NaN and ±Infinity as strings and drops its checks.
        ratio: Schema.Finite.check(Schema.isGreaterThan(0)),
      }),
    );
    expect(schema.properties?.mode).toEqual({ type: "string", enum: ["fast", "safe"] });
    expect(schema.properties?.note).toEqual({ type: "string", nullable: true });
    expect(schema.properties?.ratio).toEqual({ type: "number", minimum: 0, exclusiveMinimum: true });
  });

  it("keeps the contents of an object without declared fields, unless it says they are dropped", () => {
    const schema = converted(
      Schema.Struct({
        parameters: Schema.Record(Schema.String, Schema.Unknown),
        marker: emptyObject(),
      }),
    );
    expect(schema.properties?.parameters).toEqual({
      type: "object",
      "x-kubernetes-preserve-unknown-fields": true,
    });
    expect(schema.properties?.marker).toEqual({ type: "object" });
  });

  it("names the path of a union that has no structural form", () => {
    const result = structuralSchema(Schema.Struct({ value: Schema.Union([Schema.String, Copy]) }));
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.errors[0]).toMatch(/^spec\.value: a union of different shapes/);
  });
});

describe("structuralSchema never loses a check silently", () => {
  const errorsOf = (schema: Schema.Top): ReadonlyArray<string> => {
    const result = structuralSchema(schema);
    return result.ok ? [] : result.errors;
  };

  it("writes a Schema.Number's bounds, which Effect's JSON Schema leaves out", () => {
    const schema = converted(
      Schema.Struct({ load: Schema.Number.check(Schema.isGreaterThan(0), Schema.isLessThanOrEqualTo(10)) }),
    );
    expect(schema.properties?.load).toEqual({
      type: "number",
      minimum: 0,
      exclusiveMinimum: true,
      maximum: 10,
    });
  });

  it("writes a multipleOf and a second pattern (as a CEL rule beside the first)", () => {
    const schema = converted(
      Schema.Struct({
        step: Schema.Finite.check(Schema.isMultipleOf(5)),
        code: Schema.String.check(Schema.isPattern(/^[a-z]+$/u), Schema.isPattern(/^ab/u)),
      }),
    );
    expect(schema.properties?.step).toEqual({ type: "number", multipleOf: 5 });
    expect(schema.properties?.code).toEqual({
      type: "string",
      pattern: "^ab",
      "x-kubernetes-validations": [{ rule: 'self.matches("^[a-z]+$")', message: "must match ^[a-z]+$" }],
    });
  });

  it("refuses a RegExp without the u flag, naming the field and the fix", () => {
    expect(errorsOf(Schema.Struct({ code: Schema.String.check(Schema.isPattern(/^[a-z]+$/)) }))).toEqual([
      'spec.code: the check "a string matching the RegExp ^[a-z]+$" has no exact form in a CRD; give the RegExp the `u` flag (/…/u), whose syntax JSON Schema shares',
    ]);
  });

  it("refuses a string length that JSON Schema counts differently, and a filter with no JSON Schema form", () => {
    const even = Schema.makeFilter<number>((value) => value % 2 === 0, { expected: "an even number" });
    const errors = errorsOf(
      Schema.Struct({
        name: Schema.String.check(Schema.isMinLength(2)),
        tags: Schema.Array(Schema.String.check(Schema.isMaxLength(8))),
        count: Schema.Int.check(even),
      }),
    );
    expect(errors).toEqual([
      expect.stringMatching(
        /^spec\.name: the check "a value with a length of at least 2" has no exact form in a CRD; count characters with maxChars\(n\) or minChars\(n\)/,
      ),
      expect.stringMatching(
        /^spec\.tags\[\]: the check "a value with a length of at most 8" has no exact form/,
      ),
      expect.stringMatching(
        /^spec\.count: the check "an even number" has no form in a CRD; express it with celRule/,
      ),
    ]);
  });

  it("keeps checks that reach the CRD as they are: int32, celRule, an array's length", () => {
    const rule = { rule: "self.size() > 0", message: "not empty" };
    const schema = converted(
      Schema.Struct({
        retries: Schema.Number.check(Schema.isInt32()),
        items: Schema.Array(Schema.String).check(
          Schema.isMaxLength(3),
          celRule(rule, (items: ReadonlyArray<string>) => items.length > 0),
        ),
      }),
    );
    expect(schema.properties?.retries).toEqual({ type: "integer", format: "int32" });
    expect(schema.properties?.items).toEqual({
      type: "array",
      items: { type: "string" },
      maxItems: 3,
      "x-kubernetes-validations": [rule],
    });
  });
});

describe("structuralSchema walks a config union's members as it walks the top level", () => {
  const specWith = (member: Schema.ConstraintCodec<object, unknown, never, never>) =>
    Schema.Struct({ config: configUnion({ copy: Copy, archive: member }) });

  it("refuses a member's pattern without the u flag and its UTF-16 string length, naming each field and the fix", () => {
    const result = taskCrd(
      kind,
      specWith(
        Schema.Struct({
          bucket: Schema.String.check(Schema.isPattern(/^[a-z]+$/)),
          label: Schema.String.check(Schema.isMaxLength(8)),
          ratio: Schema.Number.check(Schema.isGreaterThan(0)),
        }),
      ),
    );
    expect(result).toEqual({
      ok: false,
      errors: [
        'spec.config.archive.bucket: the check "a string matching the RegExp ^[a-z]+$" has no exact form in a CRD; give the RegExp the `u` flag (/…/u), whose syntax JSON Schema shares',
        'spec.config.archive.label: the check "a value with a length of at most 8" has no exact form in a CRD; count characters with maxChars(n) or minChars(n) from opstask/crd (code points, as the apiserver counts a string\'s length)',
      ],
    });
  });

  it("writes a member's Schema.Number bounds, and maxChars as the maxLength both sides count in code points", () => {
    const Archive = Schema.Struct({
      label: Schema.String.check(maxChars(2)),
      ratio: Schema.Number.check(Schema.isGreaterThan(0), Schema.isLessThanOrEqualTo(10)),
    });
    const archive = converted(specWith(Archive)).properties?.config?.properties?.archive;
    expect(archive?.properties?.ratio).toEqual({
      type: "number",
      minimum: 0,
      exclusiveMinimum: true,
      maximum: 10,
    });
    expect(archive?.properties?.label).toEqual({ type: "string", maxLength: 2 });
    // Two characters outside the Basic Multilingual Plane: four UTF-16 units, two code points.
    const decode = Schema.decodeUnknownResult(Archive);
    expect(decode({ label: "😀😀", ratio: 1 })._tag).toBe("Success");
    expect(decode({ label: "😀😀😀", ratio: 1 })._tag).toBe("Failure");
  });
});

describe("taskCrd", () => {
  it("makes every spec field immutable as druid's CRD does, unless listed as mutable", () => {
    const result = taskCrd(kind, Spec, { mutableFields: ["target"] });
    if (!result.ok) return expect.fail(result.errors.join("\n"));
    const spec = result.crd.spec.versions[0]?.schema.openAPIV3Schema.properties?.spec;
    expect(spec?.properties?.config?.["x-kubernetes-validations"]).toEqual([
      { message: "config is immutable", rule: "self == oldSelf" },
    ]);
    expect(spec?.properties?.target?.["x-kubernetes-validations"]).toBeUndefined();
  });

  it("serves status as a subresource in the task status shape, with State/Age/Phase columns", () => {
    const result = taskCrd(kind, Spec, {
      printerColumns: [{ name: "Target", type: "string", jsonPath: ".spec.target" }],
    });
    if (!result.ok) return expect.fail(result.errors.join("\n"));
    const [version] = result.crd.spec.versions;
    expect(result.crd.metadata.name).toBe("chores.ops.example.dev");
    expect(version?.subresources).toEqual({ status: {} });
    expect(version?.additionalPrinterColumns.map((column) => column.name)).toEqual([
      "State",
      "Target",
      "Age",
      "Phase",
    ]);
    const status = version?.schema.openAPIV3Schema.properties?.status;
    expect(status?.properties?.state?.enum).toEqual([
      "Pending",
      "InProgress",
      "Succeeded",
      "Failed",
      "Rejected",
    ]);
    expect(status?.properties?.lastErrors?.maxItems).toBe(10);
  });

  it("refuses a whole task object's schema in place of its spec's, at compile time and at run time", () => {
    const Whole = Schema.Struct({ metadata: Schema.Struct({ name: Schema.String }), spec: Spec });
    // @ts-expect-error taskCrd takes the spec's schema, not the whole object's
    const result = taskCrd(kind, Whole);
    expect(result).toEqual({
      ok: false,
      errors: [
        "spec: the schema has metadata, spec, so it is a whole task object's; pass its spec schema (MyTaskSchema.fields.spec)",
      ],
    });
  });

  it("rejects a mutable field the spec does not have", () => {
    const result = taskCrd(kind, Spec, { mutableFields: ["nope"] });
    expect(result).toEqual({ ok: false, errors: ["mutableFields: spec has no field nope"] });
  });
});

describe("opstask/crd's scheduleCrd", () => {
  it("is the TaskSchedule CRD the package ships in deploy/crds", () => {
    const result = scheduleCrd();
    if (!result.ok) return expect.fail(result.errors.join("\n"));
    const shipped = parse(
      readFileSync(join(repoRoot, "deploy", "crds", "opstask.gardener.cloud_taskschedules.yaml"), "utf8"),
    );
    expect(JSON.parse(JSON.stringify(result.crd))).toEqual(shipped);
  });
});
