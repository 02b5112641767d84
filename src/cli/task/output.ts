/**
 * `-o json|yaml|name|wide` as kubectl prints them: one object as itself, several as a `List`; `name`
 * as `<kind>.<group>/<name>`; `wide` is the table with more columns. With `-w`, each change is one
 * more document (JSON objects one after the other, YAML documents separated by `---`).
 * `metadata.managedFields` is left out unless asked for (`--show-managed-fields`), as kubectl does.
 */
import { stringify } from "yaml";
import type { KubeObject } from "../../kube/object.ts";
import { OptionError } from "../options.ts";
import { type CliKind, qualifiedName } from "./cli-kind.ts";

export const outputFormats = ["json", "yaml", "name", "wide"] as const;
export type OutputFormat = "table" | (typeof outputFormats)[number];

/** `-o`'s value, `table` when absent. */
export const parseOutputFormat = (raw: string | undefined): OutputFormat => {
  if (raw === undefined) return "table";
  const format = outputFormats.find((known) => known === raw);
  if (format === undefined)
    throw new OptionError(`invalid value "${raw}" for -o/--output: expected ${outputFormats.join(" | ")}`);
  return format;
};

export const nameOf = (kind: CliKind, object: KubeObject): string =>
  `${qualifiedName(kind)}/${object.metadata.name}`;

/** What JSON leaves raw that a terminal acts on: DEL, C1 and the bidi controls (C0 it escapes itself). */
const rawInJson = /[\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** The same JSON value, with those written as `\uXXXX` (they can only be inside strings): exact and safe to print. */
const json = (value: unknown): string =>
  `${JSON.stringify(value, null, 4).replace(rawInJson, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`)}\n`;

/** The object without `metadata.managedFields`, unless `show`. */
const withoutManagedFields = (object: KubeObject, show: boolean): KubeObject => {
  if (show || object.metadata.managedFields === undefined) return object;
  const { managedFields: _, ...metadata } = object.metadata;
  return { ...object, metadata };
};

/** The objects in `format` (json, yaml or name); `single`: one object asked for by name. */
export const renderObjects = (
  kind: CliKind,
  format: "json" | "yaml" | "name",
  all: ReadonlyArray<KubeObject>,
  single: boolean,
  showManagedFields = false,
): string => {
  if (format === "name") return all.map((object) => `${nameOf(kind, object)}\n`).join("");
  const objects = all.map((object) => withoutManagedFields(object, showManagedFields));
  const value =
    single && objects.length === 1
      ? objects[0]
      : { apiVersion: "v1", kind: "List", items: objects, metadata: { resourceVersion: "" } };
  return format === "json" ? json(value) : stringify(value);
};

/** One watched change in `format`: a JSON object, a YAML document, or a name. */
export const renderChange = (
  kind: CliKind,
  format: "json" | "yaml" | "name",
  object: KubeObject,
  showManagedFields = false,
): string =>
  format === "name"
    ? `${nameOf(kind, object)}\n`
    : format === "json"
      ? json(withoutManagedFields(object, showManagedFields))
      : `---\n${stringify(withoutManagedFields(object, showManagedFields))}`;
