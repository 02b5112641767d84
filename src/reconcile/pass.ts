/**
 * One reconcile pass, as a value that is advanced one effect at a time:
 *
 *   startPass(input) → pass; while pass.next is not a pass end:
 *     perform pass.next; then advance(pass), or for `RunPhase` deliver(pass, outcome)
 *
 * Both interpreters drive passes with these three functions, so the memory simulation can stop a pass
 * between any two effects (a crash) or park it on a handler call (a hang) and still be the same driver
 * the Kubernetes runtime runs.
 */
import { type ExecutableActionsFrom, getMicrosteps, type SnapshotFrom } from "xstate";
import { effectsOf } from "../effects/from-actions.ts";
import { isPassEnd, type PassEnd, type TaskEffect } from "../effects/task-effect.ts";
import {
  contextOf,
  type DeleteEvent,
  phaseEvent,
  type TaskMachine,
  taskMachine,
} from "../machine/task-machine.ts";
import type { PassInput, Phase, PhaseOutcome } from "../machine/types.ts";

export type TaskSnapshot = SnapshotFrom<TaskMachine>;

/**
 * One microstep the machine took, for logs, for `describe` and for edge coverage: where it was, what
 * happened (`reconcile` for the start of a pass, `always` for an eventless step, else the event type),
 * and where it went.
 */
export interface TransitionRecord {
  readonly from: string;
  readonly event: string;
  readonly to: string;
}

type Microstep = [TaskSnapshot, ExecutableActionsFrom<TaskMachine>[]];

/** Folds microsteps into the pass: records each step and collects its effects in order. */
const walk = (pass: Pass, steps: ReadonlyArray<Microstep>, firstEvent: string): Pass => {
  let snapshot = pass.snapshot;
  const pending = [...pass.pending];
  const transitions = [...pass.transitions];
  steps.forEach(([next, actions], index) => {
    transitions.push({
      from: statePath(snapshot),
      event: index === 0 ? firstEvent : "always",
      to: statePath(next),
    });
    pending.push(...effectsOf(actions));
    snapshot = next;
  });
  return { snapshot, pending, transitions };
};

export interface Pass {
  readonly snapshot: TaskSnapshot;
  /** Effects still to perform, in order; the last one of a finished pass is its end. */
  readonly pending: ReadonlyArray<TaskEffect>;
  readonly transitions: ReadonlyArray<TransitionRecord>;
}

/** Where a state value sits, as a dotted path: `execution.calling`. */
export const statePath = (snapshot: TaskSnapshot): string => {
  const walk = (value: unknown): string =>
    typeof value === "string"
      ? value
      : Object.entries(value as Record<string, unknown>)
          .map(([key, child]) => `${key}.${walk(child)}`)
          .join(",");
  return walk(snapshot.value);
};

/**
 * Starts a pass: the machine is put in `idle` with the context rebuilt from the input (nothing of an
 * earlier pass survives), and receives `reconcile`.
 */
export const startPass = (input: PassInput): Pass => {
  const idle = taskMachine.resolveState({ value: "idle", context: contextOf(input) });
  const start: Pass = { snapshot: idle, pending: [], transitions: [] };
  return walk(start, getMicrosteps(taskMachine, idle, { type: "reconcile" }), "reconcile");
};

/** The next effect to perform. */
export const nextEffect = (pass: Pass): TaskEffect | undefined => pass.pending[0];

/** The end of the pass, once every other effect is performed. */
export const passEnd = (pass: Pass): PassEnd | undefined => {
  const next = pass.pending[0];
  return next !== undefined && isPassEnd(next) ? next : undefined;
};

/** The next effect was performed (any effect but `RunPhase`). */
export const advance = (pass: Pass): Pass => ({ ...pass, pending: pass.pending.slice(1) });

/**
 * The `DeleteTask` effect at the head of the pass was answered: done (or the object is already gone),
 * or failed with the API's error text.
 */
export const answerDelete = (pass: Pass, result: { readonly failed?: string }, now: number): Pass => {
  const event: DeleteEvent =
    result.failed === undefined
      ? { type: "delete.done", now }
      : { type: "delete.failed", now, cause: result.failed };
  return walk(advance(pass), getMicrosteps(taskMachine, pass.snapshot, event), event.type);
};

/** The `RunPhase` effect at the head of the pass returned `outcome`, at time `now`. */
export const deliver = (pass: Pass, phase: Phase, outcome: PhaseOutcome, now: number): Pass => {
  const event = phaseEvent(phase, outcome, now);
  return walk(advance(pass), getMicrosteps(taskMachine, pass.snapshot, event), event.type);
};
