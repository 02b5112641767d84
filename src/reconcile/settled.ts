/**
 * A settled task: one whose next pass would only wait for its TTL. Such a pass reads the object, runs
 * the machine from `idle` through `route` → `terminal` → `retained`, and ends with
 * `RequeueAfter(ttl)` — no request, no write, no Event. At a takeover (a restart, a new leader) every
 * cached task gets a pass, and with 10,000 finished tasks that was 10,000 machine runs to learn 10,000
 * due times (docs/design-notes.md §20). The due time follows from the task alone, so the
 * core sets the task's timer instead, and the pass runs when the timer fires (the TTL deletion).
 *
 * The rule reads the machine's own guards in the order `route` takes them (machine/task-machine.ts): a task
 * written by a newer machine, a deleting task, or a task not terminal is not settled; a terminal task
 * whose TTL has run out is not settled either (its pass deletes it). The property test
 * test/reconcile/settled.test.ts checks, over arbitrary inputs, that a pass over a settled task is
 * exactly that one requeue at the due time answered here.
 */
import { isTerminal } from "../api/status.ts";
import { contextOf, machineVersion } from "../machine/task-machine.ts";
import { ttlDeadline } from "../machine/task-vocabulary.ts";
import type { PassInput } from "../machine/types.ts";

/**
 * When the TTL of a settled task runs out (ms since the epoch), or undefined when the task needs a
 * pass now. Only a fresh start qualifies: no handler result kept for it and no retry state, so that the
 * skipped pass could not have written or forgotten anything.
 */
export const settledUntil = (input: PassInput): number | undefined => {
  if (input.known !== undefined || input.retries !== 0 || input.retryAt !== undefined) return undefined;
  const { task } = input;
  if ((task.machineVersion ?? 0) > machineVersion) return undefined;
  if (task.deletingSince !== undefined || !isTerminal(task.status.state)) return undefined;
  const due = ttlDeadline(contextOf(input));
  return due > input.now ? due : undefined;
};
