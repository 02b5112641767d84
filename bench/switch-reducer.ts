/**
 * The same decisions as the task machine's first step of a pass, written as a plain switch reducer
 * with no XState: the baseline the benchmark compares the machine's cost against. It covers the
 * routes the benchmark measures (new task up to its Admit call, a settled terminal task, an InProgress
 * task up to its Execute call, a deletion up to its Cleanup call). It is a yardstick, not a second
 * implementation: the benchmark checks it produces the same effects for those inputs.
 */
import { isTerminal } from "../src/api/status.ts";
import { TaskEffect } from "../src/effects/task-effect.ts";
import { blockingPeer } from "../src/machine/admission.ts";
import { describe } from "../src/machine/descriptions.ts";
import { statusPatch, withOperation, withState } from "../src/machine/status-edits.ts";
import { machineVersion } from "../src/machine/task-machine.ts";
import { fromWireTime } from "../src/machine/time.ts";
import type { PassInput } from "../src/machine/types.ts";

type Route = "foreign" | "deletion" | "released" | "terminal" | "claim" | "execution" | "admission";

const route = (input: PassInput): Route => {
  const { task, config } = input;
  const owns = task.finalizers.includes(config.finalizer);
  if ((task.machineVersion ?? 0) > machineVersion) return "foreign";
  if (task.deletingSince !== undefined) return owns ? "deletion" : "released";
  if (isTerminal(task.status.state)) return "terminal";
  if (!owns) return "claim";
  return task.status.state === "InProgress" ? "execution" : "admission";
};

export const switchReducer = (input: PassInput): TaskEffect[] => {
  const { task, config, now } = input;
  const effects: TaskEffect[] = [];
  let next = route(input);
  if (next === "claim") {
    effects.push(TaskEffect.AddFinalizer({ finalizer: config.finalizer, machineVersion }));
    next = task.status.state === "InProgress" ? "execution" : "admission";
  }
  switch (next) {
    case "foreign":
    case "released":
      effects.push(
        TaskEffect.AwaitChange({
          reason: next === "foreign" ? "written by a newer machine version" : "released",
        }),
      );
      return effects;
    case "terminal": {
      const deadline =
        (fromWireTime(task.status.lastTransitionTime) ?? task.createdAt) + task.ttlSeconds * 1000;
      if (deadline <= now) {
        effects.push(TaskEffect.DeleteTask());
        return effects;
      }
      effects.push(
        TaskEffect.RequeueAfter({
          delayMs: Math.max(config.minRequeueMs, Math.ceil(deadline - now)),
          reason: "ttl",
        }),
      );
      return effects;
    }
    case "admission": {
      if (blockingPeer(task, input.peers) !== undefined) return effects;
      if (input.retryAt !== undefined && now < input.retryAt) {
        effects.push(
          TaskEffect.RequeueAfter({
            delayMs: Math.max(config.minRequeueMs, input.retryAt - now),
            reason: "waiting",
          }),
        );
        return effects;
      }
      effects.push(TaskEffect.RunPhase({ phase: "admit" }));
      return effects;
    }
    case "execution": {
      if (input.retryAt !== undefined && now < input.retryAt) {
        effects.push(
          TaskEffect.RequeueAfter({
            delayMs: Math.max(config.minRequeueMs, input.retryAt - now),
            reason: "waiting",
          }),
        );
        return effects;
      }
      const started = withState(task.status, "InProgress", now);
      const announced =
        started.lastOperation?.type === "Execution"
          ? started
          : withOperation(started, "Execution", "InProgress", describe.executionInProgress, input.runId, now);
      const patch = statusPatch(task.status, announced);
      if (patch !== undefined) effects.push(TaskEffect.PatchStatus({ patch }));
      effects.push(TaskEffect.RunPhase({ phase: "execute" }));
      return effects;
    }
    case "deletion":
      effects.push(TaskEffect.RunPhase({ phase: "cleanup" }));
      return effects;
  }
};
