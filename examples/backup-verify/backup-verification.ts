/**
 * The BackupVerification task resource (`examples.opstask.dev/v1alpha1`, crd.yaml beside this file)
 * and its `TaskKind`. The CRD is generated from this schema (crd.ts), defaults included, so an object
 * from the cluster and one built in a test decode alike.
 */
import * as Schema from "effect/Schema";
import { configMember, configUnion, defineTaskKind, ObjectMeta, TaskStatusSchema } from "opstask";
import { withDefault } from "opstask/crd";

export const Group = "examples.opstask.dev";
export const Version = "v1alpha1";
export const ApiVersion = `${Group}/${Version}` as const;
export const Kind = "BackupVerification";
export const Plural = "backupverifications";
export const Finalizer = "examples.opstask.dev/backup-verification";

/** A positive int32 that decodes to `fallback` when absent; the CRD declares the same default. */
const positiveInt32 = (fallback: number, description: string) =>
  Schema.Number.check(Schema.isInt32(), Schema.isGreaterThanOrEqualTo(1)).pipe(
    withDefault(fallback, { description }),
  );

/** `spec.config.checksum`: download `url`, compare its SHA-256. */
export const ChecksumConfig = Schema.Struct({
  // The `u` flag lets the pattern into the CRD (JSON Schema patterns are Unicode-aware).
  url: Schema.String.check(Schema.isPattern(/^https?:\/\//u, { expected: "an http:// or https:// URL" })),
  expectedSha256: Schema.String.check(
    Schema.isPattern(/^[0-9a-f]{64}$/u, { expected: "64 lowercase hex digits" }),
  ).annotate({ description: "64 lowercase hex digits." }),
  timeoutSeconds: positiveInt32(30, "Bound of one download attempt."),
}).annotate({ description: "Download url and compare its SHA-256 with expectedSha256." });

export const VerificationConfig = configUnion(
  { checksum: ChecksumConfig },
  { description: "What to verify; exactly one member." },
);

export const BackupVerificationSpec = Schema.Struct({
  backupName: Schema.optionalKey(
    Schema.String.annotate({
      description:
        "The backup this task verifies. Verifications of one backup in one namespace run one\n" +
        "at a time; a later one is rejected (or queued, with --duplicate-policy queue).",
    }),
  ),
  ttlSecondsAfterFinished: positiveInt32(3600, "Seconds a finished task is kept before it is deleted."),
  config: VerificationConfig,
});

export const BackupVerificationSchema = Schema.Struct({
  apiVersion: Schema.optionalKey(Schema.Literal(ApiVersion)),
  kind: Schema.optionalKey(Schema.Literal(Kind)),
  metadata: ObjectMeta,
  spec: BackupVerificationSpec,
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
