/**
 * The wire form of a `PatchStatus` effect, shared by both interpreters: an RFC 6902 JSON patch of the
 * status subresource whose first operation tests `metadata.uid`.
 *
 * Why not a JSON merge patch: the status subresource ignores `metadata` in a merge patch, so nothing
 * in one can stop a late handler result (a 15-minute snapshot POST) from landing on a task that was
 * deleted and re-created under the same name meanwhile (docs/design-notes.md §7). A JSON patch's `test` runs
 * against the stored object, metadata included: for another UID the apiserver answers 422 and writes
 * nothing.
 *
 * The other operations carry the changed fields one by one (`add` replaces a member that exists,
 * `remove` stands for a merge patch's `null`), so a status write still changes exactly the fields that
 * differ and carries no resourceVersion precondition: a label edit never turns it into a conflict
 * (docs/design-notes.md §2), and a status changed by someone else keeps the fields we do not change.
 *
 * JSON patch cannot add a member to an object that is not there, so a task without a status gets its
 * first status as one `add /status`, which would replace a status written since our read: that one
 * write also tests the resourceVersion. (It follows our own finalizer write, whose answer we read, so a
 * conflict there is rare; and a conflict after a handler call only replays the result, never the call.)
 */

/** The status fields to change; `null` removes a field (as in RFC 7386). */
export type StatusChanges = { readonly [field: string]: unknown };

export type JsonPatchOperation =
  | { readonly op: "test" | "add"; readonly path: string; readonly value: unknown }
  | { readonly op: "remove"; readonly path: string };

/** RFC 6901: `~` and `/` inside a member name are escaped. */
const pointerToken = (name: string): string => name.replaceAll("~", "~0").replaceAll("/", "~1");

/** Whether an object as read has a `status` (a JSON object). */
export const hasStatus = (object: { readonly [field: string]: unknown }): boolean =>
  typeof object.status === "object" && object.status !== null && !Array.isArray(object.status);

/** The object a status write is based on, as last read. */
export interface StatusBase {
  readonly uid: string;
  readonly resourceVersion: string;
  /** Whether it had a `status`. */
  readonly hasStatus: boolean;
}

/** The operations that apply `changes` to the status of the object `base` was read from. */
export const statusJsonPatch = (
  base: StatusBase,
  changes: StatusChanges,
): ReadonlyArray<JsonPatchOperation> => {
  const guard: JsonPatchOperation = { op: "test", path: "/metadata/uid", value: base.uid };
  const fields = Object.entries(changes);
  if (!base.hasStatus) {
    const status = Object.fromEntries(fields.filter(([, value]) => value !== null));
    return [
      guard,
      { op: "test", path: "/metadata/resourceVersion", value: base.resourceVersion },
      { op: "add", path: "/status", value: status },
    ];
  }
  return [
    guard,
    ...fields.map(([name, value]): JsonPatchOperation => {
      const path = `/status/${pointerToken(name)}`;
      return value === null ? { op: "remove", path } : { op: "add", path, value };
    }),
  ];
};

/**
 * What the apiserver says when a JSON patch does not apply (a failed `test`, or a path that is not
 * there): 422 with this message and nothing else; the reason (evanphx/json-patch's "testing value
 * /metadata/uid failed") is not passed on. Field validation failures say "… is invalid: <field>" instead.
 */
export const jsonPatchNotApplicable = "the server rejected our request due to an error in our request";
