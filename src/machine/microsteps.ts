/**
 * The microsteps the machine takes for one event: what xstate's pure `getMicrosteps` computes, without
 * what it builds per call. `getMicrosteps` makes a fresh inert actor for every call (an `Actor`, its
 * mailbox and system, the machine's whole initial snapshot, then a second system), a good part of
 * what a burst allocated in xstate (bench/PROFILE.md, eighth pass); a pass
 * calls it once per event. Here that actor scope is made once, with every side effect inert as in
 * xstate's, and each event is taken through the machine's own public `microstep` with it.
 *
 * The scope can be shared because the task machine spawns and invokes nothing (its system never gains
 * an actor) and a step runs synchronously to its end. Its action executor records what xstate hands it:
 * xstate passes each executable action of a microstep to the scope's executor in the order it puts them
 * in that microstep's list, so the recorded list is the microsteps' lists one after the other. A test
 * (test/machine/microsteps.test.ts) holds the two equal on every path from every situation.
 */
import { type AnyActorScope, createActor, type ExecutableActionsFrom, type SnapshotFrom } from "xstate";
import type { TaskMachine } from "./task-machine.ts";

type TaskSnapshot = SnapshotFrom<TaskMachine>;
/** An event the machine is sent. */
export type TaskEvent = Parameters<TaskMachine["transition"]>[1];
type TaskAction = ExecutableActionsFrom<TaskMachine>;

/** The snapshot after each microstep, and every action of them in order. */
export interface Microsteps {
  readonly snapshots: ReadonlyArray<TaskSnapshot>;
  readonly actions: ReadonlyArray<TaskAction>;
}

export type MicrostepsOf = (snapshot: TaskSnapshot, event: TaskEvent) => Microsteps;

/** `microstepsOf(snapshot, event)` for `machine`, with one inert scope made at the first call. */
export const microstepsFor = (machine: TaskMachine): MicrostepsOf => {
  let recording: TaskAction[] = [];
  let scope: AnyActorScope | undefined;
  // The scope's `self` is an actor of the machine, as in xstate's, made from the first pass's input
  // (xstate makes it without one, which runs the machine's context factory into a caught TypeError).
  const scopeFor = (snapshot: TaskSnapshot): AnyActorScope => {
    const self = createActor(machine, { input: snapshot.context.input });
    return {
      self,
      id: "",
      sessionId: "",
      logger: () => {},
      defer: () => {},
      emit: () => {},
      system: self.system,
      stopChild: () => {},
      actionExecutor: (action) => {
        recording.push(action as TaskAction);
      },
    };
  };
  return (snapshot, event) => {
    scope ??= scopeFor(snapshot);
    const actions: TaskAction[] = [];
    recording = actions;
    try {
      return { snapshots: machine.microstep(snapshot, event, scope), actions };
    } finally {
      recording = [];
    }
  };
};
