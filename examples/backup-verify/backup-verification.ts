/**
 * The BackupVerification task resource (`examples.opstask.dev/v1alpha1`, crd.yaml beside this file)
 * and its `TaskKind`. The schema mirrors the CRD, defaults included, so an object from the cluster and
 * one built in a test decode alike.
 */
import * as Effect from "effect/Effect";
import * as Schema from "effect/Schema";
import { configMember, configUnion, defineTaskKind, ObjectMeta, TaskStatusSchema } from "../../src/index.ts";

export const Group = "examples.opstask.dev";
export const Version = "v1alpha1";
export const ApiVersion = `${Group}/${Version}` as const;
export const Kind = "BackupVerification";
export const Plural = "backupverifications";
export const Finalizer = "examples.opstask.dev/backup-verification";

const positiveInt32 = (fallback: number) =>
  Schema.Number.check(Schema.isInt32(), Schema.isGreaterThanOrEqualTo(1)).pipe(
    Schema.withDecodingDefaultKey(Effect.succeed(fallback)),
  );

/** `spec.config.checksum`: download `url`, compare its SHA-256. */
export const ChecksumConfig = Schema.Struct({
  url: Schema.String.check(Schema.isPattern(/^https?:\/\//, { expected: "an http:// or https:// URL" })),
  expectedSha256: Schema.String.check(
    Schema.isPattern(/^[0-9a-f]{64}$/, { expected: "64 lowercase hex digits" }),
  ),
  timeoutSeconds: positiveInt32(30),
});

export const VerificationConfig = configUnion({ checksum: ChecksumConfig });

export const BackupVerificationSchema = Schema.Struct({
  apiVersion: Schema.optionalKey(Schema.Literal(ApiVersion)),
  kind: Schema.optionalKey(Schema.Literal(Kind)),
  metadata: ObjectMeta,
  spec: Schema.Struct({
    /** Verifications of one backup are admitted one at a time. */
    backupName: Schema.optionalKey(Schema.String),
    ttlSecondsAfterFinished: positiveInt32(3600),
    config: VerificationConfig,
  }),
  status: Schema.optionalKey(TaskStatusSchema),
});

export type BackupVerification = typeof BackupVerificationSchema.Type;
export type VerificationConfig = BackupVerification["spec"]["config"];

export const backupVerificationKind = defineTaskKind({
  group: Group,
  version: Version,
  kind: Kind,
  plural: Plural,
  finalizer: Finalizer,
  vocabulary: { group: "backup" },
  schema: BackupVerificationSchema,
  defaultTtlSeconds: 3600,
  ttlSeconds: (task) => task.spec.ttlSecondsAfterFinished,
  admissionGroup: (task) => task.spec.backupName,
  member: (task) => configMember(task.spec.config),
  status: (task) => task.status,
});
