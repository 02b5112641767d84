/**
 * Human-readable decode errors: one line per problem, `<path>: <message>`, e.g.
 * `spec.config.onDemandSnapshot.type: expected "full" | "delta", got "weekly"`. The message says what
 * the field must be, which is also the fix.
 */
import * as Data from "effect/Data";
import * as SchemaIssue from "effect/SchemaIssue";
import type { ObjectMeta } from "./meta.ts";
import { capText } from "./text-cap.ts";

/** The longest line of a decode error (a path and what is wrong there, with an echo of the value). */
export const MaxDecodeLineLength = 300;

const identifier = /^[A-Za-z_$][A-Za-z0-9_$-]*$/;

/** `["spec", "config", "a.b", 0]` → `spec.config["a.b"][0]` */
export const formatPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.reduce<string>((out, key) => {
    if (typeof key === "number") return `${out}[${key}]`;
    const name = String(key);
    if (!identifier.test(name)) return `${out}[${JSON.stringify(name)}]`;
    return out === "" ? name : `${out}.${name}`;
  }, "");

const leafHook: SchemaIssue.LeafHook = (issue) => {
  switch (issue._tag) {
    case "MissingKey":
      return "required field is missing";
    case "UnexpectedKey":
      return "unknown field";
    default:
      return SchemaIssue.defaultLeafHook(issue);
  }
};

const formatter = SchemaIssue.makeFormatterStandardSchemaV1({ leafHook });

const lowerFirst = (text: string): string => (text === "" ? text : text[0]?.toLowerCase() + text.slice(1));

/** One line per problem, in the order found, without duplicates. */
export const formatDecodeError = (issue: SchemaIssue.Issue): ReadonlyArray<string> => {
  const lines = formatter(issue).issues.map(({ path, message }) => {
    const where = formatPath(
      (path ?? []).map((segment) => (typeof segment === "object" ? segment.key : segment)),
    );
    // The message may echo the offending value whole: a line stays short enough to read.
    return capText(`${where === "" ? "(root)" : where}: ${lowerFirst(message)}`, MaxDecodeLineLength);
  });
  return [...new Set(lines)];
};

/**
 * Decoding an object failed. `errors` holds one line per problem (see `formatDecodeError`). For an
 * EtcdOpsTask, `metadata` is set when the metadata alone decodes, so that the controller can still
 * reject and delete a task whose spec or status it cannot read; it is undefined otherwise.
 */
export class DecodeError extends Data.TaggedError("DecodeError")<{
  readonly resource: string;
  readonly errors: ReadonlyArray<string>;
  readonly issue: SchemaIssue.Issue;
  readonly metadata: ObjectMeta | undefined;
}> {
  override get message(): string {
    return `invalid ${this.resource}:\n${this.errors.map((line) => `  ${line}`).join("\n")}`;
  }
}
