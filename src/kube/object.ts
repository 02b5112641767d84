/**
 * The least the Kubernetes building blocks need to know about an object: its identity and version.
 * Everything else stays opaque JSON (decoding is the TaskKind's job).
 */
import * as Predicate from "effect/Predicate";

export interface KubeObjectMeta {
  readonly name: string;
  readonly namespace: string;
  readonly uid: string;
  readonly resourceVersion: string;
  readonly finalizers?: ReadonlyArray<string>;
  readonly deletionTimestamp?: string;
  readonly [field: string]: unknown;
}

/** A namespaced object as the apiserver returns it. */
export interface KubeObject {
  readonly metadata: KubeObjectMeta;
  readonly [field: string]: unknown;
}

/** A stored namespaced object: name, namespace, uid and resourceVersion are strings. */
export const isKubeObject = (value: unknown): value is KubeObject => {
  if (!Predicate.isObject(value) || !("metadata" in value)) return false;
  const metadata = value.metadata;
  return (
    Predicate.isObject(metadata) &&
    "name" in metadata &&
    typeof metadata.name === "string" &&
    "namespace" in metadata &&
    typeof metadata.namespace === "string" &&
    "uid" in metadata &&
    typeof metadata.uid === "string" &&
    "resourceVersion" in metadata &&
    typeof metadata.resourceVersion === "string"
  );
};

/** `namespace/name`, the work-queue key. */
export const objectKey = (namespace: string, name: string): string => `${namespace}/${name}`;

export const keyOf = (object: KubeObject): string =>
  objectKey(object.metadata.namespace, object.metadata.name);

/** Our finalizers on the object, as strings (foreign entries included). */
export const finalizersOf = (object: { readonly metadata: { readonly finalizers?: unknown } }): string[] =>
  Array.isArray(object.metadata.finalizers)
    ? object.metadata.finalizers.filter((f): f is string => typeof f === "string")
    : [];

const decimal = /^(0|[1-9][0-9]*)$/;

/**
 * Orders two resourceVersions when that is meaningful: -1 (a is older), 0 (equal), 1 (a is newer), or
 * `undefined` when they cannot be ordered.
 *
 * The API contract says resourceVersions are opaque and only equality is defined. In practice the
 * apiserver's etcd3 storage writes etcd's revision, a decimal integer that only grows, and client-go's
 * own watch cache relies on that. So two decimal strings are compared as BigInts; anything else (another
 * storage backend) is only equal or unordered, and callers must then treat "unordered" as "take the
 * newest delivery".
 */
export const compareResourceVersions = (a: string, b: string): -1 | 0 | 1 | undefined => {
  if (a === b) return 0;
  if (!decimal.test(a) || !decimal.test(b)) return undefined;
  const x = BigInt(a);
  const y = BigInt(b);
  return x < y ? -1 : x > y ? 1 : 0;
};
