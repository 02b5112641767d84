/**
 * `stepsHandler`: a task handler of ordered, named steps that resumes where it stopped. Each Execute
 * call does one step: read the progress from the task's annotations (step-progress.ts), run the next
 * step, wait for its `until` within its deadline, record its completion and a `StepCompleted` Event, and
 * answer `retry` with `Step n/N <name>: …`; the last step completes the phase. Cleanup of a Failed task
 * undoes the finished steps in reverse (`StepUndone`). A step whose completion was recorded never runs
 * again; one whose record was lost runs again (the step author's contract: step.ts).
 */
import * as Effect from "effect/Effect";
import type { TaskState } from "../../api/status.ts";
import type { TaskHandler } from "../../handlers/handler.ts";
import type { HandlerContext, OwnTask } from "../../handlers/handler-context.ts";
import type { PhaseOutcome } from "../../machine/types.ts";
import type { TaskKind } from "../../reconcile/task-kind.ts";
import { completed, failed, retry } from "../outcome.ts";
import type { StepStop, TaskStep } from "./step.ts";
import { StepErrorCodes } from "./step-errors.ts";
import {
  progressAnnotations,
  readProgress,
  type StepAnnotations,
  type StepProgress,
  stepAnnotations,
} from "./step-progress.ts";

export interface StepsHandlerOptions<Task, R, Context extends HandlerContext> {
  /** The steps, in order; names unique. */
  readonly steps: ReadonlyArray<TaskStep<Task, R, Context>>;
  /**
   * Where the progress is recorded: an annotation prefix (`example.dev/rollout` gives
   * `example.dev/rollout-last-completed-step`, `-wait-start`, `-last-undone-step`, `-task-uid`), or the names.
   * Name them in the kind's `cachedMetadata.annotations` (`stepAnnotationNames`): the controller's
   * cache keeps no other annotation.
   */
  readonly progress: string | StepAnnotations;
  /** Admission (preconditions only). Default: admitted. */
  readonly admit?: (task: Task, context: Context) => Effect.Effect<PhaseOutcome, never, R>;
  /** After the undos (or for a task that did not fail). Default: nothing more to clean up. */
  readonly cleanup?: (task: Task, context: Context) => Effect.Effect<PhaseOutcome, never, R>;
  /** The description of the completed phase (default `All <N> steps completed`). */
  readonly completed?: string;
  /** Default poll interval of waits (5 s). */
  readonly pollMs?: number;
  /** The error code of a missed deadline (default ERR_STEP_DEADLINE_EXCEEDED). */
  readonly deadlineCode?: string;
  /**
   * Which end states Cleanup undoes (default `["Failed"]`). Adding `InProgress` undoes a task deleted
   * while it ran too; a step call still in flight then may finish after its undo (the lifecycle does
   * not wait for it), so its undo must not mind running first.
   */
  readonly undoWhen?: ReadonlyArray<TaskState>;
}

/** The annotations a steps handler with `progress` writes, for `cachedMetadata.annotations`. */
export const stepAnnotationNames = (progress: string | StepAnnotations): ReadonlyArray<string> => {
  const keys = typeof progress === "string" ? stepAnnotations(progress) : progress;
  return [keys.lastCompletedStep, keys.waitStart, keys.lastUndoneStep, keys.taskUid];
};

const defaultPollMs = 5000;

const withLabel = (label: string, stop: StepStop): StepStop => ({
  ...stop,
  description: `${label}: ${stop.description}`,
});

/**
 * The handler. `kind` tells it the task's identity and state (Cleanup undoes only a Failed task).
 * Step names must be unique: a duplicate is a programming error, thrown here.
 */
export const stepsHandler = <Task, R = never, Context extends HandlerContext = HandlerContext>(
  kind: TaskKind<Task>,
  options: StepsHandlerOptions<Task, R, Context>,
): TaskHandler<Task, R, Context> => {
  const { steps } = options;
  const names = steps.map((step) => step.name);
  const duplicate = names.find((name, index) => names.indexOf(name) !== index);
  if (duplicate !== undefined) throw new Error(`stepsHandler: step name "${duplicate}" is used twice`);
  if (steps.length === 0) throw new Error("stepsHandler: no steps");
  const keys = typeof options.progress === "string" ? stepAnnotations(options.progress) : options.progress;
  const count = steps.length;
  const label = (index: number) => `Step ${index + 1}/${count} ${names[index]}`;
  /**
   * The progress as the task holds it now: read with an empty patch of its own annotations (the task
   * a call gets comes from the controller's cache, which may not show the last write yet), so a step
   * recorded a moment ago is never taken for undone. Fails like a progress write when it cannot read.
   */
  const read = (ownTask: OwnTask, task: Task, doing: string) =>
    Effect.promise(() =>
      ownTask.annotate({}).then(
        (annotations) => {
          const { metadata } = kind.facts(task);
          return { uid: metadata.uid, read: readProgress(annotations, keys, names, metadata.uid) };
        },
        (error: unknown) =>
          retry(`${doing}: reading progress failed`, {
            error: {
              code: StepErrorCodes.progressWrite,
              message: `reading progress from the task failed (${doing})`,
              cause: error instanceof Error ? error.message : String(error),
            },
          }),
      ),
    );

  const record = (ownTask: OwnTask, uid: string, progress: StepProgress, doing: string) =>
    Effect.promise(() =>
      ownTask.annotate(progressAnnotations(progress, keys, names, uid)).then(
        () => undefined,
        (error: unknown) =>
          retry(`${doing}: recording progress failed`, {
            error: {
              code: StepErrorCodes.progressWrite,
              message: `recording progress on the task failed (${doing})`,
              cause: error instanceof Error ? error.message : String(error),
            },
          }),
      ),
    );

  const unsupported = failed("Steps cannot record progress", {
    code: StepErrorCodes.unsupported,
    message: "this handler context cannot annotate its task (context.ownTask is missing)",
  });
  const unknownProgress = (problem: string) =>
    failed("Step progress on the task is not readable", {
      code: StepErrorCodes.progressUnknown,
      message: problem,
    });

  const execute = (task: Task, context: Context): Effect.Effect<PhaseOutcome, never, R> =>
    Effect.gen(function* () {
      const { ownTask } = context;
      if (ownTask === undefined) return unsupported;
      const current = yield* read(ownTask, task, "Steps");
      if ("kind" in current) return current;
      const { uid, read: progressRead } = current;
      if (!progressRead.ok) return unknownProgress(progressRead.problem);
      const progress = progressRead.progress;
      const index = progress.lastCompleted + 1;
      const now = () => context.clock?.() ?? Date.now();
      if (index >= count) {
        return completed(options.completed ?? `All ${count} steps completed`);
      }
      const step = steps[index] as TaskStep<Task, R, Context>;
      const here = label(index);
      let waitStart = progress.waitStart;
      if (waitStart === undefined) {
        if (step.run !== undefined) {
          const stop = yield* step.run(task, context);
          if (stop !== undefined && stop.kind !== "completed") return withLabel(here, stop);
        }
        if (step.until !== undefined) {
          waitStart = now();
          const failure = yield* record(
            ownTask,
            uid,
            { lastCompleted: progress.lastCompleted, waitStart },
            here,
          );
          if (failure !== undefined) return failure;
        }
      }
      if (step.until !== undefined && waitStart !== undefined) {
        const answer = yield* step.until.check(task, context);
        if (answer !== true) {
          if (answer !== false) return withLabel(here, answer);
          const deadline =
            typeof step.until.deadlineMs === "function"
              ? step.until.deadlineMs(task, context)
              : step.until.deadlineMs;
          const waited = now() - waitStart;
          if (deadline !== undefined && waited >= deadline) {
            context.events.record(
              "Warning",
              "StepDeadlineExceeded",
              `${here} did not finish within ${seconds(deadline)}`,
            );
            return failed(`${here}: did not finish within ${seconds(deadline)}`, {
              code: options.deadlineCode ?? StepErrorCodes.deadlineExceeded,
              message: `step ${index + 1}/${count} ${step.name} did not finish within ${seconds(deadline)}`,
              cause: `${step.until.waiting ?? "waiting"} for ${seconds(waited)}`,
            });
          }
          const poll = step.until.pollMs ?? options.pollMs ?? defaultPollMs;
          return retry(`${here}: ${step.until.waiting ?? "waiting"}`, {
            afterMs: deadline === undefined ? poll : Math.max(1, Math.min(poll, deadline - waited)),
          });
        }
      }
      const failure = yield* record(ownTask, uid, { lastCompleted: index }, here);
      if (failure !== undefined) return failure;
      context.events.record("Normal", "StepCompleted", `${here} completed`);
      if (index + 1 < count) return retry(`${here}: ${step.done ?? "done"}`, { afterMs: 0 });
      return completed(options.completed ?? `All ${count} steps completed`);
    });

  const cleanup = (task: Task, context: Context): Effect.Effect<PhaseOutcome, never, R> =>
    Effect.gen(function* () {
      const finish = () =>
        options.cleanup === undefined ? Effect.succeed(undefined) : options.cleanup(task, context);
      const state = kind.facts(task).status.state;
      if (state === undefined || !(options.undoWhen ?? ["Failed"]).includes(state)) {
        return (yield* finish()) ?? completed("Nothing to undo");
      }
      const { ownTask } = context;
      if (ownTask === undefined) return unsupported;
      const current = yield* read(ownTask, task, "Undo");
      if ("kind" in current) return current;
      const { uid, read: progressRead } = current;
      if (!progressRead.ok) return unknownProgress(progressRead.problem);
      const progress = progressRead.progress;
      // Every step whose run finished: the completed ones, and the one whose wait began.
      const ran = progress.waitStart === undefined ? progress.lastCompleted : progress.lastCompleted + 1;
      let undone = 0;
      for (let index = (progress.lastUndone ?? ran + 1) - 1; index >= 0; index--) {
        const step = steps[index] as TaskStep<Task, R, Context>;
        if (step.undo === undefined) continue;
        const here = `Undo of step ${index + 1}/${count} ${step.name}`;
        const stop = yield* step.undo(task, context);
        if (stop !== undefined && stop.kind !== "completed") return withLabel(here, stop);
        const failure = yield* record(ownTask, uid, { ...progress, lastUndone: index }, here);
        if (failure !== undefined) return failure;
        context.events.record("Normal", "StepUndone", `${here} finished`);
        undone += 1;
      }
      return (yield* finish()) ?? completed(undone === 0 ? "Nothing to undo" : `Undid ${undone} steps`);
    });

  return {
    admit: options.admit ?? (() => Effect.succeed(completed("Admitted"))),
    execute,
    cleanup,
  };
};

const seconds = (ms: number): string => `${Math.round(ms / 1000)}s`;
