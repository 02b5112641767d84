/**
 * Whether a write's result carries someone else's change besides ours. A status patch has no
 * resourceVersion precondition (docs/design-notes.md §2), so its result may hold a label, finalizer or
 * deletion that landed after the pass read the object; the pass did not decide on it, so the next
 * change event for that object must run a pass even if it shows the version our write returned.
 */
/** A stored task as a driver holds it (a cached Kubernetes object, a memory API server's JSON). */
export type TaskObject = { readonly [field: string]: unknown };

/** Fields the informer cache drops (src/runtime/cache-object.ts), and those every write changes. */
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration";

const outsideStatus = (object: TaskObject): string => {
  const {
    resourceVersion: _version,
    managedFields: _fields,
    annotations,
    ...metadata
  } = (object.metadata ?? {}) as Record<string, unknown>;
  const { [lastApplied]: _applied, ...kept } = (annotations ?? {}) as Record<string, unknown>;
  const { status: _status, metadata: _metadata, ...rest } = object;
  return JSON.stringify([metadata, kept, rest]);
};

/**
 * `written` (a write's result) differs from `before` (the object as last read or written) outside its
 * status. `expectMetadataChange`: the write changes metadata itself (a finalizer patch, whose
 * resourceVersion precondition keeps anyone else's change out: never foreign).
 */
export const carriesForeignChange = (
  before: TaskObject,
  written: TaskObject,
  expectMetadataChange: boolean,
): boolean => !expectMetadataChange && outsideStatus(before) !== outsideStatus(written);
