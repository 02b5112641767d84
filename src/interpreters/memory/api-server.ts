/**
 * An in-memory model of the kube-apiserver, for one namespaced custom resource with a status
 * subresource. It keeps the semantics a controller can trip over, and nothing else:
 *
 * - `resourceVersion` is a global counter bumped on every change; a no-op write does not bump it;
 * - `generation` starts at 1 and is bumped by spec changes and by setting `deletionTimestamp`;
 * - the status subresource: writes to it change only `status`, writes to the object ignore `status`;
 * - JSON merge patch (RFC 7386); `metadata.resourceVersion` in a patch is a precondition (409);
 * - JSON patch (RFC 6902) of the status subresource, applied to the whole stored object (a `test` of
 *   `/metadata/uid` is a precondition); one that does not apply answers 422 with the apiserver's text;
 * - DELETE: with finalizers it sets `deletionTimestamp` (once), without it removes the object; a UID
 *   precondition that does not match answers 409; removing the last finalizer of a deleting object
 *   removes it; no finalizer may be added to a deleting object (422);
 * - timestamps have whole-second precision, as on the wire;
 * - every change is a watch event (ADDED, MODIFIED, DELETED) in resourceVersion order.
 *
 * Hand-written: no maintained JS library models apiserver semantics (fake clients in every ecosystem
 * skip exactly these rules, docs/design-notes.md §10).
 */
import { immutableJSONPatch, type JSONPatchDocument } from "immutable-json-patch";
import { type JsonPatchOperation, jsonPatchNotApplicable } from "../status-json-patch.ts";
import { type JsonObject, type JsonValue, mergePatch } from "./merge-patch.ts";

export type ApiErrorReason = "NotFound" | "Conflict" | "Invalid" | "AlreadyExists";

export interface ApiError {
  readonly _tag: "ApiError";
  readonly code: 404 | 409 | 422;
  readonly reason: ApiErrorReason;
  readonly message: string;
}

export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED";

export interface WatchEvent {
  readonly type: WatchEventType;
  readonly object: JsonObject;
  /** When the change happened (server clock); not part of a real watch event, kept for checks. */
  readonly at: number;
}

export type ApiResult<A> =
  | { readonly ok: true; readonly value: A }
  | { readonly ok: false; readonly error: ApiError };

const ok = <A>(value: A): ApiResult<A> => ({ ok: true, value });
const fail = (code: ApiError["code"], reason: ApiErrorReason, message: string): ApiResult<never> => ({
  ok: false,
  error: { _tag: "ApiError", code, reason, message },
});

export interface MemoryApiServerOptions {
  /** The resource's name for messages, e.g. `etcdopstasks.druid.gardener.cloud`. */
  readonly resource: string;
  /** Milliseconds since the epoch. */
  readonly now: () => number;
  /** UIDs are deterministic so that simulations replay exactly. */
  readonly uid?: (serial: number) => string;
}

const wireTime = (ms: number): string => `${new Date(ms).toISOString().slice(0, 19)}Z`;

const asObject = (value: JsonValue | undefined): JsonObject =>
  value !== null && typeof value === "object" && !Array.isArray(value) ? value : {};

const metadataOf = (object: JsonObject): JsonObject => asObject(object.metadata);

const finalizersOf = (object: JsonObject): ReadonlyArray<string> => {
  const list = metadataOf(object).finalizers;
  return Array.isArray(list) ? list.filter((item): item is string => typeof item === "string") : [];
};

const sameJson = (a: JsonValue | undefined, b: JsonValue | undefined): boolean =>
  JSON.stringify(a) === JSON.stringify(b);

export const keyOf = (namespace: string, name: string): string => `${namespace}/${name}`;

/** The key of an object this server stored or emitted (its namespace and name are always set). */
export const storedKeyOf = (object: JsonObject): string => {
  const metadata = metadataOf(object);
  return keyOf(String(metadata.namespace), String(metadata.name));
};

const isJsonPatch = (
  patch: JsonObject | ReadonlyArray<JsonPatchOperation>,
): patch is ReadonlyArray<JsonPatchOperation> => Array.isArray(patch);

/** Whether `pointer` (RFC 6901) names a member that exists in `document`. */
const exists = (document: JsonValue, pointer: string): boolean => {
  let at: JsonValue | undefined = document;
  for (const token of pointer.split("/").slice(1)) {
    const name = token.replaceAll("~1", "/").replaceAll("~0", "~");
    if (at === null || typeof at !== "object") return false;
    at = Array.isArray(at) ? at[Number(name)] : at[name];
    if (at === undefined) return false;
  }
  return true;
};

/**
 * The object after `operations`, or undefined when they do not apply: a failed `test`, or a path
 * whose parent is missing. `remove` of a missing member fails too, as in the apiserver's
 * evanphx/json-patch (immutable-json-patch lets it pass, so it is checked here first).
 */
const applyJsonPatch = (
  object: JsonObject,
  operations: ReadonlyArray<JsonPatchOperation>,
): JsonObject | undefined => {
  let document: JsonObject = object;
  try {
    for (const operation of operations) {
      if (operation.op === "remove" && !exists(document, operation.path)) return undefined;
      document = immutableJSONPatch<JsonObject>(document, [operation] as JSONPatchDocument);
    }
  } catch {
    return undefined;
  }
  return document;
};

export class MemoryApiServer {
  readonly #objects = new Map<string, JsonObject>();
  readonly #events: WatchEvent[] = [];
  readonly #listeners = new Set<(event: WatchEvent) => void>();
  readonly #options: MemoryApiServerOptions;
  #resourceVersion = 0;
  #serial = 0;

  constructor(options: MemoryApiServerOptions) {
    this.#options = options;
  }

  /** Every change so far, in order (what a watch from resourceVersion 0 would have seen). */
  get events(): ReadonlyArray<WatchEvent> {
    return this.#events;
  }

  /** Called synchronously for each change, like an informer's event handler. */
  watch(listener: (event: WatchEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  get(namespace: string, name: string): ApiResult<JsonObject> {
    const object = this.#objects.get(keyOf(namespace, name));
    return object === undefined ? this.#notFound(name) : ok(object);
  }

  list(namespace?: string): ReadonlyArray<JsonObject> {
    return [...this.#objects.values()].filter(
      (object) => namespace === undefined || metadataOf(object).namespace === namespace,
    );
  }

  create(object: JsonObject): ApiResult<JsonObject> {
    const metadata = metadataOf(object);
    const name = metadata.name;
    const namespace = metadata.namespace;
    if (typeof name !== "string" || name === "" || typeof namespace !== "string") {
      return fail(422, "Invalid", `${this.#options.resource} is invalid: metadata.name: Required value`);
    }
    if (this.#objects.has(keyOf(namespace, name))) {
      return fail(409, "AlreadyExists", `${this.#options.resource} "${name}" already exists`);
    }
    this.#serial += 1;
    const uid = this.#options.uid?.(this.#serial) ?? `uid-${this.#serial}`;
    const { status: _ignored, ...rest } = object;
    const stored: JsonObject = {
      ...rest,
      metadata: {
        ...metadata,
        uid,
        generation: 1,
        creationTimestamp: wireTime(this.#options.now()),
        resourceVersion: "",
      },
    };
    return ok(this.#commit(namespace, name, stored, "ADDED"));
  }

  /** JSON merge patch of the object (everything but `status`). */
  patch(namespace: string, name: string, patch: JsonObject): ApiResult<JsonObject> {
    return this.#patch(namespace, name, patch, "object");
  }

  /** JSON merge patch of the status subresource (only `status`). */
  patchStatus(namespace: string, name: string, patch: JsonObject): ApiResult<JsonObject> {
    return this.#patch(namespace, name, patch, "status");
  }

  /** JSON patch of the status subresource: applied to the whole object, only `status` is kept. */
  jsonPatchStatus(
    namespace: string,
    name: string,
    operations: ReadonlyArray<JsonPatchOperation>,
  ): ApiResult<JsonObject> {
    return this.#patch(namespace, name, operations, "status");
  }

  delete(
    namespace: string,
    name: string,
    preconditions: { readonly uid?: string } = {},
  ): ApiResult<JsonObject> {
    const current = this.#objects.get(keyOf(namespace, name));
    if (current === undefined) return this.#notFound(name);
    const metadata = metadataOf(current);
    if (preconditions.uid !== undefined && metadata.uid !== preconditions.uid) {
      return fail(
        409,
        "Conflict",
        `Precondition failed: UID in precondition: ${preconditions.uid}, UID in object meta: ${String(metadata.uid)}`,
      );
    }
    if (finalizersOf(current).length === 0) return ok(this.#remove(namespace, name, current));
    if (metadata.deletionTimestamp !== undefined) return ok(current);
    const deleting: JsonObject = {
      ...current,
      metadata: {
        ...metadata,
        deletionTimestamp: wireTime(this.#options.now()),
        deletionGracePeriodSeconds: 0,
        generation: Number(metadata.generation ?? 1) + 1,
      },
    };
    return ok(this.#commit(namespace, name, deleting, "MODIFIED"));
  }

  #patch(
    namespace: string,
    name: string,
    patch: JsonObject | ReadonlyArray<JsonPatchOperation>,
    target: "object" | "status",
  ): ApiResult<JsonObject> {
    const current = this.#objects.get(keyOf(namespace, name));
    if (current === undefined) return this.#notFound(name);
    const metadata = metadataOf(current);
    if (isJsonPatch(patch)) {
      const applied = applyJsonPatch(current, patch);
      return applied === undefined
        ? fail(422, "Invalid", jsonPatchNotApplicable)
        : this.#store(namespace, name, current, applied, target);
    }
    const precondition = metadataOf(patch).resourceVersion;
    if (precondition !== undefined && precondition !== metadata.resourceVersion) {
      return fail(
        409,
        "Conflict",
        `Operation cannot be fulfilled on ${this.#options.resource} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
      );
    }
    return this.#store(namespace, name, current, asObject(mergePatch(current, patch)), target);
  }

  /** Takes the patched `candidate` as the subresource `target` allows, and commits it if it changed. */
  #store(
    namespace: string,
    name: string,
    current: JsonObject,
    candidate: JsonObject,
    target: "object" | "status",
  ): ApiResult<JsonObject> {
    const metadata = metadataOf(current);
    // The status subresource takes only status; the object endpoint takes everything but status.
    const next: JsonObject =
      target === "status"
        ? { ...current, status: asObject(candidate.status) }
        : { ...candidate, status: current.status ?? null };
    if (next.status === null) delete next.status;
    // Identity and server-owned fields cannot be changed by a patch.
    const nextMetadata: JsonObject = {
      ...asObject(next.metadata),
      name: metadata.name ?? null,
      namespace: metadata.namespace ?? null,
      uid: metadata.uid ?? null,
      creationTimestamp: metadata.creationTimestamp ?? null,
      resourceVersion: metadata.resourceVersion ?? null,
      generation: metadata.generation ?? null,
      ...(metadata.deletionTimestamp === undefined ? {} : { deletionTimestamp: metadata.deletionTimestamp }),
    };
    const added = finalizersOf({ metadata: nextMetadata }).filter((f) => !finalizersOf(current).includes(f));
    if (metadata.deletionTimestamp !== undefined && added.length > 0) {
      return fail(
        422,
        "Invalid",
        `${this.#options.resource} "${name}" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers ${JSON.stringify(added)}`,
      );
    }
    if (!sameJson(current.spec, next.spec)) nextMetadata.generation = Number(metadata.generation ?? 1) + 1;
    const updated: JsonObject = { ...next, metadata: nextMetadata };
    if (sameJson(current, updated)) return ok(current);
    if (metadata.deletionTimestamp !== undefined && finalizersOf(updated).length === 0) {
      return ok(this.#remove(namespace, name, updated));
    }
    return ok(this.#commit(namespace, name, updated, "MODIFIED"));
  }

  #commit(namespace: string, name: string, object: JsonObject, type: WatchEventType): JsonObject {
    this.#resourceVersion += 1;
    const stored: JsonObject = {
      ...object,
      metadata: { ...metadataOf(object), resourceVersion: String(this.#resourceVersion) },
    };
    this.#objects.set(keyOf(namespace, name), stored);
    this.#emit({ type, object: stored, at: this.#options.now() });
    return stored;
  }

  #remove(namespace: string, name: string, object: JsonObject): JsonObject {
    this.#resourceVersion += 1;
    this.#objects.delete(keyOf(namespace, name));
    const last: JsonObject = {
      ...object,
      metadata: { ...metadataOf(object), resourceVersion: String(this.#resourceVersion) },
    };
    this.#emit({ type: "DELETED", object: last, at: this.#options.now() });
    return last;
  }

  #emit(event: WatchEvent): void {
    this.#events.push(event);
    for (const listener of this.#listeners) listener(event);
  }

  #notFound(name: string): ApiResult<never> {
    return fail(404, "NotFound", `${this.#options.resource} "${name}" not found`);
  }
}
