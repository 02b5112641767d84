/** Loading the CRDs (druid's and opstask's) and the contract's fixtures for the API tests. */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Schema } from "effect";
import { parse, parseAllDocuments } from "yaml";
import { crdOutDir, druidCrdDir, EtcdCrdFile, EtcdOpsTaskCrdFile, repoRoot } from "../../scripts/gen-crd.ts";
import { type OpenApiSchema, OpenApiSchemaSchema } from "../../src/api/crd/openapi.ts";
import { builtDruid } from "../../src/devcluster/druid/peer.ts";

export { crdOutDir, druidCrdDir, EtcdCrdFile, EtcdOpsTaskCrdFile, repoRoot };

export const readText = (path: string): string => readFileSync(path, "utf8");

export type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json };
export type JsonObject = { readonly [key: string]: Json };

export const isJsonObject = (value: unknown): value is JsonObject =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** A CRD file's parsed document. */
export const loadCrdDocument = (path: string): JsonObject => {
  const document: unknown = parse(readText(path));
  if (!isJsonObject(document)) throw new Error(`${path} is not a YAML mapping`);
  return document;
};

const decodeOpenApi = Schema.decodeUnknownSync(OpenApiSchemaSchema);

/** The `openAPIV3Schema` of the CRD's first (only) version. */
export const openApiOf = (document: JsonObject): OpenApiSchema => {
  const spec = document.spec;
  const versions = isJsonObject(spec) ? spec.versions : undefined;
  const first = Array.isArray(versions) ? versions[0] : undefined;
  const schema = isJsonObject(first) && isJsonObject(first.schema) ? first.schema.openAPIV3Schema : undefined;
  return decodeOpenApi(schema);
};

export const druidTaskCrd = (): JsonObject => loadCrdDocument(join(druidCrdDir, EtcdOpsTaskCrdFile));
export const ourTaskCrd = (): JsonObject => loadCrdDocument(join(crdOutDir, EtcdOpsTaskCrdFile));
/** druid's Etcd CRD, which deploy/crds ships unchanged. */
export const druidEtcdCrd = (): JsonObject => loadCrdDocument(join(crdOutDir, EtcdCrdFile));

/** etcd-druid's own CRD files and its example task, which the repository's copies must equal. */
export interface DruidReference {
  /** Where they come from, for the test's title. */
  readonly label: string;
  readonly crdDir: string;
  readonly example: string;
}

/**
 * The druid release scripts/testbin built (its api module's CRDs and its examples, copied beside the
 * binary), or a directory `OPSTASK_DRUID_CRDS` names (its example as `example-on-demand-snapshot.yaml`).
 * Undefined when neither is there: the comparison does not run.
 */
export const druidReference = async (): Promise<DruidReference | undefined> => {
  const dir = process.env.OPSTASK_DRUID_CRDS;
  if (dir !== undefined && dir !== "")
    return existsSync(join(dir, EtcdOpsTaskCrdFile))
      ? { label: dir, crdDir: dir, example: join(dir, "example-on-demand-snapshot.yaml") }
      : undefined;
  const built = await builtDruid();
  return built === undefined
    ? undefined
    : {
        label: `etcd-druid ${built.revision} (scripts/testbin druid)`,
        crdDir: join(built.sourceDir, "api-crds"),
        example: join(built.sourceDir, "examples", "etcdopstask", "on-demand-snapshot.yaml"),
      };
};

/** The schema node at a property path (`["spec", "config", "onDemandSnapshot"]`). */
export const schemaAt = (root: OpenApiSchema, path: ReadonlyArray<string>): OpenApiSchema | undefined =>
  path.reduce<OpenApiSchema | undefined>((node, key) => node?.properties?.[key], root);

/** Every schema node below `root` (properties, and array items as `[]`), with its path. */
export const walkProperties = (
  root: OpenApiSchema,
  visit: (path: ReadonlyArray<string>, node: OpenApiSchema) => void,
  path: ReadonlyArray<string> = [],
): void => {
  visit(path, root);
  for (const [name, child] of Object.entries(root.properties ?? {}))
    walkProperties(child, visit, [...path, name]);
  if (root.items !== undefined) walkProperties(root.items, visit, [...path, "[]"]);
};

/** A deep copy with `value` set at `path` (or the key removed when `value` is undefined). */
export const setAt = (
  object: JsonObject,
  path: ReadonlyArray<string>,
  value: Json | undefined,
): JsonObject => {
  const [head, ...rest] = path;
  if (head === undefined) throw new Error("empty path");
  const copy: Record<string, Json> = { ...object };
  if (rest.length === 0) {
    if (value === undefined) delete copy[head];
    else copy[head] = value;
    return copy;
  }
  const child = object[head];
  copy[head] = setAt(isJsonObject(child) ? child : {}, rest, value);
  return copy;
};

/** The value at `path` of a decoded object. */
export const getAt = (value: unknown, path: ReadonlyArray<string>): unknown =>
  path.reduce<unknown>((node, key) => (isJsonObject(node) ? node[key] : undefined), value);

// ---------------------------------------------------------------------------------------------------
// The fixtures of docs/contract.md §14, read from the document itself so they cannot drift from it.

export const contractPath = join(repoRoot, "docs", "contract.md");

export const FixtureValues = {
  namespace: "test-ns",
  taskName: "task-a",
  port: 18080,
  now: "2024-05-01T10:00:00Z",
  etcdUid: "5f2b6c7e-0a55-4b7a-9d32-1b2c3d4e5f60",
  caBase64: "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t",
} as const;

/** The YAML blocks of docs/contract.md §14, placeholders filled in, in document order. */
export const contractFixtureBlocks = (): ReadonlyArray<JsonObject> => {
  const text = readText(contractPath);
  const start = text.indexOf("## 14. Fixtures");
  if (start < 0) throw new Error(`${contractPath} has no "## 14. Fixtures" section`);
  const end = text.indexOf("\n## ", start + 1);
  const section = text.slice(start, end < 0 ? undefined : end);
  const blocks = [...section.matchAll(/```yaml\n([\s\S]*?)```/g)].map((match) => match[1] ?? "");
  return blocks.flatMap((block) => {
    const filled = block
      .replaceAll("<ns>", FixtureValues.namespace)
      .replaceAll("<name>", FixtureValues.taskName)
      .replaceAll("<stand-in port>", String(FixtureValues.port))
      .replaceAll("<now>", FixtureValues.now)
      .replaceAll("<uid of the live Etcd object>", FixtureValues.etcdUid)
      .replaceAll("<base64 of the CA PEM>", FixtureValues.caBase64);
    return parseAllDocuments(filled).map((document) => {
      const value: unknown = document.toJS();
      if (!isJsonObject(value)) throw new Error(`contract fixture is not a mapping:\n${block}`);
      return value;
    });
  });
};

/** What the apiserver adds to a manifest on create. */
export const serverMetadata = (uid: string) => ({
  uid,
  resourceVersion: "4711",
  generation: 1,
  creationTimestamp: FixtureValues.now,
});
