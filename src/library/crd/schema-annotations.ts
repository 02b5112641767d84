/**
 * Schema building blocks that carry their CRD form with them, so one Effect Schema is both the
 * decoder and the source of the CRD (`taskCrd`, `structuralSchema`):
 *
 * - `celRule`: a check that the apiserver runs as a CEL rule (`x-kubernetes-validations`) and the
 *   decoder runs as a predicate, with one message for both;
 * - `withDefault`: a key that decodes to a default when absent, and whose CRD property declares the
 *   same `default` (the apiserver then stores it, so cluster objects and test objects look alike);
 * - `maxChars`/`minChars`: a string's length in characters, which the CRD's `maxLength`/`minLength`
 *   and the decoder count alike.
 */
import * as Effect from "effect/Effect";
import * as Schema from "effect/Schema";
import type * as SchemaAST from "effect/SchemaAST";
import type { CelRule } from "../../api/crd/openapi.ts";

/**
 * A check whose CRD form is the CEL `rule` and whose decoder form is `holds`; both fail with
 * `message`. Keep the two equivalent: the CRD rejects at admission, the decoder rejects objects that
 * reached the cluster some other way (an older CRD, a test fixture).
 */
export const celRule = <T>(rule: CelRule & { readonly message: string }, holds: (value: T) => boolean) =>
  Schema.makeFilter<T>((value) => (holds(value) ? undefined : rule.message), {
    expected: rule.message,
    toJsonSchema: () => ({ "x-kubernetes-validations": [{ ...rule }] }),
  });

/**
 * An optional key with a default: absent decodes to `value`, and the CRD declares `default: value`.
 * Annotations (a `description`) go on the field's CRD property.
 */
export const withDefault =
  <S extends Schema.Top>(value: S["Encoded"], annotations?: { readonly description?: string }) =>
  (self: S): Schema.withDecodingDefaultKey<S["Rebuild"]> =>
    Schema.withDecodingDefaultKey<S["Rebuild"]>(Effect.succeed(value))(
      self.annotate({ ...annotations, default: value }),
    );

/**
 * A string of at most `n` characters, counted as the apiserver counts a CRD's `maxLength`: in code
 * points, so the CRD's `maxLength: n` and the decoder agree on every string (Effect's `isMaxLength`
 * counts UTF-16 units, which differ for characters outside the Basic Multilingual Plane).
 */
export const maxChars = (n: number): SchemaAST.Filter<string> => Schema.isMaxCodePoints(n);

/** A string of at least `n` characters, counted in code points as the CRD's `minLength` is. */
export const minChars = (n: number): SchemaAST.Filter<string> => Schema.isMinCodePoints(n);
