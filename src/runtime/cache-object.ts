/**
 * What the informer cache keeps of an object, and how compactly.
 *
 * Dropped: `metadata.managedFields` (server-side apply bookkeeping, often the largest part of an
 * object) and the `kubectl.kubernetes.io/last-applied-configuration` annotation (a JSON copy of the
 * whole object written by `kubectl apply`); a controller reads neither, and client-go informers are
 * commonly given the same transform.
 *
 * Shared: JSON.parse makes a new string for every value, so 10,000 tasks hold 10,000 copies of their
 * apiVersion, kind, namespace, finalizer, state and descriptions, and several copies per task of the
 * same timestamp. Values up to 64 characters go through one table of canonical strings. Names, UIDs
 * and resourceVersions are unique per object and skip the table; other unique values (a task's Etcd,
 * its run IDs) cannot be told apart from shared ones, so the table is cleared whenever it reaches 4,096
 * entries. A value repeated across objects is back in it after its next use, and the unique ones stop
 * costing a table entry each: with 10,000 tasks cached the table held ~25,000 entries (~0.9 MB) at
 * 50,000. Sharing is an optimisation, never needed for correctness.
 */
import { isKubeObject, type KubeObject } from "../kube/object.ts";

const lastApplied = "kubectl.kubernetes.io/last-applied-configuration";
const maxShared = 4_096;
const maxSharedLength = 64;
const unique = new Set(["name", "uid", "resourceVersion", "generateName"]);

let canonical = new Map<string, string>();

const share = (value: string): string => {
  if (value.length > maxSharedLength) return value;
  const known = canonical.get(value);
  if (known !== undefined) return known;
  if (canonical.size >= maxShared) canonical = new Map();
  canonical.set(value, value);
  return value;
};

/** A copy of a JSON value with its short strings shared; `metadata` marks the object's own metadata. */
const shared = (value: unknown, metadata: boolean): unknown => {
  if (typeof value === "string") return share(value);
  if (Array.isArray(value)) return value.map((item) => shared(item, false));
  if (typeof value !== "object" || value === null) return value;
  const copy: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) {
    if (metadata && key === "managedFields") continue;
    if (metadata && unique.has(key)) copy[key] = field;
    else if (metadata && key === "annotations" && typeof field === "object" && field !== null) {
      const annotations: Record<string, unknown> = {};
      for (const [name, text] of Object.entries(field))
        if (name !== lastApplied) annotations[name] = shared(text, false);
      copy[key] = annotations;
    } else copy[key] = shared(field, false);
  }
  return copy;
};

/** The object as the cache keeps it (a new object; the argument is not changed). */
export const cacheObject = (object: KubeObject): KubeObject => {
  const copy: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(object)) copy[key] = shared(field, key === "metadata");
  return isKubeObject(copy) ? copy : object;
};
