/**
 * `ObjectReader` over objects held in memory, for tests and the simulated controller. Objects are
 * stored in their wire form (the JSON the apiserver would return) and decoded on every read with the
 * same schemas as the real reader; failures can be injected per object.
 */
import * as Effect from "effect/Effect";
import * as Layer from "effect/Layer";
import * as Predicate from "effect/Predicate";
import * as Result from "effect/Result";
import { decodeEtcd } from "./api/etcd.ts";
import { decodeSecret, decodeStatefulSet } from "./objects.ts";
import {
  notFoundMessage,
  ObjectReader,
  type ObjectReaderShape,
  ReadError,
  type Resource,
  Resources,
} from "./services.ts";

export interface ObjectRead {
  readonly resource: Resource;
  readonly namespace: string;
  readonly name: string;
}

const keyOf = (resource: Resource, namespace: string, name: string): string =>
  `${resource}/${namespace}/${name}`;

const metadataOf = (object: unknown): { readonly namespace: string; readonly name: string } | undefined => {
  if (!Predicate.isObject(object) || !("metadata" in object) || !Predicate.isObject(object.metadata)) {
    return undefined;
  }
  const { metadata } = object;
  return "namespace" in metadata &&
    typeof metadata.namespace === "string" &&
    "name" in metadata &&
    typeof metadata.name === "string"
    ? { namespace: metadata.namespace, name: metadata.name }
    : undefined;
};

/** The objects an in-memory `ObjectReader` serves; mutate it between (or during) handler calls. */
export class MemoryObjects {
  readonly #objects = new Map<string, unknown>();
  readonly #failures = new Map<string, string>();
  readonly #reads: ObjectRead[] = [];

  /**
   * Stores (or replaces) an object in wire form; its `metadata.namespace` and `metadata.name` are the
   * key. Returns false (and stores nothing) when they are missing.
   */
  put(resource: Resource, object: unknown): boolean {
    const meta = metadataOf(object);
    if (meta === undefined) return false;
    this.#objects.set(keyOf(resource, meta.namespace, meta.name), structuredClone(object));
    return true;
  }

  remove(resource: Resource, namespace: string, name: string): void {
    this.#objects.delete(keyOf(resource, namespace, name));
  }

  /** Every read of this object fails (not NotFound) with `message`, until `heal` is called. */
  fail(resource: Resource, namespace: string, name: string, message: string): void {
    this.#failures.set(keyOf(resource, namespace, name), message);
  }

  heal(resource: Resource, namespace: string, name: string): void {
    this.#failures.delete(keyOf(resource, namespace, name));
  }

  /** Every read so far, in order (failed ones included). */
  get reads(): ReadonlyArray<ObjectRead> {
    return this.#reads;
  }

  /** The stored wire object, or undefined; recorded as a read, failures applied. */
  read(resource: Resource, namespace: string, name: string): Effect.Effect<unknown, ReadError> {
    return Effect.suspend(() => {
      this.#reads.push({ resource, namespace, name });
      const key = keyOf(resource, namespace, name);
      const failure = this.#failures.get(key);
      if (failure !== undefined) {
        return Effect.fail(new ReadError({ reason: "Failed", resource, namespace, name, message: failure }));
      }
      const object = this.#objects.get(key);
      return object === undefined
        ? Effect.fail(
            new ReadError({
              reason: "NotFound",
              resource,
              namespace,
              name,
              message: notFoundMessage(resource, name),
            }),
          )
        : Effect.succeed(structuredClone(object));
    });
  }
}

const decodeWith =
  <A>(
    resource: Resource,
    namespace: string,
    name: string,
    decode: (input: unknown) => Result.Result<A, Error>,
  ) =>
  (object: unknown): Effect.Effect<A, ReadError> => {
    const result = decode(object);
    return Result.isSuccess(result)
      ? Effect.succeed(result.success)
      : Effect.fail(
          new ReadError({ reason: "Failed", resource, namespace, name, message: result.failure.message }),
        );
  };

export const makeMemoryObjectReader = (objects: MemoryObjects): ObjectReaderShape =>
  ObjectReader.of({
    getEtcd: (namespace, name) =>
      objects
        .read(Resources.etcd, namespace, name)
        .pipe(Effect.flatMap(decodeWith(Resources.etcd, namespace, name, decodeEtcd))),
    getStatefulSet: (namespace, name) =>
      objects
        .read(Resources.statefulSet, namespace, name)
        .pipe(Effect.flatMap(decodeWith(Resources.statefulSet, namespace, name, decodeStatefulSet))),
    getSecret: (namespace, name) =>
      objects
        .read(Resources.secret, namespace, name)
        .pipe(Effect.flatMap(decodeWith(Resources.secret, namespace, name, decodeSecret))),
  });

/** `ObjectReader` serving `objects`. */
export const memoryObjectReaderLayer = (objects: MemoryObjects): Layer.Layer<ObjectReader> =>
  Layer.succeed(ObjectReader, makeMemoryObjectReader(objects));
