import { join } from "node:path";
import { Result } from "effect";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { addedConfigMembers, generateCrds, ScheduleCrdFile } from "../../scripts/gen-crd.ts";
import type { OpenApiSchema } from "../../src/api/crd/openapi.ts";
import { formatPath } from "../../src/api/decode-error.ts";
import { ApiVersion, decodeEtcdOpsTask, Kind } from "../../src/etcd/api/etcdopstask.ts";
import { supersetReport } from "./crd-superset.ts";
import {
  crdOutDir,
  druidCrdDir,
  druidReference,
  druidTaskCrd,
  EtcdCrdFile,
  EtcdOpsTaskCrdFile,
  getAt,
  type Json,
  type JsonObject,
  openApiOf,
  ourTaskCrd,
  readText,
  repoRoot,
  setAt,
  walkProperties,
} from "./crd-support.ts";

// --------------------------------------------------------------------------------------------------
// Superset: druid's CRD must be contained, unchanged, in ours.

const configPropertiesAt =
  ".spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.config.properties";

describe("opstask's EtcdOpsTask CRD is a strict superset of druid's", () => {
  it("contains all of druid's CRD unchanged and adds only the new config members", () => {
    const report = supersetReport(druidTaskCrd(), ourTaskCrd());
    expect(report.violations).toEqual([]);
    expect(report.added).toEqual(addedConfigMembers.map(([name]) => `${configPropertiesAt}.${name}`));
  });

  /** Every value of one kind in druid's openAPIV3Schema, by path. */
  const collect = (root: OpenApiSchema, pick: (node: OpenApiSchema) => unknown): Map<string, unknown> => {
    const found = new Map<string, unknown>();
    walkProperties(root, (path, node) => {
      const value = pick(node);
      if (value !== undefined) found.set(path.join("."), value);
    });
    return found;
  };
  const categories: ReadonlyArray<readonly [string, (node: OpenApiSchema) => unknown, number]> = [
    ["type", (node) => node.type, 25],
    ["default", (node) => node.default, 3],
    ["enum", (node) => node.enum, 2],
    ["minimum", (node) => node.minimum, 3],
    ["format", (node) => node.format, 7],
    ["required", (node) => node.required, 5],
    ["minProperties", (node) => node.minProperties, 1],
    ["maxProperties", (node) => node.maxProperties, 1],
    ["maxItems", (node) => node.maxItems, 1],
    ["description", (node) => node.description, 20],
    ["x-kubernetes-validations", (node) => node["x-kubernetes-validations"], 4],
  ];
  for (const [category, pick, atLeast] of categories) {
    it(`every ${category} of druid's schema is present unchanged`, () => {
      const druid = collect(openApiOf(druidTaskCrd()), pick);
      const ours = collect(openApiOf(ourTaskCrd()), pick);
      expect(druid.size).toBeGreaterThanOrEqual(atLeast);
      for (const [path, value] of druid) expect(ours.get(path), path).toEqual(value);
    });
  }

  it("the CEL rules include druid's four, with their messages", () => {
    const rules = collect(openApiOf(ourTaskCrd()), (node) => node["x-kubernetes-validations"]);
    expect(rules.get("spec.config")).toEqual([{ message: "config is immutable", rule: "self == oldSelf" }]);
    expect(rules.get("spec.etcdName")).toEqual([
      { message: "etcdName is immutable", rule: "self == oldSelf" },
    ]);
    expect(rules.get("spec.ttlSecondsAfterFinished")).toEqual([
      { message: "ttlSecondsAfterFinished is immutable", rule: "self == oldSelf" },
    ]);
    expect(rules.get("spec.config.onDemandSnapshot")).toEqual([
      {
        message: "isFinal must be false (or omitted) when type is 'delta'",
        rule: "self.type == 'delta' ? !has(self.isFinal) || self.isFinal == false : true",
      },
    ]);
  });

  it("identity, printer columns and subresources are druid's", () => {
    const druid = druidTaskCrd();
    const ours = ourTaskCrd();
    for (const path of [["metadata"], ["spec", "group"], ["spec", "names"], ["spec", "scope"]]) {
      expect(getAt(ours, path), path.join(".")).toEqual(getAt(druid, path));
    }
    const version = (document: JsonObject) =>
      (getAt(document, ["spec", "versions"]) as ReadonlyArray<JsonObject>)[0];
    for (const key of ["name", "served", "storage", "subresources", "additionalPrinterColumns"]) {
      expect(version(ours)?.[key], key).toEqual(version(druid)?.[key]);
    }
    expect(version(ours)?.additionalPrinterColumns).toHaveLength(5);
    expect(getAt(ours, ["spec", "names", "shortNames"])).toEqual(["eot"]);
  });

  it("the new members are mutually exclusive with druid's (maxProperties: 1 kept)", () => {
    const config = getAt(ourTaskCrd(), ["spec", "versions"]) as ReadonlyArray<JsonObject>;
    const schema = getAt(config[0], [
      "schema",
      "openAPIV3Schema",
      "properties",
      "spec",
      "properties",
      "config",
    ]);
    expect(getAt(schema, ["maxProperties"])).toBe(1);
    expect(getAt(schema, ["minProperties"])).toBe(1);
    expect(Object.keys(getAt(schema, ["properties"]) as JsonObject)).toEqual([
      "onDemandMaintenance",
      "onDemandSnapshot",
      "onDemandSnapshotCompaction",
      "recoverFromQuorumLoss",
    ]);
  });

  describe("the superset check catches every kind of drift", () => {
    const ours = ourTaskCrd();
    const schemaPath = ["spec", "versions"];
    const mutateSchema = (mutate: (schema: JsonObject) => JsonObject): JsonObject => {
      const versions = getAt(ours, schemaPath) as ReadonlyArray<JsonObject>;
      const first = versions[0] ?? {};
      const schema = getAt(first, ["schema", "openAPIV3Schema"]) as JsonObject;
      return setAt(ours, schemaPath, [
        setAt(first, ["schema", "openAPIV3Schema"], mutate(schema)),
        ...versions.slice(1),
      ]);
    };
    const ttl = ["properties", "spec", "properties", "ttlSecondsAfterFinished"];
    const snapshot = ["properties", "spec", "properties", "config", "properties", "onDemandSnapshot"];
    const mutations: ReadonlyArray<readonly [string, JsonObject]> = [
      ["a changed default", mutateSchema((s) => setAt(s, [...ttl, "default"], 7200))],
      ["a tighter bound", mutateSchema((s) => setAt(s, [...ttl, "maximum"], 86400))],
      [
        "a dropped enum value",
        mutateSchema((s) => setAt(s, [...snapshot, "properties", "type", "enum"], ["full"])),
      ],
      [
        "an extra required key",
        mutateSchema((s) => setAt(s, [...snapshot, "required"], ["type", "isFinal"])),
      ],
      [
        "a removed CEL rule",
        mutateSchema((s) => setAt(s, [...snapshot, "x-kubernetes-validations"], undefined)),
      ],
      [
        "a removed property",
        mutateSchema((s) => setAt(s, ["properties", "spec", "properties", "etcdName"], undefined)),
      ],
      [
        "a dropped maxProperties",
        mutateSchema((s) =>
          setAt(s, ["properties", "spec", "properties", "config", "maxProperties"], undefined),
        ),
      ],
      ["a renamed short name", setAt(ours, ["spec", "names", "shortNames"], ["ot"])],
    ];
    for (const [name, mutated] of mutations) {
      it(`reports ${name}`, () => {
        expect(supersetReport(druidTaskCrd(), mutated).violations).not.toEqual([]);
      });
    }
  });
});

describe("the checked-in CRDs are what scripts/gen-crd.ts generates", () => {
  it("deploy/crds/ is up to date (run `node scripts/gen-crd.ts` when this fails)", () => {
    const generated = generateCrds();
    expect(generated.ok ? undefined : generated.error).toBeUndefined();
    for (const [name, content] of generated.files ?? new Map<string, string>()) {
      expect(readText(join(crdOutDir, name)), `deploy/crds/${name} is stale`).toBe(content);
    }
    expect([...(generated.files?.keys() ?? [])]).toEqual([EtcdOpsTaskCrdFile, ScheduleCrdFile]);
  });

  it("the EtcdOpsTask CRD keeps druid's text byte for byte (new members are spliced in whole lines)", () => {
    const druidLines = readText(join(druidCrdDir, EtcdOpsTaskCrdFile)).split("\n");
    const ourLines = readText(join(crdOutDir, EtcdOpsTaskCrdFile)).split("\n");
    // druid's lines appear in ours in order (ours = druid's + inserted lines).
    let next = 0;
    for (const line of ourLines) if (line === druidLines[next]) next += 1;
    expect(next).toBe(druidLines.length);
  });
});

// --------------------------------------------------------------------------------------------------
// Schema ↔ CRD agreement: every default, minimum, enum, format, required list, length bound and CEL
// rule of opstask's CRD (druid's included) is enforced by the Effect Schema, with the same numbers.

/** A valid body per config member, to vary one field at a time. */
const baselines: Readonly<Record<string, JsonObject>> = {
  onDemandSnapshot: { type: "full" },
  onDemandMaintenance: { compaction: {} },
  onDemandSnapshotCompaction: {},
  recoverFromQuorumLoss: {},
};

/** An input that breaks each CEL rule that applies on create (rule text → member body). */
const celCounterexamples: Readonly<Record<string, JsonObject>> = {
  "self.type == 'delta' ? !has(self.isFinal) || self.isFinal == false : true": {
    type: "delta",
    isFinal: true,
  },
  "has(self.compaction) || has(self.defragmentation)": { timeoutSeconds: 60 },
};

const ourSpec = (): OpenApiSchema => {
  const spec = openApiOf(ourTaskCrd()).properties?.spec;
  if (spec === undefined) throw new Error("no spec in opstask's CRD");
  return spec;
};

/** The task to vary for a path below `spec`, and where the path's value ends up after decoding. */
const subject = (path: ReadonlyArray<string>) => {
  const member = path[0] === "config" ? path[1] : undefined;
  const base = member === undefined ? baselines.onDemandSnapshot : baselines[member];
  if (base === undefined) throw new Error(`add a baseline for config member ${member}`);
  const task: JsonObject = {
    apiVersion: ApiVersion,
    kind: Kind,
    metadata: {
      name: "t",
      namespace: "ns",
      uid: "u",
      resourceVersion: "1",
      generation: 1,
      creationTimestamp: "2024-05-01T10:00:00Z",
    },
    spec: { config: { [member ?? "onDemandSnapshot"]: base } },
  };
  const wirePath = ["spec", ...path];
  const decodedPath = member === undefined ? wirePath : ["spec", "config", ...path.slice(2)];
  return { task, wirePath, decodedPath };
};

const errorsOf = (input: unknown): ReadonlyArray<string> => {
  const result = decodeEtcdOpsTask(input);
  return Result.isFailure(result) ? result.failure.errors : [];
};

const decodesTo = (input: unknown): unknown => {
  const result = decodeEtcdOpsTask(input);
  if (Result.isFailure(result)) throw new Error(result.failure.message);
  return result.success;
};

const fieldsOf = (predicate: (node: OpenApiSchema) => boolean) => {
  const found: Array<readonly [ReadonlyArray<string>, OpenApiSchema]> = [];
  walkProperties(ourSpec(), (path, node) => {
    if (path.length > 0 && predicate(node)) found.push([path, node]);
  });
  return found;
};

describe("the Effect Schema agrees with opstask's CRD (so they cannot drift)", () => {
  it("every config member of the CRD is known to the schema and has a baseline here", () => {
    const members = Object.keys(ourSpec().properties?.config?.properties ?? {});
    expect(members.sort()).toEqual(Object.keys(baselines).sort());
    for (const member of members) {
      const { task } = subject(["config", member]);
      expect(getAt(decodesTo(task), ["spec", "config", "kind"])).toBe(member);
    }
  });

  for (const [path, node] of fieldsOf((node) => node.default !== undefined)) {
    it(`default of ${path.join(".")} is ${JSON.stringify(node.default)}`, () => {
      const { task, wirePath, decodedPath } = subject(path);
      expect(getAt(decodesTo(setAt(task, wirePath, undefined)), decodedPath)).toEqual(node.default);
    });
  }

  for (const [path, node] of fieldsOf((node) => node.minimum !== undefined)) {
    const minimum = node.minimum ?? 0;
    it(`minimum of ${path.join(".")} is ${minimum}`, () => {
      const { task, wirePath, decodedPath } = subject(path);
      expect(getAt(decodesTo(setAt(task, wirePath, minimum)), decodedPath)).toBe(minimum);
      expect(errorsOf(setAt(task, wirePath, minimum - 1))).toEqual([
        `${formatPath(wirePath)}: expected a value greater than or equal to ${minimum}, got ${minimum - 1}`,
      ]);
    });
  }

  for (const [path] of fieldsOf((node) => node.format === "int32")) {
    it(`${path.join(".")} is an int32`, () => {
      const { task, wirePath } = subject(path);
      for (const bad of [2 ** 31, 1.5, "60"]) {
        const errors = errorsOf(setAt(task, wirePath, bad));
        expect(errors.length).toBeGreaterThan(0);
        for (const error of errors) expect(error.startsWith(`${formatPath(wirePath)}: `), error).toBe(true);
      }
    });
  }

  for (const [path, node] of fieldsOf((node) => node.enum !== undefined)) {
    it(`enum of ${path.join(".")} is ${JSON.stringify(node.enum)}`, () => {
      const { task, wirePath, decodedPath } = subject(path);
      for (const value of node.enum ?? []) {
        expect(getAt(decodesTo(setAt(task, wirePath, value as Json)), decodedPath)).toBe(value);
      }
      const expected = (node.enum ?? []).map((value) => JSON.stringify(value)).join(" | ");
      expect(errorsOf(setAt(task, wirePath, "not-a-value"))).toEqual([
        `${formatPath(wirePath)}: expected ${expected}, got "not-a-value"`,
      ]);
    });
  }

  for (const [path, node] of fieldsOf((node) => node.minLength !== undefined)) {
    it(`minLength of ${path.join(".")} is ${node.minLength}`, () => {
      const { task, wirePath } = subject(path);
      const minLength = node.minLength ?? 0;
      expect(errorsOf(setAt(task, wirePath, "x".repeat(minLength)))).toEqual([]);
      expect(errorsOf(setAt(task, wirePath, "x".repeat(minLength - 1)))[0]).toMatch(
        new RegExp(
          `^${formatPath(wirePath).replaceAll(".", "\\.")}: expected a value with a length of at least ${minLength}`,
        ),
      );
    });
  }

  for (const [path, node] of fieldsOf((node) => (node.required ?? []).length > 0)) {
    it(`required keys of ${path.join(".")} are ${JSON.stringify(node.required)}`, () => {
      for (const key of node.required ?? []) {
        const { task, wirePath } = subject([...path, key]);
        expect(errorsOf(setAt(task, wirePath, undefined))).toEqual([
          `${formatPath(wirePath)}: required field is missing`,
        ]);
      }
    });
  }

  for (const [path, node] of fieldsOf((node) => node.type !== undefined && node.enum === undefined)) {
    it(`${path.join(".")} must be of type ${node.type}`, () => {
      const { task, wirePath } = subject(path);
      const wrong: Json =
        node.type === "string" ? 5 : node.type === "boolean" ? "true" : node.type === "object" ? "x" : "1";
      const errors = errorsOf(setAt(task, wirePath, wrong));
      expect(errors.length, `${wirePath.join(".")} accepted ${JSON.stringify(wrong)}`).toBeGreaterThan(0);
      expect(errors[0]?.startsWith(`${formatPath(wirePath)}: expected`), errors[0]).toBe(true);
    });
  }

  for (const [path, node] of fieldsOf((node) => (node["x-kubernetes-validations"] ?? []).length > 0)) {
    for (const rule of node["x-kubernetes-validations"] ?? []) {
      if (rule.rule.includes("oldSelf")) continue; // transition rules: the apiserver's business on update
      it(`CEL rule of ${path.join(".")} (${rule.message}) is enforced with the same message`, () => {
        const counterexample = celCounterexamples[rule.rule];
        expect(counterexample, `add a counterexample for ${rule.rule}`).toBeDefined();
        const { task, wirePath } = subject(path);
        const errors = errorsOf(setAt(task, wirePath, counterexample ?? {}));
        expect(errors).toHaveLength(1);
        expect(errors[0]?.startsWith(formatPath(wirePath)), errors[0]).toBe(true);
        expect(errors[0]?.endsWith(`: ${rule.message}`), errors[0]).toBe(true);
      });
    }
  }

  it("config minProperties 1 / maxProperties 1 are enforced", () => {
    const { task } = subject(["config", "onDemandSnapshot"]);
    expect(errorsOf(setAt(task, ["spec", "config"], {}))).toHaveLength(1);
    expect(errorsOf(setAt(task, ["spec", "config"], { ...baselines }))).toHaveLength(1);
  });
});

// --------------------------------------------------------------------------------------------------
// The repository's copies of etcd-druid's files against etcd-druid's own (the release scripts/testbin
// builds, or a directory of them given): the vendored EtcdOpsTask CRD (gen-crd's input), the Etcd CRD
// deploy/crds ships, and the README's example task, which says what etcd-druid's example says.

const reference = await druidReference();
if (reference === undefined)
  console.log(
    "crd.test.ts: the comparison with etcd-druid's own CRD files did not run: build etcd-druid with scripts/testbin druid (scripts/test does), or set OPSTASK_DRUID_CRDS to a directory holding them",
  );
else
  describe(`the repository's copies equal etcd-druid's files (${reference.label})`, () => {
    it("vendor/etcd-druid/crds holds druid's EtcdOpsTask CRD, byte for byte", () => {
      expect(readText(join(druidCrdDir, EtcdOpsTaskCrdFile))).toBe(
        readText(join(reference.crdDir, EtcdOpsTaskCrdFile)),
      );
    });

    it("deploy/crds ships druid's Etcd CRD, byte for byte", () => {
      expect(readText(join(crdOutDir, EtcdCrdFile))).toBe(readText(join(reference.crdDir, EtcdCrdFile)));
    });

    it("examples/tasks/on-demand-snapshot.yaml asks for what druid's example asks for", () => {
      const specOf = (path: string) => (parse(readText(path)) as { spec?: unknown }).spec;
      expect(specOf(join(repoRoot, "examples", "tasks", "on-demand-snapshot.yaml"))).toEqual(
        specOf(reference.example),
      );
    });
  });
