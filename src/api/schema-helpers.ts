/**
 * Small schema building blocks shared by the EtcdOpsTask and Etcd schemas: Kubernetes' integer and
 * time formats, and the "integer with a CRD default and minimum" shape every timeout field has.
 */
import * as Effect from "effect/Effect";
import * as Schema from "effect/Schema";
import * as SchemaTransformation from "effect/SchemaTransformation";

/**
 * An integer field as a CRD declares it (`type: integer, format: int32, minimum, default`). Decoding
 * applies the same default the apiserver applies, so objects read from a cluster, from a YAML file or
 * from a test look alike.
 */
export interface DefaultedIntLimits {
  readonly default: number;
  readonly minimum: number;
}

/** `type: integer, format: int32` */
export const Int32 = Schema.Number.check(Schema.isInt32());

/** `type: integer, format: int64`, restricted to what a JS number holds exactly. */
export const Int64 = Schema.Number.check(
  Schema.isInt(),
  Schema.isBetween({ minimum: Number.MIN_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER }),
);

/** An int32 with a lower bound (`minimum`), as it is after decoding. */
export const boundedInt32 = (limits: DefaultedIntLimits) =>
  Schema.Number.check(Schema.isInt32(), Schema.isGreaterThanOrEqualTo(limits.minimum));

/**
 * An int32 with a lower bound (`minimum`); an absent key decodes to `limits.default`. The `default`
 * (and a `description`) are annotations too, so a CRD generated from the schema declares them.
 */
export const int32WithDefault = (
  limits: DefaultedIntLimits,
  annotations?: { readonly description?: string },
) =>
  boundedInt32(limits)
    .annotate({ ...annotations, default: limits.default })
    .pipe(Schema.withDecodingDefaultKey(Effect.succeed(limits.default)));

/**
 * RFC 3339 date-time (`format: date-time`), as the apiserver writes it: `2024-05-01T10:00:00Z`, with
 * optional fractional seconds and a numeric offset. Kept as a string: the status types carry strings,
 * and second precision on the wire is part of the contract.
 */
export const Rfc3339Pattern = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/u;
export const Rfc3339 = Schema.String.check(
  Schema.isPattern(Rfc3339Pattern, { expected: "an RFC 3339 date-time such as 2024-05-01T10:00:00Z" }),
).annotate({ format: "date-time" });

/**
 * A JSON object with no declared properties (CRD `type: object` without `properties`): any object is
 * accepted and decodes to `{}` (the apiserver prunes unknown fields the same way); scalars, arrays and
 * null are rejected.
 */
export const emptyObject = (annotations?: { readonly description?: string }) =>
  Schema.Record(Schema.String, Schema.Unknown)
    // Its CRD form prunes the contents (as the decoder drops them), rather than preserving them.
    .annotate({ ...annotations, "x-kubernetes-preserve-unknown-fields": false })
    .pipe(
      Schema.decodeTo(
        Schema.Struct({}),
        SchemaTransformation.transform({ decode: () => ({}), encode: () => ({}) }),
      ),
    );
export const EmptyObject = emptyObject();

/** Compile-time assertion helpers: `Assignable<A, B>` only type-checks when `A` is assignable to `B`. */
export type Assignable<A extends B, B> = [A, B];
