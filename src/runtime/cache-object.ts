/**
 * What the informer cache keeps of an object: a copy without `metadata.managedFields` and kubectl's
 * last-applied annotation, whose short strings and small value-only objects are shared through a bounded
 * table of canonical values (frozen), and which counts about how many bytes of JSON it kept
 * (`cacheCopy`), the figure the task cache's size bound is checked against (task-cache.ts). Sharing
 * never matters for correctness: a cached object is read, never changed. Why and how much it saves:
 * docs/design-notes.md §12.
 */
import { isKubeObject, type KubeObject } from "../kube/object.ts";

const lastApplied = "kubectl.kubernetes.io/last-applied-configuration";
const maxShared = 4_096;
const maxSharedLength = 64;
const unique = new Set(["name", "uid", "resourceVersion", "generateName"]);

const maxSharedFields = 8;
const maxSharedJson = 256;

/**
 * Which metadata a copy keeps. Default: every field but managedFields, every annotation but kubectl's
 * last-applied copy.
 */
export interface MetadataShape {
  /** The metadata fields kept; the others are dropped. */
  readonly fields?: ReadonlySet<string>;
  /** The annotations kept; the others are dropped. */
  readonly annotations?: ReadonlySet<string>;
}

/** A copy as the cache keeps it, and about how many bytes of JSON it holds (in all, and per part). */
export interface CacheCopy {
  readonly object: KubeObject;
  readonly bytes: number;
  readonly metadataBytes: number;
  readonly statusBytes: number;
}

let canonical = new Map<string, string>();
let canonicalObjects = new Map<string, object>();
/** Set while copying when a value was not in its table yet: the object holding it stays unshared. */
let unseen = false;
/** Bytes of JSON kept by the copy under way (about: string lengths, keys, 8 per other value). */
let measured = 0;
let shape: MetadataShape = {};

const share = (value: string): string => {
  if (value.length > maxSharedLength) {
    unseen = true;
    return value;
  }
  const known = canonical.get(value);
  if (known !== undefined) return known;
  unseen = true;
  if (canonical.size >= maxShared) canonical = new Map();
  canonical.set(value, value);
  return value;
};

/** `copy` (whose values were all seen before), or the equal object the table already holds. */
const shareObject = (copy: object, fields: number): object => {
  if (fields > maxSharedFields) return copy;
  const json = JSON.stringify(copy);
  if (json.length > maxSharedJson) return copy;
  const known = canonicalObjects.get(json);
  if (known !== undefined) return known;
  unseen = true;
  if (canonicalObjects.size >= maxShared) canonicalObjects = new Map();
  canonicalObjects.set(json, Object.freeze(copy));
  return copy;
};

/** A copy of a JSON value with its short strings shared; `metadata` marks the object's own metadata. */
const shared = (value: unknown, metadata: boolean): unknown => {
  if (typeof value === "string") {
    measured += value.length + 3;
    return share(value);
  }
  if (typeof value !== "object" || value === null) {
    measured += 8;
    return value;
  }
  const outer = unseen;
  unseen = false;
  const copy = metadata ? sharedFields(value, true) : sharedValue(value);
  unseen ||= outer;
  return copy;
};

/** A copy of an array or object (not an object's own metadata), shared when all its values were. */
const sharedValue = (value: object): unknown => {
  if (Array.isArray(value)) {
    const copy = value.map((item) => shared(item, false));
    return unseen ? copy : shareObject(copy, copy.length);
  }
  const copy = sharedFields(value, false);
  return unseen ? copy : shareObject(copy, Object.keys(copy).length);
};

const sharedFields = (value: object, metadata: boolean): Record<string, unknown> => {
  // A spread copy takes the parsed object's shape, sized to its fields; one built field by field from
  // `{}` keeps the fields past its fourth in an extra array. The metadata loses
  // its managedFields, so it is built field by field.
  const copy: Record<string, unknown> = metadata ? {} : { ...value };
  const fields = value as Record<string, unknown>;
  // `for…in` rather than `Object.entries`: no array per field (a parsed object has no inherited
  // enumerable keys); the entries' pairs were a visible part of what a burst allocated (bench/PROFILE.md).
  for (const key in fields) {
    const field = fields[key];
    if (metadata && (shape.fields === undefined ? key === "managedFields" : !shape.fields.has(key))) continue;
    measured += key.length + 4;
    if (metadata && unique.has(key)) {
      measured += typeof field === "string" ? field.length + 3 : 8;
      copy[key] = field;
    } else if (metadata && key === "annotations") copy[key] = shared(keptAnnotations(field), false);
    else copy[key] = shared(field, false);
  }
  return copy;
};

const keptAnnotations = (annotations: unknown): unknown => {
  if (typeof annotations !== "object" || annotations === null) return annotations;
  const kept = shape.annotations;
  if (kept === undefined) {
    if (!(lastApplied in annotations)) return annotations;
    const { [lastApplied]: _, ...rest } = annotations;
    return rest;
  }
  // Most tasks carry only annotations that are kept: no new object for them.
  let dropped = false;
  for (const key in annotations) if (!kept.has(key)) dropped = true;
  if (!dropped) return annotations;
  const rest: Record<string, unknown> = {};
  for (const key of kept) if (Object.hasOwn(annotations, key)) rest[key] = Reflect.get(annotations, key);
  return rest;
};

/** The object as the cache keeps it, measured (a new object; the argument is not changed). */
export const cacheCopy = (object: KubeObject, metadataShape: MetadataShape = {}): CacheCopy => {
  shape = metadataShape;
  measured = 0;
  let metadataBytes = 0;
  let statusBytes = 0;
  const copy: Record<string, unknown> = { ...object };
  const fields = object as Record<string, unknown>;
  for (const key in fields) {
    const field = fields[key];
    const before = measured;
    copy[key] = shared(field, key === "metadata");
    if (key === "metadata") metadataBytes = measured - before;
    else if (key === "status") statusBytes = measured - before;
    measured += key.length + 4;
  }
  shape = {};
  const bytes = measured;
  return { object: isKubeObject(copy) ? copy : object, bytes, metadataBytes, statusBytes };
};

/** The object as the cache keeps it (a new object; the argument is not changed). */
export const cacheObject = (object: KubeObject): KubeObject => cacheCopy(object).object;
