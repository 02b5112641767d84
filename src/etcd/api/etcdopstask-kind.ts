/**
 * EtcdOpsTask as a task kind, defined with the library's `defineTaskKind` as any operator's own kind
 * is. Its decoder is druid-exact (src/etcd/api/etcdopstask.ts): a task whose spec does not decode
 * still yields its metadata and status, so it can be Rejected with ERR_INVALID_TASK and deleted.
 */
import * as Result from "effect/Result";
import * as Schema from "effect/Schema";
import * as SchemaParser from "effect/SchemaParser";
import { isDns1123Subdomain } from "../../advanced.ts";
import { configMember, defineTaskKind, TaskStatusSchema } from "../../index.ts";
import { admissionActivityOf, isDruidPresyncTask } from "./admission-order.ts";
import { recoveryTaskAnnotations } from "./config/recover-from-quorum-loss.ts";
import {
  decodeEtcdOpsTask,
  type EtcdOpsTask,
  EtcdOpsTaskSpecSchema,
  Finalizer,
  Group,
  Kind,
  Plural,
  TtlLimits,
  Version,
} from "./etcdopstask.ts";

const decodeStatus = SchemaParser.decodeUnknownResult(TaskStatusSchema);
/** `spec.ttlSecondsAfterFinished` alone, with the schema the task's own decode applies to it. */
const decodeTtl = SchemaParser.decodeUnknownResult(
  Schema.Struct({
    spec: Schema.Struct({ ttlSecondsAfterFinished: EtcdOpsTaskSpecSchema.fields.ttlSecondsAfterFinished }),
  }),
);

/**
 * What a schema struct or record takes: an object, not null, not an array. Its fields are read as the
 * schema reads them (a struct's with `in`, inherited ones too; a record's own enumerable keys).
 */
const isObject = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** The bounds of `format: int32`, which `Schema.isInt32` checks. */
const int32 = { minimum: -2_147_483_648, maximum: 2_147_483_647 } as const;

/**
 * `spec.ttlSecondsAfterFinished` of a plain object read by hand, as `decodeTtl` decodes it (absent:
 * the CRD's default); undefined when not certainly valid, and `decodeTtl` decides. Hand-written
 * because a takeover reads every settled task's TTL, and the schema decode is an order of magnitude
 * slower jitless; test/api/plain-read.test.ts holds it to `decodeTtl`.
 */
export const readTtlSecondsPlainly = (object: unknown): number | undefined => {
  if (!isObject(object)) return undefined;
  const spec = object.spec;
  if (!isObject(spec)) return undefined;
  const ttl = spec.ttlSecondsAfterFinished;
  if (ttl === undefined) return "ttlSecondsAfterFinished" in spec ? undefined : TtlLimits.default;
  return typeof ttl === "number" &&
    Number.isInteger(ttl) &&
    ttl >= int32.minimum &&
    ttl <= int32.maximum &&
    ttl >= TtlLimits.minimum
    ? ttl
    : undefined;
};

/** `spec.ttlSecondsAfterFinished` decoded with the schema; undefined when it does not decode. */
export const decodeTtlSeconds = (object: unknown): number | undefined => {
  const read = decodeTtl(object);
  return Result.isSuccess(read) ? read.success.spec.ttlSecondsAfterFinished : undefined;
};

/** The status of an object whose spec does not decode, if the status itself does. */
const statusOf = (object: unknown) => {
  const raw = typeof object === "object" && object !== null && "status" in object ? object.status : undefined;
  if (raw === undefined) return undefined;
  const decoded = decodeStatus(raw);
  return Result.isSuccess(decoded) ? decoded.success : undefined;
};

export const etcdOpsTaskKind = defineTaskKind<EtcdOpsTask>({
  group: Group,
  version: Version,
  kind: Kind,
  plural: Plural,
  finalizer: Finalizer,
  vocabulary: { kind: Kind, group: "etcd" },
  // druid's status exactly: its CRD has no conditions (nor a result), so none are written.
  conditions: false,
  defaultTtlSeconds: TtlLimits.default,
  decode: (object) => {
    const decoded = decodeEtcdOpsTask(object);
    if (Result.isSuccess(decoded)) return { ok: true, task: decoded.success };
    const { errors, metadata } = decoded.failure;
    const status = statusOf(object);
    return {
      ok: false,
      failure: {
        errors,
        ...(metadata === undefined ? {} : { metadata }),
        ...(status === undefined ? {} : { status }),
      },
    };
  },
  ttlSeconds: (task) => task.spec.ttlSecondsAfterFinished,
  readTtlSeconds: (object) => readTtlSecondsPlainly(object) ?? decodeTtlSeconds(object),
  // Druid keys duplicates on a non-nil etcdName; "" is a group of its own (docs/contract.md §8). The
  // key is the Etcd's identity, namespace/name (the handler checks the object it reads is that one): a
  // string that is no object name ("e005/status") names no Etcd, joins no group and is Rejected.
  admissionGroup: (task) =>
    task.spec.etcdName === undefined || (task.spec.etcdName !== "" && !isDns1123Subdomain(task.spec.etcdName))
      ? undefined
      : task.spec.etcdName,
  // etcd-druid's presync snapshots go first; a recovery only waiting for its confirmation holds nothing.
  expedited: isDruidPresyncTask,
  admissionActivity: admissionActivityOf,
  member: (task) => configMember(task.spec.config),
  status: (task) => task.status,
  // Quorum-loss recovery keeps its progress on the task and waits for a confirmation annotation;
  // the controller reference tells etcd-druid's own tasks.
  cachedMetadata: { annotations: recoveryTaskAnnotations, ownerReferences: true },
});
