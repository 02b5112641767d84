/**
 * The Kubernetes objects handlers read besides the Etcd, reduced to the fields they use: a StatefulSet
 * (its controller reference and pod-template secret volumes, docs/contract.md §10) and a Secret (its data,
 * base64-decoded). Everything else in the object is accepted and dropped, so the same decoding works on
 * raw JSON, from the apiserver or the in-memory reader.
 */
import * as Result from "effect/Result";
import * as Schema from "effect/Schema";
import * as SchemaParser from "effect/SchemaParser";
import { DecodeError, formatDecodeError } from "../advanced.ts";

const optionalString = Schema.optionalKey(Schema.String);

/** `metadata.ownerReferences[]`; druid's "controlled by" check compares only `uid` of the controller. */
export const OwnerReferenceSchema = Schema.Struct({
  apiVersion: optionalString,
  kind: optionalString,
  name: optionalString,
  uid: Schema.String,
  controller: Schema.optionalKey(Schema.Boolean),
});

/** A pod volume; only a `secret` source matters here. */
export const VolumeSchema = Schema.Struct({
  name: Schema.String,
  secret: Schema.optionalKey(Schema.Struct({ secretName: optionalString })),
});

const ObjectMetaSchema = Schema.Struct({
  name: Schema.String,
  namespace: Schema.String,
  uid: optionalString,
  ownerReferences: Schema.optionalKey(Schema.Array(OwnerReferenceSchema)),
});

export const StatefulSetSchema = Schema.Struct({
  metadata: ObjectMetaSchema,
  spec: Schema.optionalKey(
    Schema.Struct({
      template: Schema.optionalKey(
        Schema.Struct({
          spec: Schema.optionalKey(
            Schema.Struct({ volumes: Schema.optionalKey(Schema.Array(VolumeSchema)) }),
          ),
        }),
      ),
    }),
  ),
});

/** `data` values are base64 on the wire and bytes once decoded (`stringData` is never returned). */
export const SecretSchema = Schema.Struct({
  metadata: Schema.Struct({ name: Schema.String, namespace: Schema.String }),
  data: Schema.optionalKey(Schema.Record(Schema.String, Schema.Uint8ArrayFromBase64)),
});

export type OwnerReference = typeof OwnerReferenceSchema.Type;
export type Volume = typeof VolumeSchema.Type;
export type StatefulSet = typeof StatefulSetSchema.Type;
export type Secret = typeof SecretSchema.Type;

const options = { errors: "all", reportInput: true } as const;
const decodeStatefulSetResult = SchemaParser.decodeUnknownResult(StatefulSetSchema, options);
const decodeSecretResult = SchemaParser.decodeUnknownResult(SecretSchema, options);

const toDecodeError = (resource: string) => (issue: Parameters<typeof formatDecodeError>[0]) =>
  new DecodeError({ resource, errors: formatDecodeError(issue), issue, metadata: undefined });

/** Decodes a StatefulSet read from the apiserver. Never throws. */
export const decodeStatefulSet = (input: unknown): Result.Result<StatefulSet, DecodeError> =>
  Result.mapError(decodeStatefulSetResult(input), toDecodeError("StatefulSet"));

/** Decodes a Secret read from the apiserver. Never throws. */
export const decodeSecret = (input: unknown): Result.Result<Secret, DecodeError> =>
  Result.mapError(decodeSecretResult(input), toDecodeError("Secret"));

/** The controller reference: the first owner reference with `controller: true` (as in apimachinery). */
export const controllerOf = (object: {
  readonly metadata: { readonly ownerReferences?: ReadonlyArray<OwnerReference> };
}): OwnerReference | undefined => object.metadata.ownerReferences?.find((ref) => ref.controller === true);

/** The pod-template volumes of a StatefulSet. */
export const podVolumes = (statefulSet: StatefulSet): ReadonlyArray<Volume> =>
  statefulSet.spec?.template?.spec?.volumes ?? [];
