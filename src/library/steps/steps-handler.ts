/**
 * `stepsHandler`: a task handler of ordered, named steps that resumes where it stopped. Admit refuses a
 * task created carrying progress (ERR_FORGED_PROGRESS) and opens the controller's record of the task
 * (step-progress.ts says why the record, not the task, holds the progress). Each Execute call does one
 * step: read the progress from the record, run the next step, wait for its `until` within its
 * deadline, record its completion (and mirror it on the task's annotations for people) and a
 * `StepCompleted` Event, and answer `retry` with `Step n/N <name>: …`; the last step completes the
 * phase, with its own `completed`/`succeeded` answer when it gives one. A step that fails the task has
 * the finished steps undone in the same call (`StepUndone`); Cleanup undoes what is left and removes
 * the record. A step whose completion was recorded never runs again, whatever the task's annotations
 * say; one whose record was lost runs again (the step author's contract: step.ts).
 */
import * as Effect from "effect/Effect";
import type { TaskState } from "../../api/status.ts";
import type { TaskHandler } from "../../handlers/handler.ts";
import type { HandlerContext, OwnRecord } from "../../handlers/handler-context.ts";
import type { PhaseOutcome } from "../../machine/types.ts";
import type { TaskKind } from "../../reconcile/task-kind.ts";
import { completed, failed, retry } from "../outcome.ts";
import type { StepStop, TaskStep } from "./step.ts";
import { StepErrorCodes } from "./step-errors.ts";
import {
  mirrorAnnotations,
  progressAnnotationOn,
  progressFields,
  readProgress,
  recordFields,
  type StepAnnotations,
  type StepProgress,
  stepAnnotations,
} from "./step-progress.ts";

export interface StepsHandlerOptions<Task, R, Context extends HandlerContext> {
  /** The steps, in order; names unique. */
  readonly steps: ReadonlyArray<TaskStep<Task, R, Context>>;
  /**
   * The names of the progress annotations, a mirror for people (never read back): a prefix
   * (`example.dev/rollout` gives `example.dev/rollout-last-completed-step` and `-wait-start`), or the
   * names. Name them in the kind's `cachedMetadata.annotations` (`stepAnnotationNames`), so that
   * Admit sees a task created with them.
   */
  readonly progress: string | StepAnnotations;
  /** Admission (preconditions only). Default: admitted. */
  readonly admit?: (task: Task, context: Context) => Effect.Effect<PhaseOutcome, never, R>;
  /** After the undos (or for a task that did not fail). Default: nothing more to clean up. */
  readonly cleanup?: (task: Task, context: Context) => Effect.Effect<PhaseOutcome, never, R>;
  /**
   * The completed phase: a description, or what answers it (a kind's `succeeded({ description,
   * result })` puts a result in status). Used when the last step's `run` gives no `completed` answer
   * of its own, and when the controller finds every step recorded (a restart between the last step
   * and the status write). Default `All <N> steps completed`.
   */
  readonly completed?: string | ((task: Task, context: Context) => Effect.Effect<PhaseOutcome, never, R>);
  /** Default poll interval of waits (5 s). */
  readonly pollMs?: number;
  /** The error code of a missed deadline (default ERR_STEP_DEADLINE_EXCEEDED). */
  readonly deadlineCode?: string;
  /**
   * Which end states have their finished steps undone (default `["Failed"]`). A failed step undoes
   * them in its own call, Cleanup whatever is left. Adding `InProgress` undoes a task deleted while it
   * ran too; a step call still in flight then may finish after its undo (the lifecycle does not wait
   * for it), so its undo must not mind running first.
   */
  readonly undoWhen?: ReadonlyArray<TaskState>;
}

/** The progress annotations (mirror, and an earlier controller's), for `cachedMetadata.annotations`. */
export const stepAnnotationNames = (progress: string | StepAnnotations): ReadonlyArray<string> => {
  const keys = typeof progress === "string" ? stepAnnotations(progress) : progress;
  return [keys.lastCompletedStep, keys.waitStart, keys.lastUndoneStep, keys.taskUid];
};

const defaultPollMs = 5000;

const withLabel = (label: string, stop: StepStop): StepStop => ({
  ...stop,
  description: `${label}: ${stop.description}`,
});

const reasonOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

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
  const undoWhen = options.undoWhen ?? ["Failed"];
  const label = (index: number) => `Step ${index + 1}/${count} ${names[index]}`;

  const progressFailed = (doing: string, what: string, error: unknown) =>
    retry(`${doing}: ${what} failed`, {
      error: {
        code: StepErrorCodes.progressWrite,
        message: `${what} in the controller's record of the task failed (${doing})`,
        cause: reasonOf(error),
      },
    });

  /**
   * The progress as the controller's record holds it now (read fresh, never from the task). A task of
   * an earlier controller, which kept it in annotations signed with the task's UID, has it read from
   * there once and written to the record.
   */
  const read = (record: OwnRecord, task: Task, doing: string) =>
    Effect.promise(async () => {
      const { metadata } = kind.facts(task);
      try {
        let fields = await record.read();
        const earlier = metadata.annotations;
        if (fields === undefined && earlier?.[keys.taskUid] === metadata.uid) {
          const adopted = Object.fromEntries(
            (Object.keys(recordFields) as Array<keyof StepAnnotations>).flatMap((field) => {
              const value = earlier[keys[field]];
              return value === undefined ? [] : [[recordFields[field], value]];
            }),
          );
          fields = await record.write(adopted);
        }
        return { uid: metadata.uid, read: readProgress(fields, recordFields, names, metadata.uid) };
      } catch (error) {
        return progressFailed(doing, "reading progress", error);
      }
    });

  /** Records `progress` (the truth first, then its mirror on the task, best effort). */
  const record = (context: Context, store: OwnRecord, uid: string, progress: StepProgress, doing: string) =>
    Effect.promise(async () => {
      try {
        await store.write(progressFields(progress, names, uid));
      } catch (error) {
        return progressFailed(doing, "recording progress", error);
      }
      await context.ownTask?.annotate(mirrorAnnotations(progress, keys, names)).catch((error: unknown) => {
        context.log.warn("the progress annotations on the task were not updated", {
          reason: reasonOf(error),
        });
      });
      return undefined;
    });

  const unsupported = failed("Steps cannot record progress", {
    code: StepErrorCodes.unsupported,
    message:
      "the controller has no record of its own for this task: give it a namespace of its own (runTaskController's progressNamespace, or run it in a pod)",
  });
  const unknownProgress = (problem: string) =>
    failed("Step progress is not readable", {
      code: StepErrorCodes.progressUnknown,
      message: `the controller's record of the task's progress: ${problem}; delete the task and create a new one`,
    });

  const finishedOutcome = (task: Task, context: Context): Effect.Effect<PhaseOutcome, never, R> =>
    typeof options.completed === "function"
      ? options.completed(task, context)
      : Effect.succeed(completed(options.completed ?? `All ${count} steps completed`));

  /** Undoes the steps that ran, newest first, from where an earlier undo stopped; a stop ends it. */
  const undoFinished = (
    task: Task,
    context: Context,
    store: OwnRecord,
    uid: string,
    progress: StepProgress,
  ): Effect.Effect<number | StepStop | PhaseOutcome, never, R> =>
    Effect.gen(function* () {
      // Every step whose run finished: the completed ones, and the one whose wait began.
      const ran = progress.waitStart === undefined ? progress.lastCompleted : progress.lastCompleted + 1;
      let undone = 0;
      for (let index = (progress.lastUndone ?? ran + 1) - 1; index >= 0; index--) {
        const step = steps[index] as TaskStep<Task, R, Context>;
        if (step.undo === undefined) continue;
        const here = `Undo of step ${index + 1}/${count} ${step.name}`;
        const stop = yield* step.undo(task, context);
        if (stop !== undefined && stop.kind !== "completed") return withLabel(here, stop);
        const failure = yield* record(context, store, uid, { ...progress, lastUndone: index }, here);
        if (failure !== undefined) return failure;
        context.events.record("Normal", "StepUndone", `${here} finished`);
        undone += 1;
      }
      return undone;
    });

  /** A step failed the task: its finished steps are undone now (what is left of them at Cleanup). */
  const failing = (
    task: Task,
    context: Context,
    store: OwnRecord,
    uid: string,
    progress: StepProgress,
    failure: StepStop,
  ): Effect.Effect<PhaseOutcome, never, R> =>
    failure.kind !== "failed" || !undoWhen.includes("Failed")
      ? Effect.succeed(failure)
      : undoFinished(task, context, store, uid, progress).pipe(Effect.as(failure));

  const admit = (task: Task, context: Context): Effect.Effect<PhaseOutcome, never, R> =>
    Effect.gen(function* () {
      const { metadata } = kind.facts(task);
      const store = context.ownRecord;
      if (store === undefined) return unsupported;
      const existing = yield* Effect.promise(() =>
        store.read().then(
          (fields) => ({ fields }),
          (error: unknown) => progressFailed("Admit", "reading progress", error),
        ),
      );
      if (!("fields" in existing)) return existing;
      const forged = progressAnnotationOn(metadata.annotations, keys);
      if (forged !== undefined && existing.fields === undefined)
        return failed(`The task carries the progress annotation ${forged}`, {
          code: StepErrorCodes.forgedProgress,
          message: `annotation ${forged} was not written by the controller: a task's progress is the controller's own record, never an annotation; create the task without ${forged}`,
        });
      const outcome = yield* options.admit === undefined
        ? Effect.succeed(completed("Admitted"))
        : options.admit(task, context);
      if (outcome.kind !== "completed") return outcome;
      // From here on the record is what a later call reads, whatever is written on the task.
      const opened = yield* Effect.promise(() =>
        store.write({ [recordFields.taskUid]: metadata.uid }).then(
          () => undefined,
          (error: unknown) => progressFailed("Admit", "opening the record", error),
        ),
      );
      return opened ?? outcome;
    });

  const execute = (task: Task, context: Context): Effect.Effect<PhaseOutcome, never, R> =>
    Effect.gen(function* () {
      const store = context.ownRecord;
      if (store === undefined) return unsupported;
      const current = yield* read(store, task, "Steps");
      if ("kind" in current) return current;
      const { uid, read: progressRead } = current;
      if (!progressRead.ok) return unknownProgress(progressRead.problem);
      const progress = progressRead.progress;
      const index = progress.lastCompleted + 1;
      const now = () => context.clock?.() ?? Date.now();
      if (index >= count) return yield* finishedOutcome(task, context);
      const step = steps[index] as TaskStep<Task, R, Context>;
      const here = label(index);
      let waitStart = progress.waitStart;
      let answer: PhaseOutcome | undefined;
      if (waitStart === undefined) {
        if (step.run !== undefined) {
          answer = yield* step.run(task, context);
          if (answer !== undefined && answer.kind !== "completed")
            return yield* failing(task, context, store, uid, progress, withLabel(here, answer));
        }
        if (step.until !== undefined) {
          waitStart = now();
          const failure = yield* record(
            context,
            store,
            uid,
            { lastCompleted: progress.lastCompleted, waitStart },
            here,
          );
          if (failure !== undefined) return failure;
        }
      }
      if (step.until !== undefined && waitStart !== undefined) {
        const waiting = { lastCompleted: progress.lastCompleted, waitStart };
        const check = yield* step.until.check(task, context);
        if (check !== true) {
          if (check !== false)
            return yield* failing(task, context, store, uid, waiting, withLabel(here, check));
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
            return yield* failing(
              task,
              context,
              store,
              uid,
              waiting,
              failed(`${here}: did not finish within ${seconds(deadline)}`, {
                code: options.deadlineCode ?? StepErrorCodes.deadlineExceeded,
                message: `step ${index + 1}/${count} ${step.name} did not finish within ${seconds(deadline)}`,
                cause: `${step.until.waiting ?? "waiting"} for ${seconds(waited)}`,
              }),
            );
          }
          const poll = step.until.pollMs ?? options.pollMs ?? defaultPollMs;
          return retry(`${here}: ${step.until.waiting ?? "waiting"}`, {
            afterMs: deadline === undefined ? poll : Math.max(1, Math.min(poll, deadline - waited)),
          });
        }
      }
      const failure = yield* record(context, store, uid, { lastCompleted: index }, here);
      if (failure !== undefined) return failure;
      context.events.record("Normal", "StepCompleted", `${here} completed`);
      if (index + 1 < count) return retry(`${here}: ${step.done ?? "done"}`, { afterMs: 0 });
      return answer ?? (yield* finishedOutcome(task, context));
    });

  const cleanup = (task: Task, context: Context): Effect.Effect<PhaseOutcome, never, R> =>
    Effect.gen(function* () {
      const store = context.ownRecord;
      const finish = (undone: number) =>
        Effect.gen(function* () {
          const done = options.cleanup === undefined ? undefined : yield* options.cleanup(task, context);
          if (done !== undefined && done.kind !== "completed") return done;
          const removed = yield* Effect.promise(() =>
            (store?.remove() ?? Promise.resolve()).then(
              () => undefined,
              (error: unknown) => progressFailed("Cleanup", "removing the record", error),
            ),
          );
          return removed ?? done ?? completed(undone === 0 ? "Nothing to undo" : `Undid ${undone} steps`);
        });
      const state = kind.facts(task).status.state;
      if (state === undefined || !undoWhen.includes(state)) return yield* finish(0);
      if (store === undefined) return unsupported;
      const current = yield* read(store, task, "Undo");
      if ("kind" in current) return current;
      const { uid, read: progressRead } = current;
      if (!progressRead.ok) return unknownProgress(progressRead.problem);
      const undone = yield* undoFinished(task, context, store, uid, progressRead.progress);
      return typeof undone === "number" ? yield* finish(undone) : undone;
    });

  return { admit, execute, cleanup };
};

const seconds = (ms: number): string => `${Math.round(ms / 1000)}s`;
