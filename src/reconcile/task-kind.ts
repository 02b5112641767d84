/**
 * What the lifecycle needs to know about a task resource: where it lives, how to decode it, and how to
 * read the few facts the machine decides on. EtcdOpsTask is one TaskKind; an embedding operator
 * defines its own.
 */

import type * as Schema from "effect/Schema";
import type { PolicyRule } from "../api/policy-rule.ts";
import type { TaskStatus } from "../api/status.ts";
import type { AdmissionActivity, ConditionTypes, Vocabulary } from "../machine/types.ts";
import { type OversizedTask, oversizedOf, tooLargeReason } from "./oversized-task.ts";

export interface ResourceRef {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  readonly plural: string;
}

/** The metadata fields the lifecycle reads (server-assigned ones are always present on stored objects). */
export interface TaskMeta {
  readonly name: string;
  readonly namespace: string;
  readonly uid: string;
  readonly resourceVersion: string;
  readonly creationTimestamp: string;
  readonly generation?: number;
  readonly deletionTimestamp?: string;
  readonly finalizers?: ReadonlyArray<string>;
  readonly annotations?: { readonly [key: string]: string };
}

/** The facts of one decoded task that drive its lifecycle. */
export interface TaskFacts {
  readonly metadata: TaskMeta;
  readonly ttlSeconds: number;
  /** The admission group: tasks of one group in one namespace are admitted one at a time. */
  readonly group?: string;
  /** Admitted next in its group (`TaskKindAccessors.expedited`). */
  readonly expedited?: true;
  /** What it does to its group while InProgress (`TaskKindAccessors.admissionActivity`); absent: working. */
  readonly activity?: AdmissionActivity;
  /** The config member that selects the handler, e.g. `onDemandSnapshot`. */
  readonly member: string;
  readonly status: TaskStatus;
  /**
   * Set when the object does not decode (its metadata does): the field errors. Such a task is
   * Rejected with ERR_INVALID_TASK naming them, and stays deletable.
   */
  readonly invalid?: ReadonlyArray<string>;
  /**
   * Set when the task is too large for the controller's cache (reconcile/oversized-task.ts): it is
   * Rejected with ERR_TASK_TOO_LARGE, and stays deletable.
   */
  readonly tooLarge?: OversizedTask;
}

/** A decode failure, one line per problem, each naming the field (`spec.config.x.type: expected …`). */
export interface TaskDecodeFailure {
  readonly errors: ReadonlyArray<string>;
  /** Present when the metadata decodes, so that an unreadable task can still be released and deleted. */
  readonly metadata?: TaskMeta;
  /** The status, when it decodes on its own. */
  readonly status?: TaskStatus;
}

export type Decoded<Task> =
  | { readonly ok: true; readonly task: Task }
  | { readonly ok: false; readonly failure: TaskDecodeFailure };

/**
 * What a stored object says without decoding its spec: its metadata and status, and the TTL its spec
 * asks for. Each must be exactly what a full decode gives whenever the object decodes.
 */
export interface UndecodedFacts {
  readonly metadata: TaskMeta;
  readonly status: TaskStatus;
  readonly ttlSeconds: number;
}

export interface TaskKind<Task, Spec = unknown> {
  readonly resource: ResourceRef;
  /** Our finalizer on these objects. */
  readonly finalizer: string;
  readonly vocabulary: Vocabulary;
  readonly decode: (object: unknown) => Decoded<Task>;
  readonly facts: (task: Task) => TaskFacts;
  /** The TTL of a task whose spec does not decode (the CRD's default). */
  readonly defaultTtlSeconds: number;
  /**
   * Optional: reads a stored object's `UndecodedFacts` (undefined when it cannot). With it, a task
   * that only waits for its TTL costs no decode when the controller first sees it (reconcile/settled-facts.ts).
   */
  readonly undecodedFacts?: (object: unknown) => UndecodedFacts | undefined;
  /**
   * The labels and annotations the handlers read. The cache keeps no other (a task's memory must not
   * grow with what its author writes there); the lifecycle's own annotations are always kept.
   */
  readonly cachedMetadata?: CachedMetadata;
  /** RBAC rules the handlers need beyond the task resource (`TaskKindAccessors.rbacRules`). */
  readonly rbacRules?: ReadonlyArray<PolicyRule>;
  /** The conditions written with a task's final state; absent: none (druid's status has none). */
  readonly conditions?: ConditionTypes;
  /** The schema of `status.result` (the CRD declares it); absent: the kind has no result. */
  readonly resultSchema?: Schema.Top;
  /**
   * Type only, never set: the spec as a manifest writes it (the schema's encoded side, which
   * `defineTaskKind` infers), so that `simulate`'s `create` type-checks a test's tasks. `unknown` for
   * a kind that decodes with a function.
   */
  readonly "~spec"?: Spec;
}

export interface CachedMetadata {
  /** Keep the task's labels (default false). */
  readonly labels?: boolean;
  /** Keep these annotations (default none). */
  readonly annotations?: ReadonlyArray<string>;
  /** Keep the task's ownerReferences (default false): who created it, for `expedited`. */
  readonly ownerReferences?: boolean;
}

/**
 * The facts of a stored object: decoded, or — when only its metadata decodes — marked invalid with
 * the field errors, so that the lifecycle can reject it and delete it after its TTL. Undefined only
 * for an object without readable metadata, which nobody can act on.
 */
export const readFacts = <Task>(kind: TaskKind<Task>, object: unknown): TaskFacts | undefined =>
  readTask(kind, object)?.facts;

/**
 * One decode of a stored object: its facts (as `readFacts`) and, when it decodes, the task the handlers
 * get. A pass decodes its task once, here.
 */
export const readTask = <Task>(
  kind: TaskKind<Task>,
  object: unknown,
): { readonly facts: TaskFacts; readonly task: Task | undefined } | undefined => {
  const oversized = oversizedOf(object);
  if (oversized !== undefined) return oversizedFacts(kind, object, oversized);
  const decoded = kind.decode(object);
  if (decoded.ok) return { facts: kind.facts(decoded.task), task: decoded.task };
  const { metadata, status, errors } = decoded.failure;
  if (metadata === undefined) return undefined;
  return {
    facts: {
      metadata,
      ttlSeconds: kind.defaultTtlSeconds,
      member: "",
      status: status ?? {},
      invalid: errors,
    },
    task: undefined,
  };
};

/**
 * A stub of a task too large to cache: its metadata and status read with the kind's own decoder (the
 * stub has no spec, so the decode fails after reading them), Rejected as too large. Undefined when
 * the stub kept nothing a write could be built from.
 */
const oversizedFacts = <Task>(
  kind: TaskKind<Task>,
  object: unknown,
  oversized: OversizedTask,
): { readonly facts: TaskFacts; readonly task: undefined } | undefined => {
  if (!oversized.actionable) return undefined;
  const decoded = kind.decode(object);
  const read = decoded.ok
    ? { metadata: kind.facts(decoded.task).metadata, status: kind.facts(decoded.task).status }
    : decoded.failure;
  if (read.metadata === undefined) return undefined;
  return {
    facts: {
      metadata: read.metadata,
      ttlSeconds: kind.defaultTtlSeconds,
      member: "",
      status: read.status ?? {},
      invalid: [tooLargeReason(oversized)],
      tooLarge: oversized,
    },
    task: undefined,
  };
};

/** The annotation that records which machine version last claimed an object (status fields may be pruned). */
export const machineVersionAnnotation = "opstask.gardener.cloud/machine-version";

/**
 * A cancel (docs/contract.md, "Cancel"): its value is the UID of the task it cancels, so that it
 * cannot be carried to another object by a copy of the manifest; set once, never taken back.
 */
export const cancelAnnotation = "opstask.gardener.cloud/cancel";

/** Who asked for the cancel (the CLI writes the user the apiserver names, `opstask cancel`). */
export const cancelledByAnnotation = "opstask.gardener.cloud/cancelled-by";

/** The lifecycle's own annotations: the cache always keeps them, whatever a kind asks for. */
export const lifecycleAnnotations: ReadonlyArray<string> = [
  machineVersionAnnotation,
  cancelAnnotation,
  cancelledByAnnotation,
];
