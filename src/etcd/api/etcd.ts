/**
 * The part of etcd-druid's `Etcd` (`druid.gardener.cloud/v1alpha1`) that task handlers read. Fields
 * are optional wherever druid's Etcd CRD leaves them optional, so every Etcd the CRD accepts decodes;
 * everything else in the object is accepted and dropped.
 */
import * as Effect from "effect/Effect";
import * as Result from "effect/Result";
import * as Schema from "effect/Schema";
import * as SchemaParser from "effect/SchemaParser";
import { DecodeError, formatDecodeError, Int32, Int64 } from "../../advanced.ts";

export const EtcdKind = "Etcd";
export const EtcdApiVersion = "druid.gardener.cloud/v1alpha1";

/** Port of the etcd-backup-restore server when `spec.backup.port` is absent (docs/contract.md §9). */
export const DefaultBackupRestorePort = 8080;
/** Port of the etcd client endpoint when `spec.etcd.clientPort` is absent (druid's default). */
export const DefaultEtcdClientPort = 2379;
/** Key of the CA bundle in the CA secret when `tlsCASecretRef.dataKey` is absent (docs/contract.md §10). */
export const DefaultCADataKey = "bundle.crt";

const optionalString = Schema.optionalKey(Schema.String);

export const SecretReferenceSchema = Schema.Struct({ name: optionalString, namespace: optionalString });

/** `tlsCASecretRef`: a secret reference plus the key holding the CA bundle. */
export const CASecretReferenceSchema = Schema.Struct({
  name: optionalString,
  namespace: optionalString,
  dataKey: optionalString,
});

/** `TLSConfig`: presence means the endpoint serves TLS. */
export const TLSConfigSchema = Schema.Struct({
  tlsCASecretRef: Schema.optionalKey(CASecretReferenceSchema),
  serverTLSSecretRef: Schema.optionalKey(SecretReferenceSchema),
  clientTLSSecretRef: Schema.optionalKey(SecretReferenceSchema),
});

/** `spec.backup.store`: where backups go. Its presence means "backup enabled" (docs/contract.md §8). */
export const StoreSpecSchema = Schema.Struct({
  prefix: Schema.String,
  provider: optionalString,
  container: optionalString,
  endpointOverride: optionalString,
  secretRef: Schema.optionalKey(SecretReferenceSchema),
});

export const BackupSpecSchema = Schema.Struct({
  port: Schema.optionalKey(Int32),
  image: optionalString,
  store: Schema.optionalKey(StoreSpecSchema),
  tls: Schema.optionalKey(TLSConfigSchema),
});

export const EtcdConfigSchema = Schema.Struct({
  clientPort: Schema.optionalKey(Int32),
  image: optionalString,
  /** Client TLS of etcd itself; the maintenance handler talks to etcd through it. */
  clientUrlTls: Schema.optionalKey(TLSConfigSchema),
});

/** `spec.externallyManagedMemberAddresses` (etcd-druid v0.38.1): members druid runs no pods, Services or PDB for. */
export const ExternallyManagedField = "spec.externallyManagedMemberAddresses";

export const EtcdSpecSchema = Schema.Struct({
  replicas: Int32,
  backup: BackupSpecSchema,
  etcd: EtcdConfigSchema,
  /** IP addresses or host names, without scheme or port (druid's CRD checks only that it has `replicas` entries). */
  externallyManagedMemberAddresses: Schema.optionalKey(Schema.Array(Schema.String)),
});

/** Druid's Etcd CRD requires all six keys; only `type` and `status` are needed here. */
export const EtcdConditionSchema = Schema.Struct({
  type: Schema.String,
  status: Schema.String,
  reason: optionalString,
  message: optionalString,
  lastTransitionTime: optionalString,
  lastUpdateTime: optionalString,
});

export const EtcdStatusSchema = Schema.Struct({
  conditions: Schema.optionalKey(Schema.Array(EtcdConditionSchema)),
  ready: Schema.optionalKey(Schema.Boolean),
  readyReplicas: Schema.optionalKey(Int32),
  observedGeneration: Schema.optionalKey(Int64),
});

export const EtcdMetaSchema = Schema.Struct({
  name: Schema.String,
  namespace: Schema.String,
  uid: Schema.String,
  resourceVersion: optionalString,
});

export const EtcdSchema = Schema.Struct({
  apiVersion: Schema.Literal(EtcdApiVersion).pipe(
    Schema.withDecodingDefaultKey(Effect.succeed(EtcdApiVersion)),
  ),
  kind: Schema.Literal(EtcdKind).pipe(Schema.withDecodingDefaultKey(Effect.succeed(EtcdKind))),
  metadata: EtcdMetaSchema,
  spec: EtcdSpecSchema,
  status: Schema.optionalKey(EtcdStatusSchema),
});

export type Etcd = typeof EtcdSchema.Type;
export type EtcdCondition = typeof EtcdConditionSchema.Type;
export type TLSConfig = typeof TLSConfigSchema.Type;
export type StoreSpec = typeof StoreSpecSchema.Type;

const decodeResult = SchemaParser.decodeUnknownResult(EtcdSchema, { errors: "all", reportInput: true });

/** Decodes an Etcd read from the apiserver. Never throws. */
export const decodeEtcd = (input: unknown): Result.Result<Etcd, DecodeError> =>
  Result.mapError(
    decodeResult(input),
    (issue) =>
      new DecodeError({ resource: EtcdKind, errors: formatDecodeError(issue), issue, metadata: undefined }),
  );

/** Backup is enabled when `spec.backup.store` is present; no other field matters (docs/contract.md §8). */
export const isBackupEnabled = (etcd: Etcd): boolean => etcd.spec.backup.store !== undefined;

/** Ready means some condition has `type: Ready` and `status: "True"` (docs/contract.md §8). */
export const isReady = (etcd: Etcd): boolean =>
  (etcd.status?.conditions ?? []).some(
    (condition) => condition.type === "Ready" && condition.status === "True",
  );

/** Port of the etcd-backup-restore server. */
export const backupRestorePort = (etcd: Etcd): number => etcd.spec.backup.port ?? DefaultBackupRestorePort;

/** Port of etcd's client endpoint. */
export const etcdClientPort = (etcd: Etcd): number => etcd.spec.etcd.clientPort ?? DefaultEtcdClientPort;

/** `<etcd>-client`: the Service in front of etcd and its backup-restore sidecar. */
export const clientServiceName = (etcd: Etcd): string => `${etcd.metadata.name}-client`;

/**
 * The addresses of an Etcd's externally managed members; empty when druid manages its pods (druid's
 * `ArePodsManagedByEtcdDruid`: an empty list counts as absent).
 */
export const externallyManagedMembers = (etcd: Etcd): ReadonlyArray<string> =>
  etcd.spec.externallyManagedMemberAddresses ?? [];
