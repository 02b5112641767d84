/**
 * Other objects of a simulated cluster (Secrets, an operator's own resources …), for the handler
 * context's object reader under `simulate()`. Keyed by resource, namespace and name, as the API
 * server keys them; what is stored is what `get` returns (a copy, so a handler cannot edit the store).
 */
import type { ObjectGetter, ObjectResource } from "../../handlers/handler-context.ts";
import { ObjectsUnavailable } from "../../handlers/objects-unavailable.ts";

const keyOf = (resource: ObjectResource, namespace: string, name: string): string =>
  `${resource.group}/${resource.version}/${resource.plural}/${namespace}/${name}`;

const metadataOf = (object: unknown): { readonly namespace: string; readonly name: string } => {
  const metadata =
    typeof object === "object" && object !== null && "metadata" in object ? object.metadata : undefined;
  const field = (name: string): unknown =>
    typeof metadata === "object" && metadata !== null && name in metadata
      ? (metadata as Record<string, unknown>)[name]
      : undefined;
  const namespace = field("namespace");
  const name = field("name");
  if (typeof name !== "string" || name === "")
    throw new TypeError("an object put into the simulation needs metadata.name");
  return { namespace: typeof namespace === "string" ? namespace : "", name };
};

export class MemoryObjects implements ObjectGetter {
  readonly #objects = new Map<string, unknown>();

  /** Stores (or replaces) an object; `metadata.namespace` absent means a cluster-scoped object. */
  put(resource: ObjectResource, object: unknown): void {
    const { namespace, name } = metadataOf(object);
    this.#objects.set(keyOf(resource, namespace, name), structuredClone(object));
  }

  /** Removes an object; false when there was none. */
  remove(resource: ObjectResource, namespace: string, name: string): boolean {
    return this.#objects.delete(keyOf(resource, namespace, name));
  }

  #outage: string | undefined;

  /**
   * Until `end()` is called, every `get` rejects with `ObjectsUnavailable` (`reason` in its message), as
   * the cluster's reader does while the API server does not answer.
   */
  outage(reason = "the API server does not answer"): { readonly end: () => void } {
    this.#outage = reason;
    return { end: () => (this.#outage = undefined) };
  }

  readonly get = (resource: ObjectResource, namespace: string, name: string): Promise<unknown> => {
    if (this.#outage !== undefined) {
      const path = keyOf(resource, namespace, name);
      return Promise.reject(new ObjectsUnavailable(path, `reading ${path} failed: ${this.#outage}`));
    }
    const object = this.#objects.get(keyOf(resource, namespace, name));
    return Promise.resolve(object === undefined ? undefined : structuredClone(object));
  };
}
