/**
 * `metadata` of the objects opstask reads. Only the fields the controller uses are decoded; anything
 * else in `metadata` (ownerReferences, managedFields, …) is accepted and dropped.
 */
import * as Schema from "effect/Schema";
import { Int64, Rfc3339 } from "./schema-helpers.ts";

const StringMap = Schema.Record(Schema.String, Schema.String);

/**
 * Metadata of an object as the apiserver returns it (get, list, watch). The server-assigned fields
 * (`uid`, `resourceVersion`, `generation`, `creationTimestamp`) are always present there, so they are
 * required: a task with another `uid` is another object (a handler result must never be written to a
 * re-created namesake), and `creationTimestamp` orders duplicate tasks.
 */
export const ObjectMeta = Schema.Struct({
  name: Schema.String.check(Schema.isNonEmpty()),
  namespace: Schema.String,
  uid: Schema.String,
  resourceVersion: Schema.String,
  generation: Int64,
  creationTimestamp: Rfc3339,
  deletionTimestamp: Schema.optionalKey(Rfc3339),
  finalizers: Schema.optionalKey(Schema.Array(Schema.String)),
  labels: Schema.optionalKey(StringMap),
  annotations: Schema.optionalKey(StringMap),
});
export type ObjectMeta = typeof ObjectMeta.Type;

/**
 * Metadata of a manifest as a user writes it (a YAML file, `kubectl create`, a test fixture): nothing
 * is server-assigned yet, and the name may come from `generateName` or the namespace from the context.
 */
export const ManifestMeta = Schema.Struct({
  name: Schema.optionalKey(Schema.String.check(Schema.isNonEmpty())),
  generateName: Schema.optionalKey(Schema.String),
  namespace: Schema.optionalKey(Schema.String),
  uid: Schema.optionalKey(Schema.String),
  resourceVersion: Schema.optionalKey(Schema.String),
  generation: Schema.optionalKey(Int64),
  creationTimestamp: Schema.optionalKey(Rfc3339),
  deletionTimestamp: Schema.optionalKey(Rfc3339),
  finalizers: Schema.optionalKey(Schema.Array(Schema.String)),
  labels: Schema.optionalKey(StringMap),
  annotations: Schema.optionalKey(StringMap),
});
export type ManifestMeta = typeof ManifestMeta.Type;
