import { fc, test } from "@fast-check/vitest";
import { Result } from "effect";
import { describe, expect, it } from "vitest";
import {
  backupRestorePort,
  clientServiceName,
  decodeEtcd,
  type Etcd,
  etcdClientPort,
  isBackupEnabled,
  isReady,
} from "../../../src/etcd/api/etcd.ts";
import { crdArbitrary, rfc3339Arbitrary } from "../../api/crd-arbitrary.ts";
import {
  contractFixtureBlocks,
  druidEtcdCrd,
  FixtureValues,
  getAt,
  isJsonObject,
  type Json,
  type JsonObject,
  openApiOf,
  setAt,
} from "../../api/crd-support.ts";

const decoded = (input: unknown): Etcd => {
  const result = decodeEtcd(input);
  if (Result.isFailure(result)) throw new Error(result.failure.message);
  return result.success;
};

const merge = (base: JsonObject, patch: JsonObject): JsonObject => {
  const out: Record<string, Json> = { ...base };
  for (const [key, value] of Object.entries(patch)) {
    const current = out[key];
    out[key] = isJsonObject(current) && isJsonObject(value) ? merge(current, value) : value;
  }
  return out;
};

// docs/contract.md §14: F-ETCD, its status, F-TLS's Etcd additions (in document order).
const blocks = contractFixtureBlocks();
const etcdManifest = blocks.find((block) => block.kind === "Etcd");
const readyStatus = blocks.find((block) => block.kind === undefined && block.status !== undefined);
const tlsAdditions = blocks.find(
  (block) => block.kind === undefined && getAt(block, ["spec", "backup", "tls"]) !== undefined,
);
if (etcdManifest === undefined || readyStatus === undefined || tlsAdditions === undefined) {
  throw new Error("docs/contract.md §14 no longer has the F-ETCD / status / F-TLS blocks this test reads");
}
const fEtcd = setAt(etcdManifest, ["metadata", "uid"], FixtureValues.etcdUid);
const fEtcdReady = merge(fEtcd, readyStatus);

describe("docs/contract.md §14 Etcd fixtures decode", () => {
  it("F-ETCD with its Ready status is backup-enabled and ready", () => {
    const etcd = decoded(fEtcdReady);
    expect(etcd.metadata).toEqual({
      name: "test-etcd",
      namespace: FixtureValues.namespace,
      uid: FixtureValues.etcdUid,
    });
    expect(etcd.spec.replicas).toBe(1);
    expect(etcd.spec.backup).toEqual({ port: FixtureValues.port, store: { prefix: "test-prefix" } });
    expect(isBackupEnabled(etcd)).toBe(true);
    expect(isReady(etcd)).toBe(true);
    expect(backupRestorePort(etcd)).toBe(FixtureValues.port);
    expect(clientServiceName(etcd)).toBe("test-etcd-client");
  });

  it("F-ETCD-NOBACKUP (spec.backup: {}) is not backup-enabled", () => {
    expect(isBackupEnabled(decoded(setAt(fEtcdReady, ["spec", "backup"], {})))).toBe(false);
  });

  it("F-ETCD-NOTREADY: no status, or Ready=False, is not ready", () => {
    expect(isReady(decoded(fEtcd))).toBe(false);
    const notReady = setAt(
      fEtcdReady,
      ["status", "conditions"],
      [
        {
          ...((getAt(readyStatus, ["status", "conditions"]) as ReadonlyArray<JsonObject>)[0] ?? {}),
          status: "False",
        },
      ],
    );
    expect(isReady(decoded(notReady))).toBe(false);
  });

  it("F-TLS: the CA secret reference and its data key are read", () => {
    const etcd = decoded(merge(fEtcdReady, tlsAdditions));
    expect(etcd.spec.backup.tls).toEqual({
      tlsCASecretRef: { name: "anything", dataKey: "ca.crt" },
      serverTLSSecretRef: { name: "etcdbr-server-tls" },
    });
  });

  it("defaults: backup-restore port 8080, etcd client port 2379", () => {
    const etcd = decoded(setAt(fEtcd, ["spec", "backup", "port"], undefined));
    expect(backupRestorePort(etcd)).toBe(8080);
    expect(etcdClientPort(etcd)).toBe(2379);
    expect(etcdClientPort(decoded(setAt(fEtcd, ["spec", "etcd", "clientPort"], 32379)))).toBe(32379);
  });
});

describe("readiness is only the Ready=True condition (docs/contract.md §8)", () => {
  const withConditions = (conditions: ReadonlyArray<JsonObject>, extra: JsonObject = {}) =>
    decoded(setAt(fEtcd, ["status"], { ...extra, conditions }));
  const condition = (type: string, status: string): JsonObject => ({
    type,
    status,
    reason: "r",
    message: "m",
    lastTransitionTime: FixtureValues.now,
    lastUpdateTime: FixtureValues.now,
  });
  it("AllMembersReady, status.ready and other conditions are ignored", () => {
    expect(isReady(withConditions([condition("AllMembersReady", "True")], { ready: true }))).toBe(false);
    expect(isReady(withConditions([condition("Ready", "Unknown")]))).toBe(false);
    expect(isReady(withConditions([condition("BackupReady", "False"), condition("Ready", "True")]))).toBe(
      true,
    );
  });
});

describe("invalid Etcds give errors naming the field path", () => {
  it("names each problem", () => {
    const broken = setAt(setAt(fEtcd, ["spec", "replicas"], "one"), ["spec", "backup", "store"], {
      provider: "S3",
    });
    const result = decodeEtcd(broken);
    expect(Result.isFailure(result) && result.failure.errors).toEqual([
      'spec.replicas: expected number, got "one"',
      "spec.backup.store.prefix: required field is missing",
    ]);
  });
  it("requires the uid (the StatefulSet ownership check compares it)", () => {
    const result = decodeEtcd(setAt(fEtcd, ["metadata", "uid"], undefined));
    expect(Result.isFailure(result) && result.failure.errors).toEqual([
      "metadata.uid: required field is missing",
    ]);
  });
});

// Every Etcd druid's CRD accepts decodes. The Etcd CRD's CEL rules only constrain fields the decoder
// does not read, so they are not modelled: the generated objects are a superset of the valid ones.
// `spec` is optional in the OpenAPI part, but the root CEL rules dereference `self.spec.etcd`, so the
// apiserver rejects an Etcd without it; `metadata` is always returned.
const etcdMetadata = fc.record({
  name: fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$/),
  namespace: fc.constant(FixtureValues.namespace),
  uid: fc.uuid(),
  resourceVersion: fc.nat().map(String),
  creationTimestamp: rfc3339Arbitrary,
});
const druidValidEtcd = crdArbitrary(openApiOf(druidEtcdCrd()), {
  overrides: new Map<string, fc.Arbitrary<unknown>>([
    ["apiVersion", fc.constant("druid.gardener.cloud/v1alpha1")],
    ["kind", fc.constant("Etcd")],
    ["metadata", etcdMetadata],
  ]),
  alwaysPresent: new Set(["metadata", "spec"]),
  ignoreCel: true,
  maxArrayLength: 2,
  maxMapKeys: 2,
});

describe("every Etcd druid's CRD accepts decodes", () => {
  test.prop([druidValidEtcd], { numRuns: 100 })("druid-valid Etcd", (raw) => {
    const etcd = decoded(raw);
    expect(isBackupEnabled(etcd)).toBe(getAt(raw, ["spec", "backup", "store"]) !== undefined);
    const conditions = getAt(raw, ["status", "conditions"]);
    const ready =
      Array.isArray(conditions) &&
      conditions.some((c: unknown) => isJsonObject(c) && c.type === "Ready" && c.status === "True");
    expect(isReady(etcd)).toBe(ready);
    expect(etcd.spec.backup.tls).toEqual(getAt(raw, ["spec", "backup", "tls"]));
    expect(etcd.spec.etcd.clientUrlTls).toEqual(getAt(raw, ["spec", "etcd", "clientUrlTls"]));
  });
});
