import { readdirSync } from "node:fs";
import { join } from "node:path";
import { fc, test } from "@fast-check/vitest";
import { Result } from "effect";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import type { DecodeError } from "../../../src/api/decode-error.ts";
import { OperationStates, OperationTypes } from "../../../src/api/status-schema.ts";
import { isSupported, type TaskConfig } from "../../../src/etcd/api/config/task-config.ts";
import {
  ApiVersion,
  decodeEtcdOpsTask,
  decodeEtcdOpsTaskManifest,
  type EtcdOpsTask,
  encodeEtcdOpsTask,
  Finalizer,
  Kind,
} from "../../../src/etcd/api/etcdopstask.ts";
import { crdArbitrary, etcdOpsTaskCelPredicates, rfc3339Arbitrary } from "../../api/crd-arbitrary.ts";
import {
  contractFixtureBlocks,
  druidTaskCrd,
  FixtureValues,
  isJsonObject,
  type JsonObject,
  openApiOf,
  ourTaskCrd,
  readText,
  repoRoot,
  serverMetadata,
  setAt,
} from "../../api/crd-support.ts";

const meta = {
  name: "task-a",
  namespace: "test-ns",
  uid: "0b9a4a4e-4a8e-4f0e-9a43-6c1f0f1d2e3f",
  resourceVersion: "42",
  generation: 1,
  creationTimestamp: "2024-05-01T10:00:00Z",
};

const taskWith = (config: unknown, spec: JsonObject = {}): JsonObject =>
  ({ apiVersion: ApiVersion, kind: Kind, metadata: meta, spec: { ...spec, config } }) as JsonObject;

const decoded = (input: unknown): EtcdOpsTask => {
  const result = decodeEtcdOpsTask(input);
  if (Result.isFailure(result)) throw new Error(result.failure.message);
  return result.success;
};

const failure = (input: unknown): DecodeError => {
  const result = decodeEtcdOpsTask(input);
  if (Result.isSuccess(result)) throw new Error(`decoded unexpectedly: ${JSON.stringify(result.success)}`);
  return result.failure;
};

const configOf = (input: unknown): TaskConfig => decoded(input).spec.config;

describe("the examples and the contract's fixtures decode", () => {
  const examples = join(repoRoot, "examples", "tasks");

  it("decodes every examples/tasks manifest, each one of its own config member", () => {
    const members = readdirSync(examples)
      .filter((file) => file.endsWith(".yaml"))
      .sort()
      .map((file) => {
        const manifest = decodeEtcdOpsTaskManifest(parse(readText(join(examples, file))));
        if (Result.isFailure(manifest)) throw new Error(`${file}: ${manifest.failure.errors.join("; ")}`);
        return configOf(
          setAt(parse(readText(join(examples, file))) as JsonObject, ["metadata"], {
            name: "x",
            namespace: "default",
            ...serverMetadata("uid-0"),
          }),
        ).kind;
      });
    expect(members).toEqual([
      "onDemandMaintenance",
      "onDemandSnapshotCompaction",
      "onDemandSnapshot",
      "recoverFromQuorumLoss",
    ]);
  });

  it("decodes examples/tasks/on-demand-snapshot.yaml (the README's), as written and as stored", () => {
    const example: unknown = parse(readText(join(examples, "on-demand-snapshot.yaml")));
    const manifest = decodeEtcdOpsTaskManifest(example);
    expect(Result.isSuccess(manifest)).toBe(true);
    if (!isJsonObject(example) || !isJsonObject(example.metadata))
      throw new Error("example is not an object");
    const task = decoded({ ...example, metadata: { ...example.metadata, ...serverMetadata("uid-1") } });
    expect(task.spec).toEqual({
      etcdName: "etcd-test",
      ttlSecondsAfterFinished: 3600,
      config: { kind: "onDemandSnapshot", type: "full", timeoutSecondsFull: 900, timeoutSecondsDelta: 60 },
    });
  });

  it("decodes F-TASK (docs/contract.md §14) and applies the CRD defaults", () => {
    const tasks = contractFixtureBlocks().filter((block) => block.kind === Kind);
    expect(tasks).toHaveLength(1);
    for (const fixture of tasks) {
      expect(Result.isSuccess(decodeEtcdOpsTaskManifest(fixture))).toBe(true);
      const stored = setAt(fixture, ["metadata"], {
        ...(fixture.metadata as JsonObject),
        ...serverMetadata("uid-2"),
      });
      const task = decoded(stored);
      expect(task.metadata).toMatchObject({
        name: FixtureValues.taskName,
        namespace: FixtureValues.namespace,
      });
      expect(task.spec).toEqual({
        etcdName: "test-etcd",
        ttlSecondsAfterFinished: 10,
        config: {
          kind: "onDemandSnapshot",
          type: "full",
          isFinal: false,
          timeoutSecondsFull: 150,
          timeoutSecondsDelta: 60,
        },
      });
    }
  });
});

describe("defaults (CRD §1.2) are applied on decode", () => {
  it("ttlSecondsAfterFinished defaults to 3600", () => {
    expect(decoded(taskWith({ onDemandSnapshot: { type: "delta" } })).spec.ttlSecondsAfterFinished).toBe(
      3600,
    );
  });
  it("both snapshot timeouts are defaulted whatever the type; isFinal stays absent", () => {
    for (const type of ["full", "delta"] as const) {
      expect(configOf(taskWith({ onDemandSnapshot: { type } }))).toEqual({
        kind: "onDemandSnapshot",
        type,
        timeoutSecondsDelta: 60,
        timeoutSecondsFull: 900,
      });
    }
  });
  it("onDemandMaintenance.timeoutSeconds defaults to 300", () => {
    expect(configOf(taskWith({ onDemandMaintenance: { compaction: {} } }))).toEqual({
      kind: "onDemandMaintenance",
      compaction: {},
      timeoutSeconds: 300,
    });
  });
  it("onDemandSnapshotCompaction.timeoutSeconds defaults to 1800", () => {
    expect(configOf(taskWith({ onDemandSnapshotCompaction: {} }))).toEqual({
      kind: "onDemandSnapshotCompaction",
      timeoutSeconds: 1800,
    });
  });
  it("apiVersion and kind are filled in when a list item lacks them", () => {
    const { apiVersion: _a, kind: _k, ...bare } = taskWith({ onDemandSnapshot: { type: "full" } });
    expect(decoded(bare)).toMatchObject({ apiVersion: ApiVersion, kind: Kind });
  });
  it("values that are present are kept", () => {
    const config = {
      onDemandSnapshot: { type: "full", isFinal: true, timeoutSecondsDelta: 10, timeoutSecondsFull: 120 },
    };
    expect(decoded(taskWith(config, { ttlSecondsAfterFinished: 1 })).spec).toEqual({
      ttlSecondsAfterFinished: 1,
      config: {
        kind: "onDemandSnapshot",
        type: "full",
        isFinal: true,
        timeoutSecondsDelta: 10,
        timeoutSecondsFull: 120,
      },
    });
  });
});

describe("every member of the config union decodes to its kind", () => {
  it("onDemandMaintenance with compaction and defragmentation (both allowed)", () => {
    const config = {
      onDemandMaintenance: { compaction: { physical: true }, defragmentation: {}, timeoutSeconds: 10 },
    };
    expect(configOf(taskWith(config))).toEqual({
      kind: "onDemandMaintenance",
      compaction: { physical: true },
      defragmentation: {},
      timeoutSeconds: 10,
    });
  });
  it("onDemandMaintenance defragmentation body is pruned to {} like the apiserver does", () => {
    expect(configOf(taskWith({ onDemandMaintenance: { defragmentation: { extra: 1 } } }))).toMatchObject({
      defragmentation: {},
    });
  });
  it("onDemandSnapshotCompaction with an image", () => {
    const config = {
      onDemandSnapshotCompaction: {
        image: "europe-docker.pkg.dev/gardener/etcdbrctl:v0.30.0",
        timeoutSeconds: 60,
      },
    };
    expect(configOf(taskWith(config))).toEqual({
      kind: "onDemandSnapshotCompaction",
      image: "europe-docker.pkg.dev/gardener/etcdbrctl:v0.30.0",
      timeoutSeconds: 60,
    });
  });
});

describe("an unknown config member decodes as unsupported (never blocks deletion)", () => {
  it("keeps the member name and body", () => {
    const config = configOf(taskWith({ onDemandQuorumRecovery: { members: 3 } }));
    expect(config).toEqual({ kind: "unsupported", member: "onDemandQuorumRecovery", value: { members: 3 } });
    expect(isSupported(config)).toBe(false);
  });
  it("decodes whatever the body is", () => {
    for (const body of [null, 5, "x", [], {}]) {
      expect(configOf(taskWith({ somethingNew: body }))).toEqual({
        kind: "unsupported",
        member: "somethingNew",
        value: body,
      });
    }
  });
  it("re-encodes to the wire form it came from", () => {
    const task = decoded(taskWith({ somethingNew: { a: [1, 2] } }));
    const encoded = encodeEtcdOpsTask(task);
    expect(Result.isSuccess(encoded) && encoded.success.spec.config).toEqual({ somethingNew: { a: [1, 2] } });
  });
  it("known members are supported", () => {
    expect(isSupported(configOf(taskWith({ onDemandSnapshot: { type: "full" } })))).toBe(true);
  });
});

describe("invalid objects give one error line per problem, naming the field path", () => {
  const cases: ReadonlyArray<readonly [string, unknown, string]> = [
    [
      "enum",
      taskWith({ onDemandSnapshot: { type: "weekly" } }),
      'spec.config.onDemandSnapshot.type: expected "full" | "delta", got "weekly"',
    ],
    [
      "required type",
      taskWith({ onDemandSnapshot: {} }),
      "spec.config.onDemandSnapshot.type: required field is missing",
    ],
    [
      "isFinal with delta (V8)",
      taskWith({ onDemandSnapshot: { type: "delta", isFinal: true } }),
      "spec.config.onDemandSnapshot.isFinal: isFinal must be false (or omitted) when type is 'delta'",
    ],
    [
      "timeoutSecondsDelta minimum (V9)",
      taskWith({ onDemandSnapshot: { type: "delta", timeoutSecondsDelta: 9 } }),
      "spec.config.onDemandSnapshot.timeoutSecondsDelta: expected a value greater than or equal to 10, got 9",
    ],
    [
      "timeoutSecondsFull minimum (V10)",
      taskWith({ onDemandSnapshot: { type: "full", timeoutSecondsFull: 119 } }),
      "spec.config.onDemandSnapshot.timeoutSecondsFull: expected a value greater than or equal to 120, got 119",
    ],
    [
      "ttl minimum (V11)",
      taskWith({ onDemandSnapshot: { type: "full" } }, { ttlSecondsAfterFinished: 0 }),
      "spec.ttlSecondsAfterFinished: expected a value greater than or equal to 1, got 0",
    ],
    [
      "type mismatch",
      taskWith({ onDemandSnapshot: { type: "full" } }, { ttlSecondsAfterFinished: "10" }),
      'spec.ttlSecondsAfterFinished: expected number, got "10"',
    ],
    [
      "int32 range",
      taskWith({ onDemandSnapshot: { type: "full" } }, { ttlSecondsAfterFinished: 2 ** 31 }),
      "spec.ttlSecondsAfterFinished: expected a value between -2147483648 and 2147483647, got 2147483648",
    ],
    [
      "spec required (V1)",
      { apiVersion: ApiVersion, kind: Kind, metadata: meta },
      "spec: required field is missing",
    ],
    ["config required (V2)", { metadata: meta, spec: {} }, "spec.config: required field is missing"],
    [
      "empty config (V3)",
      taskWith({}),
      "spec.config: expected exactly one member (one of onDemandMaintenance, onDemandSnapshot, onDemandSnapshotCompaction, recoverFromQuorumLoss), got none",
    ],
    [
      "two members (V4)",
      taskWith({ onDemandSnapshot: { type: "full" }, onDemandSnapshotCompaction: {} }),
      "spec.config: expected exactly one member (one of onDemandMaintenance, onDemandSnapshot, onDemandSnapshotCompaction, recoverFromQuorumLoss), got onDemandSnapshot, onDemandSnapshotCompaction",
    ],
    ["config not an object", taskWith("full"), 'spec.config: expected object, got "full"'],
    [
      "maintenance without an operation",
      taskWith({ onDemandMaintenance: { timeoutSeconds: 30 } }),
      "spec.config.onDemandMaintenance: at least one of compaction or defragmentation must be set",
    ],
    [
      "maintenance defragmentation not an object",
      taskWith({ onDemandMaintenance: { defragmentation: true } }),
      "spec.config.onDemandMaintenance.defragmentation: expected object, got true",
    ],
    [
      "maintenance timeout minimum",
      taskWith({ onDemandMaintenance: { compaction: {}, timeoutSeconds: 9 } }),
      "spec.config.onDemandMaintenance.timeoutSeconds: expected a value greater than or equal to 10, got 9",
    ],
    [
      "compaction physical type",
      taskWith({ onDemandMaintenance: { compaction: { physical: "yes" } } }),
      'spec.config.onDemandMaintenance.compaction.physical: expected boolean, got "yes"',
    ],
    [
      "snapshot compaction timeout minimum",
      taskWith({ onDemandSnapshotCompaction: { timeoutSeconds: 59 } }),
      "spec.config.onDemandSnapshotCompaction.timeoutSeconds: expected a value greater than or equal to 60, got 59",
    ],
    [
      "snapshot compaction empty image",
      taskWith({ onDemandSnapshotCompaction: { image: "" } }),
      'spec.config.onDemandSnapshotCompaction.image: expected a value with a length of at least 1, got ""',
    ],
    [
      "status.state enum (V14)",
      { ...taskWith({ onDemandSnapshot: { type: "full" } }), status: { state: "Done" } },
      'status.state: expected "Pending" | "InProgress" | "Succeeded" | "Failed" | "Rejected", got "Done"',
    ],
    [
      "lastOperation keys required (V16)",
      {
        ...taskWith({ onDemandSnapshot: { type: "full" } }),
        status: {
          lastOperation: {
            type: "Admit",
            state: "InProgress",
            description: "x",
            lastUpdateTime: "2024-05-01T10:00:00Z",
          },
        },
      },
      "status.lastOperation.runID: required field is missing",
    ],
    [
      "lastOperation.type outside what the controller writes",
      {
        ...taskWith({ onDemandSnapshot: { type: "full" } }),
        status: {
          lastOperation: {
            type: "Reconcile",
            state: "InProgress",
            description: "x",
            runID: "r",
            lastUpdateTime: "2024-05-01T10:00:00Z",
          },
        },
      },
      'status.lastOperation.type: expected "Admit" | "Execution" | "Cleanup", got "Reconcile"',
    ],
    [
      "lastErrors item keys required (V15)",
      {
        ...taskWith({ onDemandSnapshot: { type: "full" } }),
        status: { lastErrors: [{ code: "ERR_GET_ETCD", description: "d" }] },
      },
      "status.lastErrors[0].observedAt: required field is missing",
    ],
    [
      "lastErrors maxItems (V15)",
      {
        ...taskWith({ onDemandSnapshot: { type: "full" } }),
        status: {
          lastErrors: Array.from({ length: 11 }, () => ({
            code: "E",
            description: "d",
            observedAt: "2024-05-01T10:00:00Z",
          })),
        },
      },
      "status.lastErrors: expected a value with a length of at most 10",
    ],
    [
      "date-time format",
      { ...taskWith({ onDemandSnapshot: { type: "full" } }), status: { lastTransitionTime: "yesterday" } },
      'status.lastTransitionTime: expected an RFC 3339 date-time such as 2024-05-01T10:00:00Z, got "yesterday"',
    ],
    [
      "wrong apiVersion",
      { ...taskWith({ onDemandSnapshot: { type: "full" } }), apiVersion: "v1" },
      'apiVersion: expected "druid.gardener.cloud/v1alpha1", got "v1"',
    ],
    [
      "server metadata required",
      { ...taskWith({ onDemandSnapshot: { type: "full" } }), metadata: { name: "a", namespace: "b" } },
      "metadata.uid: required field is missing",
    ],
    [
      "label keys are quoted in paths",
      {
        ...taskWith({ onDemandSnapshot: { type: "full" } }),
        metadata: { ...meta, labels: { "app.kubernetes.io/name": 1 } },
      },
      'metadata.labels["app.kubernetes.io/name"]: expected string, got 1',
    ],
    ["not an object", "EtcdOpsTask", '(root): expected object, got "EtcdOpsTask"'],
  ];

  for (const [name, input, line] of cases) {
    it(`${name}: ${line}`, () => {
      const errors = failure(input).errors;
      expect(
        errors.some((error) => error.startsWith(line)),
        errors.join("\n"),
      ).toBe(true);
    });
  }

  it("reports every problem at once, not just the first", () => {
    const input = taskWith(
      { onDemandSnapshot: { type: "weekly", timeoutSecondsFull: 9 } },
      { ttlSecondsAfterFinished: 0 },
    );
    expect(failure(input).errors).toEqual([
      "spec.ttlSecondsAfterFinished: expected a value greater than or equal to 1, got 0",
      'spec.config.onDemandSnapshot.type: expected "full" | "delta", got "weekly"',
      "spec.config.onDemandSnapshot.timeoutSecondsFull: expected a value greater than or equal to 120, got 9",
    ]);
  });

  it("the error message lists the lines", () => {
    expect(failure(taskWith({ onDemandSnapshot: {} })).message).toBe(
      "invalid EtcdOpsTask:\n  spec.config.onDemandSnapshot.type: required field is missing",
    );
  });

  it("carries the metadata when only spec or status is broken, so the task can still be deleted", () => {
    expect(failure(taskWith({ onDemandSnapshot: { type: "weekly" } })).metadata).toEqual(meta);
    expect(failure({ metadata: { name: "x" }, spec: {} }).metadata).toBeUndefined();
  });
});

// --------------------------------------------------------------------------------------------------
// Property tests: objects generated from the CRDs' openAPIV3Schema.

const dnsLabel = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$/);

/** Metadata as the apiserver returns it, plus fields the schema ignores. */
const storedMetadata = fc.record(
  {
    name: dnsLabel,
    namespace: dnsLabel,
    uid: fc.uuid(),
    resourceVersion: fc.nat().map(String),
    generation: fc.integer({ min: 1, max: 10_000 }),
    creationTimestamp: rfc3339Arbitrary,
    deletionTimestamp: rfc3339Arbitrary,
    finalizers: fc.array(fc.constantFrom(Finalizer, "example.com/other"), { maxLength: 2 }),
    labels: fc.dictionary(dnsLabel, fc.string(), { maxKeys: 3 }),
    annotations: fc.dictionary(fc.string({ minLength: 1 }), fc.string(), { maxKeys: 3 }),
    managedFields: fc.constant([{ manager: "kubectl", operation: "Update" }]),
  },
  { requiredKeys: ["name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp"] },
);

const overrides = new Map<string, fc.Arbitrary<unknown>>([
  ["apiVersion", fc.constant(ApiVersion)],
  ["kind", fc.constant(Kind)],
  ["metadata", storedMetadata],
  // druid's CRD allows any string here; the controller (druid's and ours) writes only these.
  ["status.lastOperation.type", fc.constantFrom(...OperationTypes)],
  ["status.lastOperation.state", fc.constantFrom(...OperationStates)],
]);

const arbitraryOptions = {
  overrides,
  alwaysPresent: new Set(["metadata"]),
  celPredicates: etcdOpsTaskCelPredicates,
};
const druidValidTask = crdArbitrary(openApiOf(druidTaskCrd()), arbitraryOptions);
const opstaskValidTask = crdArbitrary(openApiOf(ourTaskCrd()), arbitraryOptions);

const asObject = (value: unknown): JsonObject => {
  if (!isJsonObject(value)) throw new Error("generated a non-object");
  return value;
};

/** What decoding must produce for a generated object: the CRD's defaults, `config` as a tagged value. */
const checkDecodes = (raw: JsonObject): void => {
  const task = decoded(raw);
  const spec = asObject(raw.spec);
  const wireConfig = asObject(spec.config);
  const [member] = Object.keys(wireConfig);
  expect(task.spec.ttlSecondsAfterFinished).toBe(spec.ttlSecondsAfterFinished ?? 3600);
  expect(task.spec.etcdName).toBe(spec.etcdName);
  expect(task.spec.config.kind).toBe(member);
  expect(task.status).toEqual(raw.status);
  expect(task.metadata.uid).toBe(asObject(raw.metadata).uid);
  // Decoding is idempotent through encoding.
  const encoded = encodeEtcdOpsTask(task);
  expect(Result.isSuccess(encoded)).toBe(true);
  if (Result.isSuccess(encoded)) expect(decoded(encoded.success)).toEqual(task);
};

describe("every object druid's CRD accepts decodes", () => {
  test.prop([druidValidTask], { numRuns: 300 })("druid-valid task", (raw) => {
    const task = asObject(raw);
    checkDecodes(task);
    const body = asObject(asObject(asObject(task.spec).config).onDemandSnapshot);
    expect(decoded(task).spec.config).toEqual({
      kind: "onDemandSnapshot",
      ...body,
      timeoutSecondsDelta: body.timeoutSecondsDelta ?? 60,
      timeoutSecondsFull: body.timeoutSecondsFull ?? 900,
    });
  });
});

describe("every object opstask's CRD accepts decodes", () => {
  test.prop([opstaskValidTask], { numRuns: 300 })("opstask-valid task", (raw) => {
    checkDecodes(asObject(raw));
  });
});
