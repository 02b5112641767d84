/**
 * A stored task's `metadata` and `status` read by hand, for the plain shape the apiserver returns: the
 * same value `Schema.Struct({ metadata: ObjectMeta, status: Schema.optionalKey(TaskStatusSchema) })`
 * decodes to, or undefined, and the caller decodes with the schema. Undefined does not always mean
 * invalid, only "not certainly the plain shape" (an optional key present with `undefined`, a
 * `__proto__` label): the schema then decides.
 *
 * Hand-written because a takeover reads every settled task this way, thousands at once, and under
 * `--jitless` (what the Deployment runs) the schema decode costs an order of magnitude more
 * (bench/settled-facts-read.ts measures both). The checks reuse the schemas' own literals, pattern and
 * limits; test/api/plain-read.test.ts holds the result to the schema decode over valid and broken
 * objects.
 */
import type { ObjectMeta } from "./meta.ts";
import { Rfc3339Pattern } from "./schema-helpers.ts";
import type { LastError, LastOperation, TaskState, TaskStatus } from "./status.ts";
import { TaskStates } from "./status.ts";
import { LastErrorsMaxItems, OperationStates, OperationTypes } from "./status-schema.ts";

/** What the plain read gives: the decoded metadata, and the decoded status when the key is there. */
export interface PlainMetadataAndStatus {
  readonly metadata: ObjectMeta;
  readonly status: TaskStatus | undefined;
}

type Fields = Readonly<Record<string, unknown>>;
type Mutable<T> = { -readonly [K in keyof T]: T[K] };

const taskStates: ReadonlySet<unknown> = new Set(TaskStates);
const operationTypes: ReadonlySet<unknown> = new Set(OperationTypes);
const operationStates: ReadonlySet<unknown> = new Set(OperationStates);

/**
 * What a schema struct or record takes: an object, not null, not an array. Its fields are read as the
 * schema reads them (a struct's with `in`, inherited ones too; a record's own enumerable keys).
 */
const isObject = (value: unknown): value is Fields =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const isTime = (value: unknown): value is string => typeof value === "string" && Rfc3339Pattern.test(value);

/**
 * An optional key there with `undefined`: `optionalKey` refuses it; the schema says so. (Called only
 * for an `undefined` value, so the common absent key costs one `in`.)
 */
const heldAsUndefined = (fields: Fields, key: string): boolean => key in fields;

const stringArray = (value: unknown): Array<string> | undefined => {
  if (!Array.isArray(value)) return undefined;
  const out: Array<string> = [];
  for (let index = 0; index < value.length; index++) {
    const item: unknown = value[index];
    if (typeof item !== "string") return undefined;
    out.push(item);
  }
  return out;
};

const stringRecord = (value: unknown): Record<string, string> | undefined => {
  if (!isObject(value)) return undefined;
  const out: Record<string, string> = {};
  for (const key of Object.keys(value)) {
    const item = value[key];
    if (typeof item !== "string" || key === "__proto__") return undefined;
    out[key] = item;
  }
  return out;
};

const readMetadata = (value: unknown): ObjectMeta | undefined => {
  if (!isObject(value)) return undefined;
  const { name, namespace, uid, resourceVersion, generation, creationTimestamp } = value;
  const { deletionTimestamp, finalizers, labels, annotations } = value;
  if (
    typeof name !== "string" ||
    name.length === 0 ||
    typeof namespace !== "string" ||
    typeof uid !== "string" ||
    typeof resourceVersion !== "string" ||
    typeof generation !== "number" ||
    !Number.isSafeInteger(generation) ||
    !isTime(creationTimestamp)
  )
    return undefined;
  const metadata: Mutable<ObjectMeta> = {
    name,
    namespace,
    uid,
    resourceVersion,
    generation,
    creationTimestamp,
  };
  if (deletionTimestamp !== undefined) {
    if (!isTime(deletionTimestamp)) return undefined;
    metadata.deletionTimestamp = deletionTimestamp;
  } else if (heldAsUndefined(value, "deletionTimestamp")) return undefined;
  if (finalizers !== undefined) {
    const read = stringArray(finalizers);
    if (read === undefined) return undefined;
    metadata.finalizers = read;
  } else if (heldAsUndefined(value, "finalizers")) return undefined;
  if (labels !== undefined) {
    const read = stringRecord(labels);
    if (read === undefined) return undefined;
    metadata.labels = read;
  } else if (heldAsUndefined(value, "labels")) return undefined;
  if (annotations !== undefined) {
    const read = stringRecord(annotations);
    if (read === undefined) return undefined;
    metadata.annotations = read;
  } else if (heldAsUndefined(value, "annotations")) return undefined;
  return metadata;
};

const readLastOperation = (value: unknown): LastOperation | undefined => {
  if (!isObject(value)) return undefined;
  const { type, state, description, runID, lastUpdateTime } = value;
  if (
    !operationTypes.has(type) ||
    !operationStates.has(state) ||
    typeof description !== "string" ||
    typeof runID !== "string" ||
    !isTime(lastUpdateTime)
  )
    return undefined;
  return {
    type: type as LastOperation["type"],
    state: state as LastOperation["state"],
    description,
    runID,
    lastUpdateTime,
  };
};

const readLastErrors = (value: unknown): Array<LastError> | undefined => {
  if (!Array.isArray(value) || value.length > LastErrorsMaxItems) return undefined;
  const out: Array<LastError> = [];
  for (let index = 0; index < value.length; index++) {
    const item: unknown = value[index];
    if (!isObject(item)) return undefined;
    const { code, description, observedAt } = item;
    if (typeof code !== "string" || typeof description !== "string" || !isTime(observedAt)) return undefined;
    out.push({ code, description, observedAt });
  }
  return out;
};

const readStatus = (value: unknown): TaskStatus | undefined => {
  if (!isObject(value)) return undefined;
  const { state, lastTransitionTime, startedAt, lastOperation, lastErrors } = value;
  const status: Mutable<TaskStatus> = {};
  if (state !== undefined) {
    if (!taskStates.has(state)) return undefined;
    status.state = state as TaskState;
  } else if (heldAsUndefined(value, "state")) return undefined;
  if (lastTransitionTime !== undefined) {
    if (!isTime(lastTransitionTime)) return undefined;
    status.lastTransitionTime = lastTransitionTime;
  } else if (heldAsUndefined(value, "lastTransitionTime")) return undefined;
  if (startedAt !== undefined) {
    if (!isTime(startedAt)) return undefined;
    status.startedAt = startedAt;
  } else if (heldAsUndefined(value, "startedAt")) return undefined;
  if (lastOperation !== undefined) {
    const read = readLastOperation(lastOperation);
    if (read === undefined) return undefined;
    status.lastOperation = read;
  } else if (heldAsUndefined(value, "lastOperation")) return undefined;
  if (lastErrors !== undefined) {
    const read = readLastErrors(lastErrors);
    if (read === undefined) return undefined;
    status.lastErrors = read;
  } else if (heldAsUndefined(value, "lastErrors")) return undefined;
  return status;
};

/** The decoded `metadata` and `status` of a plain stored object; undefined: decode with the schema. */
export const readMetadataAndStatusPlainly = (object: unknown): PlainMetadataAndStatus | undefined => {
  if (!isObject(object)) return undefined;
  const metadata = readMetadata(object.metadata);
  if (metadata === undefined) return undefined;
  const rawStatus = object.status;
  if (rawStatus === undefined)
    return heldAsUndefined(object, "status") ? undefined : { metadata, status: undefined };
  const status = readStatus(rawStatus);
  return status === undefined ? undefined : { metadata, status };
};
