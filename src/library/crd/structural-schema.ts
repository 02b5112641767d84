/**
 * An Effect Schema's encoded side as a Kubernetes structural schema (the `openAPIV3Schema` subset a CRD
 * accepts): Effect's JSON Schema 2020-12 output is rewritten where the apiserver would refuse it (`$ref`,
 * `allOf`, `anyOf` for nullables and non-finite numbers, `const`, numeric `exclusiveMinimum`,
 * `additionalProperties: true` beside `properties`). What has no structural equivalent (a union of
 * unrelated shapes) is an error naming its path, never approximated. `x-kubernetes-validations`
 * (`celRule`) and `default` annotations pass through to the node they belong to.
 */
import type * as JsonSchema from "effect/JsonSchema";
import * as Schema from "effect/Schema";
import type { CelRule, OpenApiSchema } from "../../api/crd/openapi.ts";
import { keepConstraints } from "./kept-constraints.ts";

export type StructuralResult =
  | { readonly ok: true; readonly schema: OpenApiSchema }
  | { readonly ok: false; readonly errors: ReadonlyArray<string> };

type Mutable = { -readonly [K in keyof OpenApiSchema]: OpenApiSchema[K] };
type Json = JsonSchema.JsonSchema;

const Int32Range = { minimum: -2147483648, maximum: 2147483647 } as const;
const SafeIntRange = { minimum: Number.MIN_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER } as const;
/** How Effect encodes `Infinity`/`NaN` in JSON; a CRD field never carries them. */
const NonFiniteNames = ["Infinity", "-Infinity", "NaN"];

const isObject = (value: unknown): value is Json =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const isRange = (node: Json, range: { readonly minimum: number; readonly maximum: number }): boolean =>
  node.minimum === range.minimum && node.maximum === range.maximum && Object.keys(node).length === 2;

const isNonFiniteBranch = (node: Json): boolean =>
  node.type === "string" &&
  Array.isArray(node.enum) &&
  node.enum.length === NonFiniteNames.length &&
  node.enum.every((name) => NonFiniteNames.includes(String(name)));

const isNullBranch = (node: Json): boolean => node.type === "null" && Object.keys(node).length === 1;

const copied = ["description", "format", "pattern", "enum"] as const;
const bounds = ["minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"] as const;
const kubernetesKeys = [
  "x-kubernetes-int-or-string",
  "x-kubernetes-preserve-unknown-fields",
  "x-kubernetes-list-type",
  "x-kubernetes-list-map-keys",
  "x-kubernetes-map-type",
] as const;

/** Keeps the tighter of two bounds (`pick` is Math.max for lower bounds, Math.min for upper ones). */
const tighter = (current: number | undefined, next: number, pick: (a: number, b: number) => number) =>
  current === undefined ? next : pick(current, next);

class Converter {
  readonly errors: Array<string> = [];
  private readonly definitions: Record<string, Json>;
  constructor(definitions: JsonSchema.Definitions) {
    this.definitions = { ...definitions };
  }

  convert(node: Json, path: string, seen: ReadonlyArray<string> = []): OpenApiSchema {
    const out: Mutable = {};
    this.mergeInto(out, node, path, seen);
    if (out.type === undefined && out.properties !== undefined) out.type = "object";
    // An object with no declared fields (`Record(String, Unknown)`) keeps what it is given: without
    // this the apiserver would prune it to {} and the handler would silently get nothing. A schema
    // that means "any object, contents ignored" says so with preserve-unknown-fields: false.
    if (out.type === "object" && out.properties === undefined && out.additionalProperties === undefined) {
      if (out["x-kubernetes-preserve-unknown-fields"] === false)
        delete out["x-kubernetes-preserve-unknown-fields"];
      else out["x-kubernetes-preserve-unknown-fields"] = true;
    }
    if (out.properties !== undefined && typeof out.additionalProperties === "object") {
      this.errors.push(`${path}: properties and additionalProperties together are not structural`);
    }
    if (out.type === undefined && out["x-kubernetes-int-or-string"] !== true && out.anyOf === undefined) {
      this.errors.push(`${path}: no type (use a concrete schema; Unknown and Any have no structural form)`);
    }
    return out;
  }

  /** Folds one draft 2020-12 node (and its `allOf` parts) into `out`. */
  private mergeInto(out: Mutable, node: Json, path: string, seen: ReadonlyArray<string>): void {
    // A fragment from a `toJsonSchema` callback (configUnion's members) brings its own definitions.
    if (isObject(node.$defs)) Object.assign(this.definitions, node.$defs);
    const ref = node.$ref;
    if (typeof ref === "string") {
      const name = decodeURIComponent(ref.replace(/^#\/\$defs\//, ""))
        .replaceAll("~1", "/")
        .replaceAll("~0", "~");
      const target = this.definitions[name];
      if (target === undefined) this.errors.push(`${path}: unresolved ${ref}`);
      else if (seen.includes(name))
        this.errors.push(`${path}: recursive schema ${name} has no structural form`);
      else this.mergeInto(out, target, path, [...seen, name]);
    }
    this.mergeType(out, node, path);
    for (const key of copied) if (node[key] !== undefined) (out as Record<string, unknown>)[key] = node[key];
    if (node.default !== undefined) out.default = node.default;
    if (node.const !== undefined) out.enum = [node.const];
    for (const key of bounds) {
      const value = node[key];
      if (typeof value !== "number") continue;
      const pick = key.startsWith("min") ? Math.max : Math.min;
      out[key] = tighter(out[key], value, pick);
    }
    this.mergeNumbers(out, node);
    for (const key of kubernetesKeys)
      if (node[key] !== undefined) (out as Record<string, unknown>)[key] = node[key];
    const rules = node["x-kubernetes-validations"];
    if (Array.isArray(rules)) {
      out["x-kubernetes-validations"] = [
        ...(out["x-kubernetes-validations"] ?? []),
        ...(rules as Array<CelRule>),
      ];
    }
    if (isObject(node.properties)) {
      const properties: Record<string, OpenApiSchema> = { ...out.properties };
      for (const [name, child] of Object.entries(node.properties)) {
        if (isObject(child)) properties[name] = this.convert(child, `${path}.${name}`, seen);
      }
      out.properties = properties;
    }
    if (Array.isArray(node.required) && node.required.length > 0) {
      out.required = [...new Set([...(out.required ?? []), ...node.required.map(String)])];
    }
    if (isObject(node.additionalProperties)) {
      out.additionalProperties = this.convert(node.additionalProperties, `${path}.*`, seen);
    }
    if (isObject(node.items)) out.items = this.convert(node.items, `${path}[]`, seen);
    if (Array.isArray(node.prefixItems)) this.errors.push(`${path}: tuples have no structural form`);
    if (Array.isArray(node.allOf)) {
      for (const part of node.allOf) if (isObject(part)) this.mergeInto(out, part, path, seen);
    }
    const union = Array.isArray(node.anyOf) ? node.anyOf : Array.isArray(node.oneOf) ? node.oneOf : undefined;
    if (union !== undefined) this.mergeUnion(out, union.filter(isObject), path, seen);
    if (isObject(node.not) && node.not.type === "null") out.type ??= "object";
  }

  private mergeType(out: Mutable, node: Json, path: string): void {
    const types = (Array.isArray(node.type) ? node.type : [node.type]).filter((type) => type !== "null");
    if (types.length > 1) this.errors.push(`${path}: a value of types ${types.join(", ")} is not structural`);
    const [type] = types;
    if (
      type === "object" ||
      type === "array" ||
      type === "string" ||
      type === "integer" ||
      type === "number" ||
      type === "boolean"
    ) {
      // `integer` refines `number` (Effect writes `number` on a union branch and `integer` from a check).
      if (!(out.type === "integer" && type === "number")) out.type = type;
    }
  }

  /** Integer ranges Effect writes for isInt32/isInt become `format`; other bounds keep the tightest. */
  private mergeNumbers(out: Mutable, node: Json): void {
    if (isRange(node, Int32Range)) {
      out.format = "int32";
      return;
    }
    if (isRange(node, SafeIntRange)) {
      if (out.format === undefined) out.format = "int64";
      return;
    }
    // The safe-integer bounds of isInt say "exact in a JS number", not a limit the author chose.
    if (typeof node.minimum === "number" && node.minimum !== SafeIntRange.minimum) {
      out.minimum = tighter(out.minimum, node.minimum, Math.max);
    }
    if (typeof node.maximum === "number" && node.maximum !== SafeIntRange.maximum) {
      out.maximum = tighter(out.maximum, node.maximum, Math.min);
    }
    if (typeof node.exclusiveMinimum === "number") {
      out.minimum = tighter(out.minimum, node.exclusiveMinimum, Math.max);
      out.exclusiveMinimum = true;
    }
    if (typeof node.exclusiveMaximum === "number") {
      out.maximum = tighter(out.maximum, node.exclusiveMaximum, Math.min);
      out.exclusiveMaximum = true;
    }
  }

  /** Nullable and non-finite branches fold away; literals of one type become an enum. */
  private mergeUnion(out: Mutable, branches: ReadonlyArray<Json>, path: string, seen: ReadonlyArray<string>) {
    const kept = branches.filter((branch) => !isNonFiniteBranch(branch) && !isNullBranch(branch));
    if (kept.length < branches.length && branches.some(isNullBranch)) out.nullable = true;
    const [only] = kept;
    if (kept.length === 1 && only !== undefined) {
      this.mergeInto(out, only, path, seen);
      return;
    }
    const literals = kept.map((branch) => this.convert(branch, path, seen));
    const [first] = literals;
    const type = first?.type;
    if (type !== undefined && literals.every((branch) => branch.enum !== undefined && branch.type === type)) {
      out.type = type;
      out.enum = literals.flatMap((branch) => branch.enum ?? []);
      return;
    }
    this.errors.push(
      `${path}: a union of different shapes is not structural (use configUnion for exactly-one-of members)`,
    );
  }
}

const includeAnnotationKey = (key: string) => key.startsWith("x-kubernetes-");

/**
 * The structural schema of `schema`'s encoded side (what is stored in the cluster). Errors name the
 * path of every part that has no structural form.
 */
export const structuralSchema = (schema: Schema.Top, path = "spec"): StructuralResult => {
  const document = Schema.toJsonSchemaDocument(schema, { includeAnnotationKey });
  const converter = new Converter(document.definitions);
  const converted = converter.convert(document.schema, path);
  converter.errors.push(...keepConstraints(schema, converted, path));
  return converter.errors.length === 0
    ? { ok: true, schema: converted }
    : { ok: false, errors: [...new Set(converter.errors)] };
};
