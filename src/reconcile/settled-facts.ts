/**
 * The facts of a task the controller sees for the first time and that only waits for its TTL, read
 * without decoding its spec. At a takeover every cached task arrives this way, and with 10,000 finished
 * tasks the full decode (an Effect Schema decode of the whole object) was the
 * largest part of the takeover's CPU (bench/PROFILE.md), only to learn 10,000 due times.
 *
 * Sound without the spec because of what the facts are used for: a settled task gets a timer, not a
 * pass, and the timer's pass decodes it in full. The metadata and status read here are the decoded
 * ones (`TaskKind.undecodedFacts` promises that). The TTL is the one thing the spec decides: the spec's
 * own when the spec decodes, the kind's default when it does not. Not knowing which, the timer takes
 * the smaller, so it never fires late; fired early, the pass decodes and waits for the rest. A
 * terminal task blocks no admission (machine/admission.ts), so leaving its admission group unread
 * changes no other task's pass.
 *
 * Only for a task the core does not know yet (in no admission group): a known task may
 * be leaving a group whose waiting tasks must then be woken, which takes its decoded group.
 */
import { isTerminal, type TaskState } from "../api/status.ts";
import type { TaskFacts, TaskKind } from "./task-kind.ts";

/** Facts for the core of a terminal, not deleting task; undefined when it needs a full decode. */
export const settledFacts = <Task>(kind: TaskKind<Task>, object: unknown): TaskFacts | undefined => {
  // Most changes are of unfinished tasks: a look at the raw state spares them the read below.
  if (!looksFinished(object)) return undefined;
  const read = kind.undecodedFacts?.(object);
  if (read === undefined) return undefined;
  if (read.metadata.deletionTimestamp !== undefined || !isTerminal(read.status.state)) return undefined;
  return {
    metadata: read.metadata,
    status: read.status,
    ttlSeconds: Math.min(read.ttlSeconds, kind.defaultTtlSeconds),
    // Unread for a terminal task: its pass (at the timer) decodes the member with the rest.
    member: "",
  };
};

const looksFinished = (object: unknown): boolean => {
  const status =
    typeof object === "object" && object !== null && "status" in object ? object.status : undefined;
  const state = typeof status === "object" && status !== null && "state" in status ? status.state : undefined;
  return typeof state === "string" && isTerminal(state as TaskState);
};
