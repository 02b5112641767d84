/**
 * What the controller's cache keeps of a task: what the lifecycle, the decoder, the handlers and the
 * task board read, and nothing a task author can grow without bound unless it is counted.
 *
 * Kept: the top-level fields (apiVersion, kind, spec, status: the decoder reads them whole) and, of
 * the metadata, the identity (name, namespace, uid, resourceVersion, generation, creationTimestamp),
 * deletionTimestamp, finalizers (a finalizer patch sends the whole list) and the annotations the
 * lifecycle reads (its machine version) or the kind asks for; labels and ownerReferences only when the
 * kind asks for them (`TaskKind.cachedMetadata`). Dropped: other labels and annotations,
 * managedFields and the rest. Nothing needs a hash to notice a change: the resourceVersion does.
 *
 * Bounded: a task whose copy measures over `maxBytes` (cache-object.ts) is kept as a stub
 * (src/reconcile/oversized-task.ts), so memory grows with the number of tasks, not their size.
 */
import type { KubeObject } from "../kube/object.ts";
import { markOversized, oversizedOf } from "../reconcile/oversized-task.ts";
import { type CachedMetadata, lifecycleAnnotations } from "../reconcile/task-kind.ts";
import { cacheCopy, type MetadataShape } from "./cache-object.ts";

const identity = ["name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp"];
const lifecycleMetadata = [...identity, "deletionTimestamp", "finalizers", "annotations"];

export interface TaskCacheOptions {
  /** The bound on one task as cached, in bytes of JSON (about). */
  readonly maxBytes: number;
  readonly cachedMetadata?: CachedMetadata;
}

/** The informer's `keep` for tasks: a copy of what is read, or a stub when that exceeds the bound. */
export const taskCacheKeep = (options: TaskCacheOptions): ((object: KubeObject) => KubeObject) => {
  const { maxBytes, cachedMetadata } = options;
  const shape: MetadataShape = {
    fields: new Set([
      ...lifecycleMetadata,
      ...(cachedMetadata?.labels === true ? ["labels"] : []),
      ...(cachedMetadata?.ownerReferences === true ? ["ownerReferences"] : []),
    ]),
    annotations: new Set([...lifecycleAnnotations, ...(cachedMetadata?.annotations ?? [])]),
  };
  return (object) => {
    // A write's result is kept before it goes to the cache's upsert, which keeps it again.
    if (oversizedOf(object) !== undefined) return object;
    const copy = cacheCopy(object, shape);
    if (copy.bytes <= maxBytes) return copy.object;
    const { metadata, status } = copy.object;
    const actionable = copy.metadataBytes <= maxBytes / 2;
    const stubMetadata: Record<string, unknown> = {};
    for (const field of actionable ? lifecycleMetadata : identity)
      if (Object.hasOwn(metadata, field)) stubMetadata[field] = Reflect.get(metadata, field);
    const stub = {
      apiVersion: object.apiVersion,
      kind: object.kind,
      metadata: stubMetadata as KubeObject["metadata"],
      ...(status !== undefined && copy.statusBytes <= maxBytes / 2 ? { status } : {}),
    };
    return markOversized(stub, { bytes: copy.bytes, limit: maxBytes, actionable });
  };
};
