/**
 * Every check of a schema either reaches its CRD or is an error: the apiserver must never accept an
 * object that the decoder then Rejects.
 *
 * Effect's JSON Schema writer leaves out what it cannot write exactly (a RegExp without the `u` flag,
 * a string length counted in UTF-16 units where JSON Schema counts code points, any filter without a
 * JSON Schema form) and the bounds of a `Schema.Number` (written as "a number or one of the non-finite
 * names"), with no word. This walk reads the checks from the schema itself, on its encoded side (what
 * the cluster stores), asks each for its exact JSON Schema fragment and makes sure the structural
 * schema holds it: a missing exact fragment is added, a check with no exact form is reported with its
 * path and the fix.
 */
import type * as Schema from "effect/Schema";
import * as SchemaAST from "effect/SchemaAST";
import type { CelRule, OpenApiSchema } from "../../api/crd/openapi.ts";
import { configMembersOf } from "../config-union.ts";

type Mutable = { -readonly [K in keyof OpenApiSchema]: OpenApiSchema[K] };
type Fragment = Readonly<Record<string, unknown>>;
type JsonType = "string" | "number" | "integer" | "boolean" | "object" | "array";

/** Keys that shape the schema rather than bound a value: the structural conversion places (or refuses) them. */
const shapeKeys = new Set([
  "properties",
  "required",
  "additionalProperties",
  "items",
  "$defs",
  "anyOf",
  "oneOf",
]);
/**
 * Bounds the structural conversion turns into a `format` (int32) or leaves out on purpose (isInt's
 * safe-integer range says "exact in a JS number", not a limit the author chose).
 */
const impliedBound = (node: Mutable, value: number): boolean =>
  Math.abs(value) === Number.MAX_SAFE_INTEGER ||
  (node.format === "int32" && (value === -2147483648 || value === 2147483647));
const lowerBounds = ["minLength", "minItems", "minProperties"] as const;
const upperBounds = ["maxLength", "maxItems", "maxProperties"] as const;

/** The JSON type a check of this node is written for (what Effect's writer passes to the check). */
const jsonTypeOf = (ast: SchemaAST.AST): JsonType | undefined => {
  switch (ast._tag) {
    case "String":
    case "TemplateLiteral":
      return "string";
    case "Number":
      return "number";
    case "Boolean":
      return "boolean";
    case "Objects":
      return "object";
    case "Arrays":
      return "array";
    default:
      return undefined;
  }
};

/** Effect's string lengths, counted in UTF-16 units; the apiserver counts a string's code points. */
const utf16Lengths = new Set([
  "effect/schema/isMinLength",
  "effect/schema/isMaxLength",
  "effect/schema/isBetweenLength",
]);

const fixOf = (check: SchemaAST.Filter<unknown>): string => {
  const id = check.annotations?.representation?.id;
  if (id === "effect/schema/isPattern")
    return "give the RegExp the `u` flag (/…/u), whose syntax JSON Schema shares";
  if (typeof id === "string" && utf16Lengths.has(id))
    return "count characters with maxChars(n) or minChars(n) from opstask/crd (code points, as the apiserver counts a string's length)";
  return "express it with celRule({ rule, message }, predicate) from opstask/crd, or drop the check";
};

const describe = (check: SchemaAST.Filter<unknown>): string => {
  const expected = check.annotations?.expected;
  return typeof expected === "string" ? `the check "${expected}"` : "a check";
};

const isApproximate = (output: unknown): output is readonly [Fragment, true] => Array.isArray(output);

const isFragment = (value: unknown): value is Fragment =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const sameRule = (a: CelRule, b: CelRule): boolean => a.rule === b.rule && a.message === b.message;

/**
 * Makes `node` hold `fragment` (one exact check's JSON Schema); the keys it cannot place are returned.
 * A bound already tighter stays; a second, different pattern becomes a CEL rule beside the first.
 */
const keep = (node: Mutable, fragment: Fragment): ReadonlyArray<string> => {
  const unplaced: Array<string> = [];
  for (const [key, value] of Object.entries(fragment)) {
    if (key === "description" || key === "title" || key === "format" || shapeKeys.has(key)) continue;
    if (typeof value === "number" && key.endsWith("imum") && impliedBound(node, value)) continue;
    if (key === "type") {
      if (value === "integer" && (node.type === "number" || node.type === undefined)) node.type = "integer";
      else if (value !== node.type && !(value === "number" && node.type === "integer")) unplaced.push(key);
    } else if ((key === "minimum" || key === "exclusiveMinimum") && typeof value === "number") {
      const exclusive = key === "exclusiveMinimum";
      if (node.minimum === undefined || node.minimum < value) {
        node.minimum = value;
        if (exclusive) node.exclusiveMinimum = true;
        else delete node.exclusiveMinimum;
      } else if (node.minimum === value && exclusive) node.exclusiveMinimum = true;
    } else if ((key === "maximum" || key === "exclusiveMaximum") && typeof value === "number") {
      const exclusive = key === "exclusiveMaximum";
      if (node.maximum === undefined || node.maximum > value) {
        node.maximum = value;
        if (exclusive) node.exclusiveMaximum = true;
        else delete node.exclusiveMaximum;
      } else if (node.maximum === value && exclusive) node.exclusiveMaximum = true;
    } else if ((lowerBounds as ReadonlyArray<string>).includes(key) && typeof value === "number") {
      const bound = key as (typeof lowerBounds)[number];
      node[bound] = Math.max(node[bound] ?? value, value);
    } else if ((upperBounds as ReadonlyArray<string>).includes(key) && typeof value === "number") {
      const bound = key as (typeof upperBounds)[number];
      node[bound] = Math.min(node[bound] ?? value, value);
    } else if (key === "pattern" && typeof value === "string") {
      if (node.pattern === undefined) node.pattern = value;
      else if (node.pattern !== value) {
        const rule = { rule: `self.matches(${JSON.stringify(value)})`, message: `must match ${value}` };
        const rules = node["x-kubernetes-validations"] ?? [];
        if (!rules.some((known) => sameRule(known, rule)))
          node["x-kubernetes-validations"] = [...rules, rule];
      }
    } else if (key === "multipleOf" && typeof value === "number") {
      if (node.multipleOf !== value) {
        if (node.multipleOf === undefined) node.multipleOf = value;
        else unplaced.push(key);
      }
    } else if (key === "enum" && Array.isArray(value)) {
      const allowed = node.enum;
      if (allowed === undefined) node.enum = value;
      else if (!allowed.every((item) => value.includes(item))) unplaced.push(key);
    } else if (key === "x-kubernetes-validations" && Array.isArray(value)) {
      const rules = node["x-kubernetes-validations"] ?? [];
      const missing = (value as ReadonlyArray<CelRule>).filter(
        (rule) => !rules.some((known) => sameRule(known, rule)),
      );
      if (missing.length > 0) node["x-kubernetes-validations"] = [...rules, ...missing];
    } else if (key === "allOf" && Array.isArray(value)) {
      for (const part of value) if (isFragment(part)) unplaced.push(...keep(node, part));
    } else unplaced.push(key);
  }
  return unplaced;
};

const filtersOf = (check: SchemaAST.Check<unknown>): ReadonlyArray<SchemaAST.Filter<unknown>> =>
  check._tag === "Filter" ? [check] : check.checks.flatMap(filtersOf);

class Walk {
  readonly errors: Array<string> = [];
  private readonly seen = new Set<SchemaAST.AST>();

  visit(ast: SchemaAST.AST, node: Mutable | undefined, path: string): void {
    if (node === undefined) return;
    if (ast._tag === "Suspend") {
      if (this.seen.has(ast)) return;
      this.seen.add(ast);
      this.visit(ast.thunk(), node, path);
      return;
    }
    this.checks(ast, node, path);
    if (ast._tag === "Objects") {
      const properties = node.properties as Record<string, Mutable> | undefined;
      for (const property of ast.propertySignatures)
        if (typeof property.name === "string")
          this.visit(property.type, properties?.[property.name], `${path}.${property.name}`);
      const values = node.additionalProperties;
      for (const index of ast.indexSignatures)
        if (typeof values === "object") this.visit(index.type, values as Mutable, `${path}.*`);
    } else if (ast._tag === "Arrays") {
      for (const rest of ast.rest) this.visit(rest, node.items as Mutable | undefined, `${path}[]`);
    } else if (ast._tag === "Union") {
      for (const member of ast.types) this.visit(member, node, path);
    }
  }

  private checks(ast: SchemaAST.AST, node: Mutable, path: string): void {
    const type = jsonTypeOf(ast);
    for (const filter of (ast.checks ?? []).flatMap(filtersOf)) {
      const callback = filter.annotations?.toJsonSchema;
      if (typeof callback !== "function") {
        this.errors.push(`${path}: ${describe(filter)} has no form in a CRD; ${fixOf(filter)}`);
        continue;
      }
      const output: unknown = callback({ type, schemas: [] });
      if (isApproximate(output) || !isFragment(output)) {
        this.errors.push(`${path}: ${describe(filter)} has no exact form in a CRD; ${fixOf(filter)}`);
        continue;
      }
      const unplaced = keep(node, output);
      if (unplaced.length > 0)
        this.errors.push(
          `${path}: ${describe(filter)} needs ${unplaced.join(", ")}, which the CRD cannot hold here; ${fixOf(filter)}`,
        );
      // A config union's members are schemas of their own behind one check: walk each.
      const members = configMembersOf(filter.annotations);
      const properties = node.properties as Record<string, Mutable> | undefined;
      for (const [name, member] of Object.entries(members ?? {}))
        this.visit(SchemaAST.toEncoded(member.ast), properties?.[name], `${path}.${name}`);
    }
  }
}

/**
 * Puts every exact check of `schema` into `converted` (its structural schema, changed in place) and
 * returns the checks that have no exact CRD form, each naming its path and the fix.
 */
export const keepConstraints = (
  schema: Schema.Top,
  converted: OpenApiSchema,
  path: string,
): ReadonlyArray<string> => {
  const walk = new Walk();
  walk.visit(SchemaAST.toEncoded(schema.ast), converted as Mutable, path);
  return walk.errors;
};
