/**
 * The pass protocol: one reconcile pass as a conversation between the machine and a driver.
 *
 *   start(input)          → a step: the next request, or the pass's end
 *   answer(step, answer)  → the next step
 *   drive(step, perform)  → performs requests until the pass ends, stops, or the performer suspends it
 *
 * A request is one of a closed set (`PassRequest`): add or remove our finalizer, patch the status,
 * DELETE the task, call a handler phase, record an Event. A pass ends with `RequeueAfter` or
 * `AwaitChange` (`PassEnd`), or stops when the task is gone or a write failed. The read is the
 * pass's input: the driver reads the object (and its group's peers) before `start`.
 *
 * Every driver — the Kubernetes runtime, the memory interpreter, `simulate()`, benchmarks and tests —
 * performs requests and nothing else; `drive` is the only loop. A driver that cannot answer at once (a
 * handler call that runs for minutes, a call parked by a test) answers `Suspend`: `drive` returns the
 * request step, and the driver calls `drive(answer(step, …), perform)` when the answer comes.
 *
 * What the answers mean is decided here, once: a `Gone` answer stops the pass (nothing left to act
 * on), a failed DELETE goes back to the machine (which records it and backs off), any other failed
 * write stops the pass with its result kept (`unwritten`), to be replayed by the next pass, and a
 * handler that threw is a transient error until its phase has thrown `handlerDefectLimit` times, then a
 * failure (handler-defect.ts).
 */
import * as Data from "effect/Data";
import * as Effect from "effect/Effect";
import type { SnapshotFrom } from "xstate";
import { isPassEnd, type PassEnd, type TaskEffect } from "../effects/task-effect.ts";
import { effectsOf } from "../machine/effects-of-actions.ts";
import { microstepsFor, type TaskEvent } from "../machine/microsteps.ts";
import {
  contextOf,
  type DeleteEvent,
  phaseEvent,
  type TaskMachine,
  taskMachine,
} from "../machine/task-machine.ts";
import type { KnownResult, PassInput, PhaseOutcome } from "../machine/types.ts";
import { defectOutcome, type HandlerDefect } from "./handler-defect.ts";

export type TaskSnapshot = SnapshotFrom<TaskMachine>;

/** What a pass asks its driver to do (every effect but the two that end a pass). */
export type PassRequest = Exclude<TaskEffect, PassEnd>;

/**
 * A driver's answer to a request:
 * - `Done`: performed (a write succeeded, an Event was recorded);
 * - `Gone`: the task is no longer there (404, or the name now holds another object);
 * - `Failed`: the write failed with `cause` (the API's error text);
 * - `Returned`: the handler phase returned `outcome`;
 * - `Threw`: the handler phase threw (a defect); the pass decides what that means (handler-defect.ts);
 * - `Suspend`: no answer yet (the driver answers later, with `answer`).
 * `now` is when the answer came: the times the machine writes next are this one.
 */
export type Answer = Data.TaggedEnum<{
  Done: { readonly now: number };
  // biome-ignore lint/complexity/noBannedTypes: Data.TaggedEnum spells a variant without fields as `{}`.
  Gone: {};
  Failed: { readonly cause: string; readonly now: number };
  Returned: {
    readonly outcome: PhaseOutcome;
    readonly now: number;
    readonly cancel?: { readonly by: string };
  };
  Threw: { readonly defect: HandlerDefect; readonly now: number };
  // biome-ignore lint/complexity/noBannedTypes: as above.
  Suspend: {};
}>;
export const Answer = Data.taggedEnum<Answer>();

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

export interface Pass {
  readonly snapshot: TaskSnapshot;
  /** Effects still to perform, in order; the last one of a finished pass is its end. */
  readonly pending: ReadonlyArray<TaskEffect>;
  readonly transitions: ReadonlyArray<TransitionRecord>;
  /**
   * The handler result this pass holds that is not on the object yet: from a handler call of this
   * pass, or replayed from an earlier pass whose write failed. A status write or the finalizer removal
   * puts it on the object; a pass that stops before then leaves it to be kept and replayed.
   */
  readonly unwritten?: KnownResult;
}

/** Where a pass is: at a request, at its end, or stopped (task gone, or a write failed). */
export type Step =
  | { readonly _tag: "Request"; readonly pass: Pass; readonly request: PassRequest }
  | { readonly _tag: "End"; readonly pass: Pass; readonly end: PassEnd }
  | { readonly _tag: "Stopped"; readonly pass: Pass; readonly stopped: Stop };

/** Why a pass stopped before its end. */
export type Stop =
  | { readonly _tag: "Gone" }
  | { readonly _tag: "WriteFailed"; readonly request: PassRequest["_tag"]; readonly cause: string }
  /** A bug, in the machine (a pass without an end) or in a driver (a request answered the wrong way). */
  | { readonly _tag: "Defect"; readonly cause: string };

const microstepsOf = microstepsFor(taskMachine);

/** Takes `event` through the machine: records each microstep and collects its effects in order. */
const walk = (pass: Pass, event: TaskEvent): Pass => {
  const { snapshots, actions } = microstepsOf(pass.snapshot, event);
  let snapshot = pass.snapshot;
  const transitions = [...pass.transitions];
  snapshots.forEach((next, index) => {
    transitions.push({
      from: statePath(snapshot),
      event: index === 0 ? event.type : "always",
      to: statePath(next),
    });
    snapshot = next;
  });
  return { ...pass, snapshot, pending: [...pass.pending, ...effectsOf(actions)], transitions };
};

/** Where a state value sits, as a dotted path: `execution.calling`. */
export const statePath = (snapshot: TaskSnapshot): string => {
  const path = (value: unknown): string =>
    typeof value === "string"
      ? value
      : Object.entries(value as Record<string, unknown>)
          .map(([key, child]) => `${key}.${path(child)}`)
          .join(",");
  return path(snapshot.value);
};

const stepOf = (pass: Pass): Step => {
  const next = pass.pending[0];
  if (next === undefined)
    // The machine always ends a pass with a requeue or an await; this is a defect of the machine.
    return {
      _tag: "Stopped",
      pass,
      stopped: { _tag: "Defect", cause: "the pass ended without a requeue or await" },
    };
  return isPassEnd(next) ? { _tag: "End", pass, end: next } : { _tag: "Request", pass, request: next };
};

/**
 * Starts a pass: the machine is put in `idle` with the context rebuilt from the input (nothing of an
 * earlier pass survives), and receives `reconcile`. A `known` result in the input that the machine
 * replays is the pass's `unwritten` result until a write puts it on the object.
 */
export const start = (input: PassInput): Step => {
  const idle = taskMachine.resolveState({ value: "idle", context: contextOf(input) });
  const pass = walk({ snapshot: idle, pending: [], transitions: [] }, { type: "reconcile" });
  const replayed = input.known !== undefined && pass.snapshot.context.replayed;
  return stepOf(replayed && input.known !== undefined ? { ...pass, unwritten: input.known } : pass);
};

const skip = (pass: Pass): Pass => ({ ...pass, pending: pass.pending.slice(1) });

/** The next step once `step`'s request got `result` (`Suspend` is not an answer: it keeps the step). */
export const answer = (step: Extract<Step, { _tag: "Request" }>, result: Answer): Step => {
  const { pass, request } = step;
  switch (result._tag) {
    case "Suspend":
      return step;
    case "Gone":
      return { _tag: "Stopped", pass, stopped: { _tag: "Gone" } };
    case "Returned":
    case "Threw": {
      if (request._tag !== "RunPhase") return misanswered(step, result);
      const outcome =
        result._tag === "Returned"
          ? result.outcome
          : defectOutcome(pass.snapshot.context.input, request.phase, result.defect);
      const event = phaseEvent(
        request.phase,
        outcome,
        result.now,
        result._tag === "Returned" ? result.cancel : undefined,
      );
      const next = walk(skip(pass), event);
      return stepOf({ ...next, unwritten: { phase: request.phase, outcome } });
    }
    case "Failed": {
      if (request._tag !== "DeleteTask")
        return {
          _tag: "Stopped",
          pass,
          stopped: { _tag: "WriteFailed", request: request._tag, cause: result.cause },
        };
      // The machine decides what a failed DELETE means (recorded, retried with backoff).
      const event: DeleteEvent = { type: "delete.failed", now: result.now, cause: result.cause };
      return stepOf(walk(skip(pass), event));
    }
    case "Done": {
      if (request._tag === "RunPhase") return misanswered(step, result);
      if (request._tag === "DeleteTask") {
        const event: DeleteEvent = { type: "delete.done", now: result.now };
        return stepOf(walk(skip(pass), event));
      }
      const next = skip(pass);
      // A status write or the finalizer removal carries the unwritten result onto the object.
      if (request._tag === "PatchStatus" || request._tag === "RemoveFinalizer") {
        const { unwritten: _written, ...rest } = next;
        return stepOf(rest);
      }
      return stepOf(next);
    }
  }
};

/** A driver answered a request with the wrong kind of answer: a bug in the driver, stopped loudly. */
const misanswered = (step: Extract<Step, { _tag: "Request" }>, result: Answer): Step => ({
  _tag: "Stopped",
  pass: step.pass,
  stopped: { _tag: "Defect", cause: `${step.request._tag} answered with ${result._tag}` },
});

/** Performs one request; `Suspend` hands the pass back to the driver until it has the answer. */
export type Perform<R> = (request: PassRequest, pass: Pass) => Effect.Effect<Answer, never, R>;

/**
 * The one loop: performs requests from `step` until the pass ends or stops (answers that step), or the
 * performer suspends it (answers the request step it suspended on, to be answered and driven again).
 */
export const drive = <R>(step: Step, perform: Perform<R>): Effect.Effect<Step, never, R> =>
  Effect.gen(function* () {
    let current = step;
    while (current._tag === "Request") {
      const result = yield* perform(current.request, current.pass);
      if (result._tag === "Suspend") return current;
      current = answer(current, result);
    }
    return current;
  });

/** `drive` for drivers that answer at once (the memory interpreter, tests, benchmarks). */
export const driveSync = (step: Step, perform: (request: PassRequest, pass: Pass) => Answer): Step =>
  Effect.runSync(drive(step, (request, pass) => Effect.sync(() => perform(request, pass))));
