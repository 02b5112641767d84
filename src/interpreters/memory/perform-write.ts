/**
 * The memory interpreter of the write effects: each `TaskEffect` that changes the task becomes the
 * same request the Kubernetes interpreter sends, against `MemoryApiServer`.
 */
import type { TaskEffect } from "../../effects/task-effect.ts";
import { Answer } from "../../reconcile/pass.ts";
import { machineVersionAnnotation } from "../../reconcile/task-kind.ts";
import { hasStatus, statusJsonPatch } from "../status-json-patch.ts";
import type { MemoryApiServer } from "./api-server.ts";
import type { JsonObject } from "./merge-patch.ts";

export type WriteResult =
  | { readonly kind: "ok"; readonly object: JsonObject | undefined }
  | { readonly kind: "gone" }
  | { readonly kind: "failed"; readonly reason: string };

const metadataOf = (object: JsonObject): JsonObject => (object.metadata ?? {}) as JsonObject;

/**
 * @param current the object as this pass last saw it: its resourceVersion is the precondition of
 *   finalizer patches, its UID the precondition of status patches and DELETE.
 */
export const performWrite = (
  server: MemoryApiServer,
  current: JsonObject,
  effect: TaskEffect,
): WriteResult => {
  const meta = metadataOf(current);
  const namespace = String(meta.namespace);
  const name = String(meta.name);
  const finalizers = Array.isArray(meta.finalizers)
    ? meta.finalizers.filter((f): f is string => typeof f === "string")
    : [];
  let result: ReturnType<MemoryApiServer["patch"]>;
  switch (effect._tag) {
    case "AddFinalizer":
      result = server.patch(namespace, name, {
        metadata: {
          resourceVersion: meta.resourceVersion ?? null,
          finalizers: finalizers.includes(effect.finalizer) ? finalizers : [...finalizers, effect.finalizer],
          annotations: { [machineVersionAnnotation]: String(effect.machineVersion) },
        },
      });
      break;
    case "PatchStatus":
      result = server.jsonPatchStatus(
        namespace,
        name,
        statusJsonPatch(
          {
            uid: String(meta.uid),
            resourceVersion: String(meta.resourceVersion),
            hasStatus: hasStatus(current),
          },
          effect.patch,
        ),
      );
      break;
    case "DeleteTask":
      result = server.delete(namespace, name, { uid: String(meta.uid) });
      if (result.ok && !server.get(namespace, name).ok) return { kind: "gone" };
      break;
    case "RemoveFinalizer":
      result = server.patch(namespace, name, {
        metadata: {
          resourceVersion: meta.resourceVersion ?? null,
          finalizers: finalizers.filter((f) => f !== effect.finalizer),
        },
      });
      break;
    default:
      return { kind: "failed", reason: `not a write: ${effect._tag}` };
  }
  if (!result.ok) {
    if (result.error.code === 404) return { kind: "gone" };
    // A UID precondition that fails means the name now belongs to another object: ours is gone.
    if (effect._tag === "DeleteTask" && result.error.code === 409) return { kind: "gone" };
    return { kind: "failed", reason: `${result.error.code} ${result.error.reason}: ${result.error.message}` };
  }
  if (metadataOf(result.value).uid !== meta.uid) return { kind: "gone" };
  // As the apiserver: the removal of a deleting object's last finalizer answers the object it removed.
  return { kind: "ok", object: result.value };
};

/** A write's result as the pass protocol's answer (`now`: the fake clock). */
export const answerOf = (result: WriteResult, now: number): Answer =>
  result.kind === "ok"
    ? Answer.Done({ now })
    : result.kind === "gone"
      ? Answer.Gone()
      : Answer.Failed({ cause: result.reason, now });
