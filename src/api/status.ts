/**
 * The persisted status of a task, exactly as etcd-druid's EtcdOpsTask CRD declares it
 * (docs/contract.md §3). Nothing outside these fields survives a write against druid's CRD (the
 * apiserver prunes unknown status fields), so the lifecycle is derived from these alone.
 */

export const TaskStates = ["Pending", "InProgress", "Succeeded", "Failed", "Rejected"] as const;
export type TaskState = (typeof TaskStates)[number];

export const TerminalStates: ReadonlySet<TaskState> = new Set(["Succeeded", "Failed", "Rejected"]);
export const isTerminal = (state: TaskState | undefined): boolean =>
  state !== undefined && TerminalStates.has(state);

/** Which handler phase a `lastOperation` or an error belongs to. */
export type OperationType = "Admit" | "Execution" | "Cleanup";
export type OperationState = "InProgress" | "Completed" | "Failed";

export interface LastOperation {
  readonly type: OperationType;
  readonly state: OperationState;
  readonly description: string;
  /** The reconcile ID of the pass that wrote it (one per pass, like controller-runtime's). */
  readonly runID: string;
  /** RFC 3339, second precision. */
  readonly lastUpdateTime: string;
}

export interface LastError {
  /** An error code such as `ERR_GET_ETCD`. */
  readonly code: string;
  /** `[Operation: <type>, Code: <code>] message: <message>, cause: <cause>` (docs/contract.md §6). */
  readonly description: string;
  /** RFC 3339, second precision. */
  readonly observedAt: string;
}

/**
 * A standard Kubernetes condition (`metav1.Condition`), written with a task's final state so that
 * `kubectl wait --for=condition=Succeeded` works. Library kinds only: druid's CRD has no conditions.
 */
export interface TaskCondition {
  readonly type: string;
  readonly status: "True" | "False";
  /** `metadata.generation` of the task the condition was decided on. */
  readonly observedGeneration?: number;
  /** RFC 3339, second precision. */
  readonly lastTransitionTime: string;
  /** The final state, e.g. `Failed`. */
  readonly reason: string;
  /** The final `lastOperation.description`. */
  readonly message: string;
}

export interface TaskStatus {
  readonly state?: TaskState;
  readonly lastTransitionTime?: string;
  readonly startedAt?: string;
  readonly lastOperation?: LastOperation;
  readonly lastErrors?: ReadonlyArray<LastError>;
  /**
   * Library kinds with a result schema only: what Execute returned with its success, as JSON. Written
   * once with `Succeeded`; never read back (the status schema does not decode it).
   */
  readonly result?: unknown;
  /** Library kinds only (`defineTaskKind`'s `conditions`): written once with the final state. */
  readonly conditions?: ReadonlyArray<TaskCondition>;
}
