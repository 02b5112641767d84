/**
 * `create -f FILE`: a task manifest read from a file (YAML or JSON), its kind found among the CLI's
 * kinds, and checked with that kind's own decoder before anything is sent, so that a mistake is an
 * error naming the field here rather than a Rejected task there. Every problem is an `OptionError`
 * (exit 2) that names the file.
 */
import { readFile } from "node:fs/promises";
import { parseAllDocuments } from "yaml";
import { OptionError } from "../options.ts";
import { type Flags, resolveKind, stringFlag } from "./args.ts";
import { type CliKind, describeKinds, type ManifestObject } from "./cli-kind.ts";

export interface CheckedManifest {
  readonly kind: CliKind;
  /** What is sent: the file's object, with `apiVersion` and `kind` filled in when left out. */
  readonly body: ManifestObject;
  /** `metadata.namespace`, when the file gives one. */
  readonly namespace: string | undefined;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** The one YAML (or JSON) document of `text`. */
const parseOne = (text: string, file: string): unknown => {
  const documents = parseAllDocuments(text);
  const broken = documents.flatMap((document) => document.errors);
  if (broken[0] !== undefined) throw new OptionError(`${file} is not YAML or JSON: ${broken[0].message}`);
  if (documents.length === 0) throw new OptionError(`${file} is empty: expected one task object`);
  if (documents.length !== 1)
    throw new OptionError(
      `${file} holds ${documents.length} documents: create takes one task per file (split it, or run create once per file)`,
    );
  return documents[0]?.toJS();
};

const apiVersionOf = (kind: CliKind): string => `${kind.resource.group}/${kind.resource.version}`;

/** The kind the file's `apiVersion` and `kind` name (or `--kind`, or the default, when it names none). */
const kindOf = (manifest: ManifestObject, kinds: ReadonlyArray<CliKind>, flags: Flags, file: string) => {
  const flagged = resolveKind(flags, kinds);
  const { apiVersion, kind } = manifest;
  if (apiVersion === undefined && kind === undefined) return flagged;
  const named = kinds.find(
    (candidate) =>
      (kind === undefined || kind === candidate.resource.kind) &&
      (apiVersion === undefined || apiVersion === apiVersionOf(candidate)),
  );
  if (named === undefined)
    throw new OptionError(
      `${file}: apiVersion ${JSON.stringify(apiVersion ?? "")}, kind ${JSON.stringify(kind ?? "")} is not a kind this command creates: expected ${kinds
        .map((candidate) => `${apiVersionOf(candidate)} ${candidate.resource.kind}`)
        .join(", ")}`,
    );
  if (stringFlag(flags, "kind") !== undefined && named !== flagged)
    throw new OptionError(
      `${file} holds a ${named.resource.kind}, but --kind names ${describeKinds([flagged])}: drop --kind or fix the file`,
    );
  return named;
};

/** Reads `file`, finds its kind among `kinds` and checks it with that kind's decoder. */
export const readManifestFile = async (
  file: string,
  kinds: ReadonlyArray<CliKind>,
  flags: Flags,
): Promise<CheckedManifest> => {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    throw new OptionError(
      `cannot read ${file} (-f): ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  const manifest = parseOne(text, file);
  if (!isObject(manifest) || !isObject(manifest.metadata))
    throw new OptionError(
      `${file}: expected one task object with apiVersion, kind, metadata and spec; metadata is missing or not an object`,
    );
  const object: ManifestObject = { ...manifest, metadata: manifest.metadata };
  const kind = kindOf(object, kinds, flags, file);
  const { name, generateName, namespace } = object.metadata;
  if (typeof name !== "string" && typeof generateName !== "string")
    throw new OptionError(`${file}: metadata.name is missing: name the task (or give metadata.generateName)`);
  if (namespace !== undefined && typeof namespace !== "string")
    throw new OptionError(`${file}: metadata.namespace must be a namespace name`);
  const flagged = stringFlag(flags, "namespace");
  if (namespace !== undefined && flagged !== undefined && namespace !== flagged)
    throw new OptionError(`${file} names namespace ${namespace}, but -n names ${flagged}: drop one of them`);
  const errors = kind.check(object);
  if (errors.length > 0)
    throw new OptionError(
      `${file}: the ${kind.resource.kind} would be Rejected as invalid: ${errors.join("; ")}`,
    );
  return {
    kind,
    body: { apiVersion: apiVersionOf(kind), kind: kind.resource.kind, ...object },
    namespace,
  };
};
