/**
 * What the differential test compares of a world: every write to a task (ours and the user's), read
 * the same way from the memory API server and from the kube-apiserver's audit log, turned into one
 * line per write per task incarnation: who, the verb, and the fields it changed.
 *
 * Fields are compared by path and value, except what differs between the worlds by nature: times
 * (a fake clock against the wall clock; a time rewritten at the same fake instant keeps its value, so
 * only whether a time is set is compared) and run IDs (`run-N` against random IDs). A write that
 * changes nothing still makes its line ("nothing changed"): an extra no-op write is a difference.
 */
import type { JsonObject, JsonValue } from "../../src/interpreters/memory/merge-patch.ts";

/** One write request to a task and the server's answer. */
export interface ObservedWrite {
  /** `ours`: the controller under test; `user`: the test's own commands. */
  readonly actor: "ours" | "user";
  readonly verb: "create" | "patch" | "delete";
  readonly subresource: "" | "status";
  readonly name: string;
  /** The HTTP status code of the answer. */
  readonly code: number;
  /** The object answered by a successful write (a DELETE that removed the object: the object removed). */
  readonly object?: JsonObject;
}

/** A Kubernetes Event about a task. */
export interface ObservedEvent {
  /** The task's UID. */
  readonly uid: string;
  readonly eventType: string;
  readonly reason: string;
  readonly note: string;
}

/** Per task incarnation (`name#n`, n counting creations of that name from 0): its writes in order. */
export type WritesPerTask = Record<string, string[]>;

const isObject = (value: JsonValue | undefined): value is JsonObject =>
  value !== null && value !== undefined && typeof value === "object" && !Array.isArray(value);

const metadataOf = (object: JsonObject): JsonObject => (isObject(object.metadata) ? object.metadata : {});

const finalizersOf = (object: JsonObject): JsonValue[] => {
  const list = metadataOf(object).finalizers;
  return Array.isArray(list) ? list : [];
};

const timeFields = new Set([
  "lastTransitionTime",
  "startedAt",
  "lastUpdateTime",
  "observedAt",
  "deletionTimestamp",
  "creationTimestamp",
]);

/** Times as "set", run IDs as "run"; everything else as it is. */
const normalised = (value: JsonValue, key = ""): JsonValue => {
  if (timeFields.has(key)) return "set";
  if (key === "runID") return "run";
  if (Array.isArray(value)) return value.map((item) => normalised(item));
  if (!isObject(value)) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, normalised(v, k)]));
};

/** The comparable leaves of an object: metadata that a write changes, and the status field by field. */
const leavesOf = (object: JsonObject): Map<string, string> => {
  const leaves = new Map<string, string>();
  const meta = metadataOf(object);
  leaves.set("finalizers", JSON.stringify(finalizersOf(object)));
  if (meta.deletionTimestamp !== undefined) leaves.set("deletionTimestamp", "set");
  for (const field of ["labels", "annotations"] as const) {
    const entries = meta[field];
    if (isObject(entries))
      for (const [k, v] of Object.entries(entries)) leaves.set(`${field}.${k}`, JSON.stringify(v));
  }
  const walk = (value: JsonValue, path: string, key: string) => {
    if (isObject(value) && path.split(".").length < 3) {
      for (const [k, v] of Object.entries(value)) walk(v, `${path}.${k}`, k);
      return;
    }
    leaves.set(path, JSON.stringify(normalised(value, key)));
  };
  if (object.status !== undefined) walk(object.status, "status", "status");
  return leaves;
};

const changesBetween = (before: JsonObject | undefined, after: JsonObject): string[] => {
  const was = before === undefined ? new Map<string, string>() : leavesOf(before);
  const now = leavesOf(after);
  const changes: string[] = [];
  for (const [path, value] of now) if (was.get(path) !== value) changes.push(`${path}=${value}`);
  for (const path of was.keys()) if (!now.has(path)) changes.push(`-${path}`);
  return changes.sort();
};

const uidOf = (object: JsonObject | undefined): string | undefined => {
  const uid = object === undefined ? undefined : metadataOf(object).uid;
  return typeof uid === "string" && uid !== "" ? uid : undefined;
};

/**
 * Turns a world's writes (in the order the server took them) into lines per task incarnation. A
 * write's changes are against the object as the previous write to it left it; a failed write is
 * counted against the incarnation its name belonged to then.
 */
export const writesPerTask = (writes: ReadonlyArray<ObservedWrite>): WritesPerTask => {
  const out: WritesPerTask = {};
  const labelOf = new Map<string, string>();
  const last = new Map<string, JsonObject>();
  /** The incarnation each name belongs to now (until it is gone). */
  const current = new Map<string, string>();
  const incarnations = new Map<string, number>();
  const push = (label: string, line: string) => {
    const lines = out[label] ?? [];
    lines.push(line);
    out[label] = lines;
  };
  for (const write of writes) {
    const what = `${write.actor} ${write.verb}${write.subresource === "" ? "" : ` ${write.subresource}`}`;
    const answered = uidOf(write.object);
    if (write.code >= 300 || write.object === undefined) {
      const uid = current.get(write.name);
      push(uid === undefined ? `${write.name}#none` : (labelOf.get(uid) ?? uid), `${what} → ${write.code}`);
      continue;
    }
    const uid = answered ?? current.get(write.name);
    if (uid === undefined) {
      push(`${write.name}#none`, `${what} → ${write.code} without an object`);
      continue;
    }
    if (!labelOf.has(uid)) {
      const n = incarnations.get(write.name) ?? 0;
      incarnations.set(write.name, n + 1);
      labelOf.set(uid, `${write.name}#${n}`);
    }
    const label = labelOf.get(uid) ?? uid;
    if (write.verb === "create") {
      current.set(write.name, uid);
      last.set(uid, write.object);
      push(label, what);
      continue;
    }
    const changes = answered === undefined ? [] : changesBetween(last.get(uid), write.object);
    if (answered !== undefined) last.set(uid, write.object);
    // The server removes an object when it is deleted without finalizers or its last one goes.
    const gone =
      answered === undefined ||
      (finalizersOf(write.object).length === 0 &&
        (write.verb === "delete" || metadataOf(write.object).deletionTimestamp !== undefined));
    if (gone) current.delete(write.name);
    push(
      label,
      `${what}: ${changes.length === 0 ? "nothing changed" : changes.join(", ")}${gone ? " → gone" : ""}`,
    );
  }
  return out;
};

/** Handler calls per task incarnation, labelled as `writesPerTask` labels them (by creation order). */
export const callsPerTask = (
  writes: ReadonlyArray<ObservedWrite>,
  calls: ReadonlyArray<{ readonly uid: string; readonly phase: string }>,
): Record<string, string[]> => perTask(writes, calls, (call) => call.phase);

/** Events per task incarnation, labelled as `writesPerTask` labels them. */
export const eventsPerTask = (
  writes: ReadonlyArray<ObservedWrite>,
  events: ReadonlyArray<ObservedEvent>,
): Record<string, string[]> =>
  perTask(writes, events, (event) => `${event.eventType} ${event.reason}: ${event.note}`);

const perTask = <A extends { readonly uid: string }>(
  writes: ReadonlyArray<ObservedWrite>,
  items: ReadonlyArray<A>,
  line: (item: A) => string,
): Record<string, string[]> => {
  const labelOf = new Map<string, string>();
  const incarnations = new Map<string, number>();
  for (const write of writes) {
    const uid = uidOf(write.object);
    if (write.verb !== "create" || write.code >= 300 || uid === undefined) continue;
    const n = incarnations.get(write.name) ?? 0;
    incarnations.set(write.name, n + 1);
    labelOf.set(uid, `${write.name}#${n}`);
  }
  const out: Record<string, string[]> = {};
  for (const item of items) {
    const label = labelOf.get(item.uid) ?? item.uid;
    const list = out[label] ?? [];
    list.push(line(item));
    out[label] = list;
  }
  return out;
};

/** The final objects by name, as compared (the leaves a write can change, times and run IDs aside). */
export const finalsByName = (objects: ReadonlyArray<JsonObject>): Record<string, Record<string, string>> =>
  Object.fromEntries(
    objects.map((object) => [String(metadataOf(object).name), Object.fromEntries(leavesOf(object))]),
  );
