/**
 * The effect algebra: everything a reconcile pass may ask the world to do, as data. The machine emits
 * these; an interpreter (Kubernetes or in-memory) performs them in order. A pass ends with exactly one
 * `RequeueAfter` or `AwaitChange`. These types are the boundary between the machine and its drivers:
 * they import nothing from src/machine (the machine imports them).
 */
import * as Data from "effect/Data";
import type { TaskStatus } from "../api/status.ts";
import type { Phase } from "./phase.ts";

/** A status change: the fields to set, `null` for a field to remove. */
export type StatusPatch = { readonly [K in keyof TaskStatus]-?: TaskStatus[K] | null };

/** Why a pass asked to run again; the runtime's retry bookkeeping depends on it (see `retry-state.ts`). */
export type RequeueReason =
  /** A transient error: back off exponentially. */
  | "backoff"
  /** The handler asked to be polled (no error), e.g. a Job still running. */
  | "poll"
  /** A backoff or poll delay has not run out yet; nothing was attempted. */
  | "waiting"
  /** Queued behind another task of the same group. */
  | "queued"
  /** A terminal task waits for its TTL. */
  | "ttl";

export type EventType = "Normal" | "Warning";

export type TaskEffect = Data.TaggedEnum<{
  /** Add our finalizer (metadata patch with a resourceVersion precondition) and stamp the machine version. */
  AddFinalizer: { readonly finalizer: string; readonly machineVersion: number };
  /**
   * Write exactly the status fields that changed (`null` removes one) to the status subresource, only
   * if the object still has the UID it was read with; no resourceVersion precondition once it has a
   * status (src/interpreters/status-json-patch.ts).
   */
  PatchStatus: { readonly patch: Partial<StatusPatch> };
  /** Call a handler phase; its result comes back to the machine as a `phase.*` event. */
  RunPhase: { readonly phase: Phase };
  /** DELETE the task, preconditioned on its UID so that a new object with the same name is never hit. */
  // biome-ignore lint/complexity/noBannedTypes: Data.TaggedEnum spells a variant without fields as `{}`.
  DeleteTask: {};
  /** Remove only our finalizer (resourceVersion precondition, so a foreign finalizer added meanwhile survives). */
  RemoveFinalizer: { readonly finalizer: string };
  /** A Kubernetes Event on the task. */
  RecordEvent: { readonly eventType: EventType; readonly reason: string; readonly note: string };
  /** End of pass: run again after `delayMs`. */
  RequeueAfter: { readonly delayMs: number; readonly reason: RequeueReason };
  /** End of pass: nothing to do until the task or one of its peers changes. */
  AwaitChange: { readonly reason: string };
}>;

export const TaskEffect = Data.taggedEnum<TaskEffect>();

/** Effects that end a pass. */
export type PassEnd = Extract<TaskEffect, { readonly _tag: "RequeueAfter" | "AwaitChange" }>;

export const isPassEnd = (effect: TaskEffect): effect is PassEnd =>
  effect._tag === "RequeueAfter" || effect._tag === "AwaitChange";

/** Effects that change the task object (what "API writes per task" counts). */
export const isTaskWrite = (effect: TaskEffect): boolean =>
  effect._tag === "AddFinalizer" ||
  effect._tag === "PatchStatus" ||
  effect._tag === "DeleteTask" ||
  effect._tag === "RemoveFinalizer";
