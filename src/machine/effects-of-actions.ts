/**
 * The one mapping from the machine's named actions to effect descriptors. XState's own bookkeeping
 * actions (`xstate.raise`, `xstate.assign`, …) are not effects and are dropped here.
 */
import type { ExecutableActionsFrom } from "xstate";
import { TaskEffect } from "../effects/task-effect.ts";
import type { TaskMachine } from "./task-machine.ts";

type MachineAction = ExecutableActionsFrom<TaskMachine>;

/**
 * XState types `params` as `unknown` once its own special actions join the union, so narrowing on
 * `type` does not narrow `params`. The machine's `setup` declares these shapes; this table repeats them
 * for the one place that reads them, and the compiler checks each constructor call against it.
 */
type Args<Tag extends TaskEffect["_tag"]> = Omit<Extract<TaskEffect, { readonly _tag: Tag }>, "_tag">;
interface EffectParams {
  addFinalizer: Args<"AddFinalizer">;
  patchStatus: Args<"PatchStatus">;
  runPhase: Args<"RunPhase">;
  removeFinalizer: Args<"RemoveFinalizer">;
  recordEvent: Args<"RecordEvent">;
  requeueAfter: Args<"RequeueAfter">;
  awaitChange: Args<"AwaitChange">;
}
const paramsOf = <K extends keyof EffectParams>(action: MachineAction, _type: K): EffectParams[K] =>
  action.params as EffectParams[K];

export const effectOf = (action: MachineAction): TaskEffect | undefined => {
  switch (action.type) {
    case "addFinalizer":
      return TaskEffect.AddFinalizer(paramsOf(action, "addFinalizer"));
    case "patchStatus":
      return TaskEffect.PatchStatus(paramsOf(action, "patchStatus"));
    case "runPhase":
      return TaskEffect.RunPhase(paramsOf(action, "runPhase"));
    case "deleteTask":
      return TaskEffect.DeleteTask();
    case "removeFinalizer":
      return TaskEffect.RemoveFinalizer(paramsOf(action, "removeFinalizer"));
    case "recordEvent":
      return TaskEffect.RecordEvent(paramsOf(action, "recordEvent"));
    case "requeueAfter":
      return TaskEffect.RequeueAfter(paramsOf(action, "requeueAfter"));
    case "awaitChange":
      return TaskEffect.AwaitChange(paramsOf(action, "awaitChange"));
    default:
      return undefined;
  }
};

export const effectsOf = (actions: ReadonlyArray<MachineAction>): TaskEffect[] =>
  actions.flatMap((action) => {
    const effect = effectOf(action);
    return effect === undefined ? [] : [effect];
  });
