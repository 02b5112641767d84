/**
 * The standard conditions of a finished task (library kinds that declare them): written in the same
 * status write as the final state, once, so `kubectl wait --for=condition=Succeeded` works and a
 * condition never says something the state does not.
 */
import type { TaskCondition, TaskState, TaskStatus } from "../api/status.ts";
import { isTerminal } from "../api/status.ts";
import { toWireTime } from "./time.ts";
import type { ConditionTypes } from "./types.ts";

const conditionsOf = (
  types: ConditionTypes,
  state: TaskState,
  status: TaskStatus,
  generation: number | undefined,
  now: number,
): ReadonlyArray<TaskCondition> => {
  const succeeded = state === "Succeeded";
  const common = {
    ...(generation === undefined ? {} : { observedGeneration: generation }),
    lastTransitionTime: status.lastTransitionTime ?? toWireTime(now),
    reason: state,
    message: status.lastOperation?.description ?? "",
  };
  return [
    { type: types.succeeded, status: succeeded ? "True" : "False", ...common },
    { type: types.failed, status: succeeded ? "False" : "True", ...common },
  ];
};

/**
 * `desired` with the conditions of its final state when this write is the one that ends the task
 * (`persisted` not yet final); otherwise `desired` as it is.
 */
export const withFinalConditions = (
  persisted: TaskStatus,
  desired: TaskStatus,
  types: ConditionTypes | undefined,
  generation: number | undefined,
  now: number,
): TaskStatus => {
  const state = desired.state;
  if (types === undefined || state === undefined || !isTerminal(state) || persisted.state === state)
    return desired;
  return { ...desired, conditions: conditionsOf(types, state, desired, generation, now) };
};
