/**
 * Every text the lifecycle itself writes (docs/contract.md §5), in one place. Handler texts come from the
 * handlers. Druid mixes "in progress" and "in Progress"; opstask writes one form (§13 D7).
 */
import type { OperationState, OperationType } from "../api/status.ts";
import type { PeerTask, TaskError, UnsupportedCode, Vocabulary } from "./types.ts";

export const describe = {
  admitInProgress: "Task Admit phase is in progress",
  executionInProgress: "Task Execution phase is in progress",
  cleanupInProgress: "Task Cleanup phase is in progress",
  cleanupCompleted: "Cleanup completed",
  cleanupSkippedRejected: "Cleanup skipped for rejected task",
  unsupported: "Task config is not supported by this controller",
  invalid: "Task is invalid; see lastErrors for the fields to fix",
  tooLarge: "Task is too large for the controller; see lastErrors for its size and the limit",
  duplicate: (words: Vocabulary): string =>
    `${words.kind} for the same ${words.group} is already in progress`,
  queued: (words: Vocabulary, peer: PeerTask): string =>
    `Waiting for ${words.kind} ${peer.name} on the same ${words.group} to finish`,
  exclusivePeer: (words: Vocabulary, peer: string): string =>
    `${words.kind} ${peer} holds the same ${words.group} exclusively`,
  deadline: (type: OperationType): string => `Task ${type} phase exceeded its deadline`,
  cancelled: (by: string): string => `Task cancelled by ${by}`,
  queuedUntil: (queued: string, until: string): string => `${queued} (waits until ${until})`,
  queueTimeout: (words: Vocabulary, peer: string): string =>
    `Task waited too long for ${words.kind} ${peer} on the same ${words.group} to finish`,
  /** Druid's text when a handler leaves its description empty. */
  fallback: (type: OperationType, state: OperationState, task: string): string =>
    `${type} is in state ${state} for task ${task}`,
} as const;

/** The status description of a task that cannot run, by why. */
export const unsupportedDescription: Record<UnsupportedCode, string> = {
  ERR_UNSUPPORTED_TASK: describe.unsupported,
  ERR_INVALID_TASK: describe.invalid,
  ERR_TASK_TOO_LARGE: describe.tooLarge,
};

const unsupportedMessage: Record<UnsupportedCode, string> = {
  ERR_UNSUPPORTED_TASK: "unsupported task config",
  ERR_INVALID_TASK: "invalid task",
  ERR_TASK_TOO_LARGE: "task too large",
};

/** "an EtcdOpsTask" (druid's text) but "a CacheFlush": the article by the word's first letter. */
const withArticle = (word: string): string => `${/^[aeiou]/i.test(word) ? "an" : "a"} ${word}`;

/** `EtcdOpsTask` → `ETCD_OPS_TASK` (druid's `ERR_DELETE_ETCD_OPS_TASK`), `HTTPProbe` → `HTTP_PROBE`. */
const screamingSnake = (word: string): string =>
  word
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1_$2")
    .replace(/[^A-Za-z0-9]+/g, "_")
    .toUpperCase();

export const lifecycleErrors = {
  duplicate: (words: Vocabulary, namespace: string, group: string, peer: PeerTask): TaskError => ({
    code: "ERR_DUPLICATE_TASK",
    message: "duplicate task found",
    cause: `${withArticle(words.kind)} for ${words.group} ${namespace}/${group} is already present (task: ${peer.name})`,
  }),
  exclusivePeer: (words: Vocabulary, namespace: string, group: string, peer: PeerTask): TaskError => ({
    code: "ERR_PEER_TASK_EXCLUSIVE",
    message: `${words.group} is held exclusively`,
    cause: `${words.kind} ${peer.name} is changing ${words.group} ${namespace}/${group}; create this task again once it has finished`,
  }),
  unsupported: (code: UnsupportedCode, reason: string): TaskError => ({
    code,
    message: unsupportedMessage[code],
    cause: reason,
  }),
  deleteFailed: (words: Vocabulary, cause: string): TaskError => ({
    code: `ERR_DELETE_${screamingSnake(words.kind)}`,
    message: `failed to delete ${words.kind} resource`,
    cause,
  }),
  queueTimeout: (deadlineMs: number, peer: string): TaskError => ({
    code: "ERR_QUEUE_TIMEOUT",
    message: `not admitted within ${Math.round(deadlineMs / 1000)}s (--queue-deadline)`,
    cause: `still queued behind ${peer}; create the task again once it has finished, or raise the deadline`,
  }),
  /** `after` is the last thing the task recorded before the cancel (its last step, for a steps task). */
  cancelled: (by: string, after: string | undefined): TaskError => ({
    code: "ERR_CANCELLED",
    message: `cancelled by ${by}`,
    cause: after === undefined ? "before any work started" : `after: ${after}`,
  }),
  deadline: (type: OperationType, deadlineMs: number, last: TaskError | undefined): TaskError => ({
    code: "ERR_DEADLINE_EXCEEDED",
    message: `${type} phase did not complete within ${Math.round(deadlineMs / 1000)}s`,
    cause: last === undefined ? "no successful attempt before the deadline" : `last error: ${last.code}`,
  }),
} as const;
