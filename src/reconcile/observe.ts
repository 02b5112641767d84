/** Turns a decoded task into the machine's `TaskObservation`, and its peers into `PeerTask`s. */
import { fromWireTime } from "../machine/time.ts";
import type { PeerTask, TaskObservation } from "../machine/types.ts";
import { tooLargeReason } from "./oversized-task.ts";
import {
  cancelAnnotation,
  cancelledByAnnotation,
  machineVersionAnnotation,
  type TaskFacts,
} from "./task-kind.ts";

/**
 * @param supported whether a handler exists for the task's config member; when not, the reason is
 *   recorded and the machine Rejects the task (it stays deletable: deletion never needs a handler).
 */
export const observe = (facts: TaskFacts, supported: ReadonlyArray<string>): TaskObservation => {
  const { metadata } = facts;
  const deletingSince = fromWireTime(metadata.deletionTimestamp);
  const version = Number(metadata.annotations?.[machineVersionAnnotation]);
  return {
    namespace: metadata.namespace,
    name: metadata.name,
    uid: metadata.uid,
    createdAt: fromWireTime(metadata.creationTimestamp) ?? 0,
    ...(metadata.generation === undefined ? {} : { generation: metadata.generation }),
    finalizers: metadata.finalizers ?? [],
    ...(deletingSince === undefined ? {} : { deletingSince }),
    ...(Number.isInteger(version) ? { machineVersion: version } : {}),
    ttlSeconds: facts.ttlSeconds,
    ...(facts.group === undefined ? {} : { group: facts.group }),
    ...(facts.expedited === true ? { expedited: true } : {}),
    ...unsupportedOf(facts, supported),
    ...cancelOf(metadata),
    status: facts.status,
  };
};

/** A cancel counts only when it names this object's UID: one copied from another task is ignored. */
export const cancelOf = (metadata: TaskFacts["metadata"]): Pick<TaskObservation, "cancel"> => {
  const annotations = metadata.annotations;
  if (annotations?.[cancelAnnotation] !== metadata.uid) return {};
  const by = annotations[cancelledByAnnotation]?.trim();
  return { cancel: { by: by === undefined || by === "" ? "an unnamed user" : by } };
};

const unsupportedOf = (
  facts: TaskFacts,
  supported: ReadonlyArray<string>,
): Pick<TaskObservation, "unsupported"> => {
  if (facts.tooLarge !== undefined)
    return { unsupported: { code: "ERR_TASK_TOO_LARGE", reason: tooLargeReason(facts.tooLarge) } };
  if (facts.invalid !== undefined) {
    return {
      unsupported: {
        code: "ERR_INVALID_TASK",
        reason: `the task does not decode: ${facts.invalid.join("; ")}`,
      },
    };
  }
  if (supported.includes(facts.member)) return {};
  const reason = `config member "${facts.member}" is not supported by this controller (supported: ${supported.join(", ")})`;
  return { unsupported: { code: "ERR_UNSUPPORTED_TASK", reason } };
};

/** A task as its peers see it; `finalizer` is ours (a deleting task without it is released). */
export const asPeer = (facts: TaskFacts, finalizer: string): PeerTask => {
  const deleting = facts.metadata.deletionTimestamp !== undefined;
  return {
    name: facts.metadata.name,
    uid: facts.metadata.uid,
    createdAt: fromWireTime(facts.metadata.creationTimestamp) ?? 0,
    state: facts.status.state,
    deleting,
    ...(deleting && !(facts.metadata.finalizers ?? []).includes(finalizer) ? { released: true } : {}),
    ...(facts.expedited === true ? { expedited: true } : {}),
    ...(facts.activity === undefined ? {} : { activity: facts.activity }),
  };
};

/** Peers of `task`: same namespace and admission group, other objects. */
export const peersOf = (task: TaskFacts, all: ReadonlyArray<TaskFacts>, finalizer: string): PeerTask[] =>
  task.group === undefined
    ? []
    : all
        .filter(
          (other) =>
            other.metadata.uid !== task.metadata.uid &&
            other.metadata.namespace === task.metadata.namespace &&
            other.group === task.group,
        )
        .map((peer) => asPeer(peer, finalizer));
