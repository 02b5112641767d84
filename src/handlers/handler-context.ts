/**
 * What a handler phase gets besides its task: how often this phase has been called, a logger that
 * already names the task, a reader for other objects, an Event recorder for the task, the Kubernetes
 * client, and a signal that fires when the call is abandoned. kube-rs, Kopf and JOSDK hand their
 * handlers the same kind of context; both drivers (the cluster controller and the simulation) build it,
 * so a handler reads the same members in a test as in production.
 *
 * The members are plain Promise/void functions so that `promiseHandler` authors need no Effect; an
 * Effect handler wraps them (`Effect.tryPromise(() => context.objects.get(...))`). Its own
 * `Effect.log*` lines carry the same task keys, as the controller annotates the call's fiber.
 */
import type { KubeClient } from "../kube/kube-client.ts";
import type { Phase } from "../machine/types.ts";

/** Which objects: `group` is "" for the core group (`{ group: "", version: "v1", plural: "secrets" }`). */
export interface ObjectResource {
  readonly group: string;
  readonly version: string;
  readonly plural: string;
}

/** Reads any object the controller may read (its RBAC decides). */
export interface ObjectGetter {
  /**
   * The object as the API server returns it, or undefined when there is none (404). When the API
   * server does not answer (no response, 429, 5xx) it rejects with `ObjectsUnavailable`, which
   * `promiseHandler` turns into a retry with backoff; any other failure (forbidden) rejects with an
   * Error naming the object, a handler defect when let through, retried only up to
   * `handlerDefectLimit` times (reconcile/handler-defect.ts).
   */
  readonly get: (resource: ObjectResource, namespace: string, name: string) => Promise<unknown>;
}

/** Kubernetes Events about the task being handled (best effort: a lost Event is logged, never fatal). */
export interface TaskEventRecorder {
  /** `reason` is CamelCase and machine-readable (`ChecksumVerified`); `note` is for people. */
  readonly record: (type: "Normal" | "Warning", reason: string, note: string) => void;
}

/** Structured log lines carrying the task's keys (namespace, name, uid, reconcileID, phase). */
export interface TaskLogger {
  readonly debug: (message: string, fields?: Readonly<Record<string, unknown>>) => void;
  readonly info: (message: string, fields?: Readonly<Record<string, unknown>>) => void;
  readonly warn: (message: string, fields?: Readonly<Record<string, unknown>>) => void;
  readonly error: (message: string, fields?: Readonly<Record<string, unknown>>) => void;
}

/**
 * Writes to the task the call is for, and only to it: its own annotations, where a handler keeps what
 * it must find again in a later call (resumable steps, library/steps). Progress kept anywhere else
 * would outlive the task or be read by the next one.
 */
export interface OwnTask {
  /**
   * A merge patch of the task's `metadata.annotations` (`null` removes a key); resolves with the
   * task's annotations as stored after it, so `annotate({})` reads them fresh (the task a call is
   * given comes from the controller's cache, which may not show the last write yet). It is refused,
   * and the Promise rejects, when the object under the task's name is no longer the task of this call
   * (another UID) or is gone; an API outage rejects with `ObjectsUnavailable`.
   */
  readonly annotate: (
    annotations: Readonly<Record<string, string | null>>,
  ) => Promise<Readonly<Record<string, string>>>;
}

/**
 * A record of the controller's own about the task the call is for, keyed by the task's UID and kept
 * where task authors cannot write (on a cluster: a ConfigMap in the controller's namespace). What a
 * handler must trust across calls (resumable steps' progress) lives here, never on the task: anyone
 * who may create or patch a task writes its annotations.
 */
export interface OwnRecord {
  /** The record's fields, read fresh; undefined when none was written for this task. */
  readonly read: () => Promise<Readonly<Record<string, string>> | undefined>;
  /** Merges `fields` (`null` removes one) into the record, creating it; resolves with the fields stored. */
  readonly write: (
    fields: Readonly<Record<string, string | null>>,
  ) => Promise<Readonly<Record<string, string>>>;
  /** Deletes the record (nothing when there is none). */
  readonly remove: () => Promise<void>;
}

export interface HandlerContext {
  readonly phase: Phase;
  /**
   * 1 for the first call of this phase for this task, 2 for the first retry, and so on (retries after
   * `retry(...)`, with or without an error). Counted by the controller while it runs: a restarted
   * controller counts from 1 again.
   */
  readonly attempt: number;
  readonly log: TaskLogger;
  readonly objects: ObjectGetter;
  readonly events: TaskEventRecorder;
  /** The controller's Kubernetes client (its field manager on writes); absent under `simulate()`. */
  readonly kube?: KubeClient;
  /**
   * Aborts when nobody will use the call's result any more: the task was deleted while Admit or
   * Execute ran (the call may still finish; its result is discarded), or the controller stops.
   */
  readonly signal: AbortSignal;
  /**
   * The task's own annotations, for progress a handler keeps across calls (library/steps). Both
   * drivers give it; a context made by hand (`handlerContext()`) has it only when the test passes one.
   */
  readonly ownTask?: OwnTask;
  /**
   * The controller's own record about the task (library/steps keeps its progress there). Both drivers
   * give it when the controller has a namespace of its own for it (`progressNamespace`).
   */
  readonly ownRecord?: OwnRecord;
  /** The time now, in ms since the epoch: the controller's clock, the fake clock under `simulate()`. */
  readonly clock?: () => number;
}

/** A handler context whose member's config is typed (see `memberHandlers`). */
export interface MemberContext<Config> extends HandlerContext {
  /** The task's own config member, e.g. `{ kind: "checksum", url, sha256 }`. */
  readonly config: Config;
}

/** The log annotations of a handler call: the task's keys. */
export const taskLogKeys = (
  metadata: { readonly namespace: string; readonly name: string; readonly uid: string },
  phase: Phase,
  reconcileID: string,
): Readonly<Record<string, string>> => ({
  namespace: metadata.namespace,
  name: metadata.name,
  uid: metadata.uid,
  reconcileID,
  phase,
});

/** A logger that writes nowhere (for contexts made outside any controller, e.g. a handler's unit test). */
export const silentLogger: TaskLogger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};
