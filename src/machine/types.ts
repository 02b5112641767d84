/**
 * What one reconcile pass knows. The machine never reads a clock, a cache or the API: everything it
 * decides on arrives here, so a pass is a pure function of its input and the handler results fed to it.
 */
import type { OperationType, TaskState, TaskStatus } from "../api/status.ts";

import type { Phase, PhaseOutcome } from "../effects/phase.ts";

export type { EncodedResult, Phase, PhaseOutcome, TaskError } from "../effects/phase.ts";

export const operationOf: Record<Phase, OperationType> = {
  admit: "Admit",
  execute: "Execution",
  cleanup: "Cleanup",
};

/** How tasks that share an admission group (druid: the same etcd) are admitted (docs/contract.md §13 D4). */
export type DuplicatePolicy = "reject" | "queue";

/** Words that make descriptions and error causes read right for a task kind. */
export interface Vocabulary {
  /** The task kind, e.g. `EtcdOpsTask`. */
  readonly kind: string;
  /** What an admission group is, e.g. `etcd`. */
  readonly group: string;
}

export interface LifecycleConfig {
  /** Our finalizer; other finalizers on the object are never touched. */
  readonly finalizer: string;
  readonly duplicatePolicy: DuplicatePolicy;
  /** Poll interval for `retry` without an error and for queued tasks (druid: 15 s). */
  readonly requeueIntervalMs: number;
  /** Exponential backoff after a transient error: base · 2^retries, capped (druid: 10 ms → 15 s). */
  readonly backoffBaseMs: number;
  readonly backoffCapMs: number;
  /**
   * When set, a phase that keeps failing transiently for longer than this (counted from the phase's
   * start) ends the task: Admit → Rejected, Execute → Failed, Cleanup → finalizer released. Off in druid.
   */
  readonly phaseDeadlineMs?: number;
  /**
   * When set, a task queued behind a peer for longer than this (counted from its creation) ends
   * Failed with ERR_QUEUE_TIMEOUT instead of waiting on; its description says until when it waits.
   */
  readonly queueDeadlineMs?: number;
  /** The shortest requeue the machine asks for, so that a delay that rounds to zero still fires. */
  readonly minRequeueMs: number;
  /**
   * A phase whose handler throws (a defect, not a result) this many times ends: the task fails with
   * ERR_HANDLER_DEFECT (reconcile/handler-defect.ts). Default 5.
   */
  readonly handlerDefectLimit?: number;
  readonly vocabulary: Vocabulary;
  /**
   * The condition types written with a final state (library kinds; absent for druid's EtcdOpsTask,
   * whose status has no conditions).
   */
  readonly conditions?: ConditionTypes;
}

/** The names of the two standard conditions a kind writes when its task ends. */
export interface ConditionTypes {
  /** True when the task Succeeded, False when it Failed or was Rejected (default `Succeeded`). */
  readonly succeeded: string;
  /** True when the task Failed or was Rejected, False when it Succeeded (default `Failed`). */
  readonly failed: string;
}

/**
 * What an InProgress task is doing to its group, as an expedited peer sees it (absent: `working`):
 * - `waiting`: nothing yet (it waits for a confirmation, say); an expedited task runs beside it;
 * - `working`: an expedited task waits for it to finish, whatever the duplicate policy;
 * - `exclusive`: it is changing what the group stands for (an etcd's members); an expedited task is
 *   Rejected at once (ERR_PEER_TASK_EXCLUSIVE), so that whoever waits for it learns so at once.
 */
export type AdmissionActivity = "waiting" | "working" | "exclusive";

/** Another task of the same admission group, as the cache shows it. */
export interface PeerTask {
  readonly name: string;
  readonly uid: string;
  /** Milliseconds since the epoch; whole seconds on the wire. */
  readonly createdAt: number;
  readonly state: TaskState | undefined;
  /** Being deleted: a peer that never started will never run, so it blocks nobody. */
  readonly deleting: boolean;
  /**
   * Being deleted and already released by this controller (our finalizer is gone): its work here is
   * over, though a foreign finalizer may keep the object for ever, so it blocks nobody either.
   */
  readonly released?: boolean;
  /** An expedited task (`TaskObservation.expedited`): it goes before the peers that are not. */
  readonly expedited?: true;
  /** What it does to the group while InProgress; absent: `working`. */
  readonly activity?: AdmissionActivity;
}

/** Why a task cannot run at all (see `TaskObservation.unsupported`). */
export type UnsupportedCode = "ERR_UNSUPPORTED_TASK" | "ERR_INVALID_TASK" | "ERR_TASK_TOO_LARGE";

/** The task object, reduced to what the lifecycle needs. */
export interface TaskObservation {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly createdAt: number;
  /** `metadata.generation`, for the conditions' `observedGeneration`. */
  readonly generation?: number;
  readonly finalizers: ReadonlyArray<string>;
  /** `metadata.deletionTimestamp` in ms, when the object is being deleted. */
  readonly deletingSince?: number;
  /** The machine version recorded on the object (annotation); absent on objects we never touched. */
  readonly machineVersion?: number;
  readonly ttlSeconds: number;
  /** The admission group (druid: `spec.etcdName`); tasks without one never conflict. */
  readonly group?: string;
  /**
   * Admitted next in its group whatever the duplicate policy (machine/admission.ts): before the Pending
   * peers that are not expedited, beside InProgress peers that only wait, never Rejected as a duplicate.
   */
  readonly expedited?: true;
  /**
   * Set when the task cannot run: no handler exists for its config (ERR_UNSUPPORTED_TASK), it does
   * not decode (ERR_INVALID_TASK), or it is too large to cache (ERR_TASK_TOO_LARGE). It is Rejected
   * and stays deletable.
   */
  readonly unsupported?: {
    readonly code: UnsupportedCode;
    readonly reason: string;
  };
  /**
   * Someone asked to cancel the task (docs/contract.md, "Cancel"): the cancel annotation carries this
   * task's UID; `by` is who asked, as the cancelled-by annotation names them.
   */
  readonly cancel?: { readonly by: string };
  readonly status: TaskStatus;
}

/** A handler result that is known but was not yet persisted (its status write failed). */
export interface KnownResult {
  readonly phase: Phase;
  readonly outcome: PhaseOutcome;
}

export interface PassInput {
  readonly task: TaskObservation;
  /** Other tasks in the same namespace and admission group; ignored when the task has no group. */
  readonly peers: ReadonlyArray<PeerTask>;
  /** Milliseconds since the epoch, from the runtime's clock. */
  readonly now: number;
  /** The reconcile ID; written to `lastOperation.runID`. */
  readonly runId: string;
  /** Consecutive passes of this task that ended in an error backoff (the runtime counts them). */
  readonly retries: number;
  /** When the last backoff of this task ends; a handler is not called again before then. */
  readonly retryAt?: number;
  /** Calls of the current phase that threw so far (the runtime counts them); absent when none did. */
  readonly handlerDefects?: { readonly phase: Phase; readonly count: number };
  readonly known?: KnownResult;
  readonly config: LifecycleConfig;
}
