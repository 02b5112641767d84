/**
 * The on-demand snapshot compaction handler (DEP-05): `etcdbrctl compact` in a Kubernetes Job.
 *
 * - Admit: the Etcd exists, has backup enabled and a known store provider (it need not be Ready).
 * - Execute: ensures the task's one Job and reports its state. Execute runs again and again (a poll
 *   every `pollIntervalMs` while the Job runs, and after any crash), so it first looks for the Job by
 *   its deterministic name and only creates it when there is none; a create that loses a race (409)
 *   reads the winner's. A Job left by an earlier task of the same name is deleted and replaced; a Job
 *   of that name that opstask did not make is never touched (the task fails).
 * - Cleanup: deletes the Job (background propagation: its pods go too). Idempotent: no Job, or a Job
 *   that is not this task's, is "nothing to delete".
 */
import * as Effect from "effect/Effect";
import * as Result from "effect/Result";
import type { KubeError, MemberHandler } from "../../advanced.ts";
import {
  completed,
  type PhaseOutcome,
  // The library's outcome; `retry` below is this task's step stop (./step-failure.ts).
  retry as retryOutcome,
} from "../../index.ts";
import type { OnDemandSnapshotCompactionConfig } from "../api/config/on-demand-snapshot-compaction.ts";
import type { EtcdOpsTask } from "../api/etcdopstask.ts";
import type { ObjectReader } from "../services.ts";
import { outcomeOf, type StepFailure } from "../step-failure.ts";
import { AdmissionTexts, compactionTarget } from "./admission.ts";
import { type CompactionImagePolicy, compactionImage, DefaultCompactionImagePolicy } from "./image-policy.ts";
import { compactionJob, compactionJobName, isCompactionJobFor, isJobOf } from "./job-spec.ts";
import { JobTexts, jobOutcome } from "./job-status.ts";
import { type JobInfo, Jobs } from "./jobs.ts";
import { ErrorCodes, failed, retry } from "./step-failure.ts";
import { storePodParts } from "./store.ts";

export const DefaultPollIntervalMs = 5_000;

export const CleanupTexts = {
  deleted: (name: string) => `Cleanup completed: job ${name} deleted`,
  nothingToDelete: (name: string) => `Cleanup completed: job ${name} not found, nothing to delete`,
  notOurs: (name: string) =>
    `Cleanup completed: job ${name} was not created for this task, nothing to delete`,
} as const;

export interface OnDemandSnapshotCompactionHandlerOptions {
  /** The image when the task names none (`config.image`); default `DefaultCompactionImage`. */
  readonly defaultImage?: string;
  /**
   * Further images a task may name in `config.image`; any other image (the default aside) Rejects
   * the task. Default: none, so a task may only name the default image.
   */
  readonly allowedImages?: ReadonlyArray<string>;
  /** How long to wait before looking at a running Job again; default 5 s. */
  readonly pollIntervalMs?: number;
}

const jobKey = (task: EtcdOpsTask, name: string): string => `${task.metadata.namespace}/${name}`;

const getJobFailure = (task: EtcdOpsTask, name: string) => (error: KubeError) =>
  retry(
    "Failed to get compaction job",
    ErrorCodes.getJob,
    `failed to get job ${jobKey(task, name)}`,
    error.message,
  );

const deleteJobFailure = (task: EtcdOpsTask, name: string) => (error: KubeError) =>
  retry(
    "Failed to delete compaction job",
    ErrorCodes.deleteJob,
    `failed to delete job ${jobKey(task, name)}`,
    error.message,
  );

/** A request the apiserver refused as invalid (4xx other than the retryable ones) fails the same way again. */
const createJobFailure = (task: EtcdOpsTask, name: string) => (error: KubeError) =>
  (error.reason === "Invalid" ? failed : retry)(
    "Failed to create compaction job",
    ErrorCodes.createJob,
    `failed to create job ${jobKey(task, name)}`,
    error.message,
  );

const foreignJob = (task: EtcdOpsTask, name: string): StepFailure =>
  failed(
    `Job ${name} exists and was not created for this task`,
    ErrorCodes.createJob,
    `failed to create job ${jobKey(task, name)}`,
    `job ${jobKey(task, name)} already exists and is not a snapshot compaction job of task ${task.metadata.name}`,
  );

/** The Job by name, or undefined when there is none. */
const findJob = (task: EtcdOpsTask, name: string): Effect.Effect<JobInfo | undefined, StepFailure, Jobs> =>
  Jobs.use((jobs) => jobs.get(task.metadata.namespace, name)).pipe(
    Effect.result,
    Effect.flatMap((found) =>
      Result.isSuccess(found)
        ? Effect.succeed(found.success)
        : found.failure.reason === "NotFound"
          ? Effect.succeed(undefined)
          : Effect.fail(getJobFailure(task, name)(found.failure)),
    ),
  );

/**
 * Deletes the Job an earlier task of the same name left (UID precondition: never a newer object).
 * Succeeds with true when the name is free to create, false when the old Job is still being deleted.
 */
const removeEarlierJob = (task: EtcdOpsTask, job: JobInfo): Effect.Effect<boolean, StepFailure, Jobs> => {
  if (!isCompactionJobFor(job, task.metadata.name)) return Effect.fail(foreignJob(task, job.name));
  if (job.deleting) return Effect.succeed(false);
  return Jobs.use((jobs) => jobs.delete(task.metadata.namespace, job.name, { uid: job.uid })).pipe(
    Effect.as(true),
    // Gone already, or replaced by another object: either way the old Job is no more.
    Effect.catchIf(
      (error: KubeError) => error.reason === "NotFound" || error.reason === "Conflict",
      () => Effect.succeed(true),
    ),
    Effect.mapError(deleteJobFailure(task, job.name)),
  );
};

/** Registered with `memberHandlers`, so each phase gets the task's `onDemandSnapshotCompaction` config. */
export type OnDemandSnapshotCompactionHandler = MemberHandler<
  EtcdOpsTask,
  OnDemandSnapshotCompactionConfig,
  ObjectReader | Jobs
>;

export const makeOnDemandSnapshotCompactionHandler = (
  options: OnDemandSnapshotCompactionHandlerOptions = {},
): OnDemandSnapshotCompactionHandler => {
  const pollIntervalMs = options.pollIntervalMs ?? DefaultPollIntervalMs;
  const images: CompactionImagePolicy = {
    defaultImage: options.defaultImage ?? DefaultCompactionImagePolicy.defaultImage,
    allowedImages: options.allowedImages ?? DefaultCompactionImagePolicy.allowedImages,
  };
  /** The task's image, checked against the controller's policy (Admit and before every create). */
  const imageOf = (config: OnDemandSnapshotCompactionConfig): Effect.Effect<string, StepFailure> =>
    Effect.fromResult(compactionImage(config.image, images));
  const waiting = (description: string): PhaseOutcome =>
    retryOutcome(description, { afterMs: pollIntervalMs });

  /** Builds and creates the Job; on a lost race (409) reports the Job that won it. */
  const createJob = (
    task: EtcdOpsTask,
    config: OnDemandSnapshotCompactionConfig,
    name: string,
  ): Effect.Effect<PhaseOutcome, StepFailure, ObjectReader | Jobs> =>
    Effect.gen(function* () {
      const image = yield* imageOf(config);
      const target = yield* compactionTarget(task);
      const store = yield* storePodParts(target.etcd, target.store, target.provider);
      const manifest = compactionJob({
        task,
        target,
        store,
        image,
        timeoutSeconds: config.timeoutSeconds,
      });
      const created = yield* Effect.result(Jobs.use((jobs) => jobs.create(manifest)));
      if (Result.isSuccess(created)) return jobOutcome(created.success, pollIntervalMs);
      if (created.failure.reason !== "Conflict") return yield* createJobFailure(task, name)(created.failure);
      const winner = yield* findJob(task, name);
      if (winner === undefined) return waiting(JobTexts.running(name)); // created and deleted meanwhile
      if (isJobOf(winner, task)) return jobOutcome(winner, pollIntervalMs);
      if (!isCompactionJobFor(winner, task.metadata.name)) return yield* foreignJob(task, name);
      return waiting(JobTexts.earlierDeleting(name));
    });

  return {
    admit: (task, { config }) =>
      imageOf(config).pipe(
        Effect.andThen(compactionTarget(task)),
        Effect.as(completed(AdmissionTexts.admitPassed)),
        Effect.catchTag("HandlerStepFailure", (failure) => Effect.succeed(outcomeOf(failure))),
        Effect.withSpan("OnDemandSnapshotCompaction.admit"),
      ),

    execute: (task, { config }) =>
      Effect.gen(function* () {
        const name = compactionJobName(task.metadata.name);
        const existing = yield* findJob(task, name);
        if (existing !== undefined) {
          if (isJobOf(existing, task)) return jobOutcome(existing, pollIntervalMs);
          const free = yield* removeEarlierJob(task, existing);
          if (!free) return waiting(JobTexts.earlierDeleting(name));
        }
        return yield* createJob(task, config, name);
      }).pipe(
        Effect.catchTag("HandlerStepFailure", (failure) => Effect.succeed(outcomeOf(failure))),
        Effect.withSpan("OnDemandSnapshotCompaction.execute"),
      ),

    cleanup: (task) =>
      Effect.gen(function* () {
        const name = compactionJobName(task.metadata.name);
        const job = yield* findJob(task, name);
        if (job === undefined) return completed(CleanupTexts.nothingToDelete(name));
        // A Job of an earlier namesake is garbage too; a Job opstask did not make is left alone.
        if (!isCompactionJobFor(job, task.metadata.name)) return completed(CleanupTexts.notOurs(name));
        const deleted = yield* Effect.result(
          Jobs.use((jobs) => jobs.delete(task.metadata.namespace, name, { uid: job.uid })),
        );
        if (Result.isSuccess(deleted)) return completed(CleanupTexts.deleted(name));
        if (deleted.failure.reason === "NotFound" || deleted.failure.reason === "Conflict") {
          return completed(CleanupTexts.nothingToDelete(name));
        }
        return yield* deleteJobFailure(task, name)(deleted.failure);
      }).pipe(
        Effect.catchTag("HandlerStepFailure", (failure) => Effect.succeed(outcomeOf(failure))),
        Effect.withSpan("OnDemandSnapshotCompaction.cleanup"),
      ),
  };
};

/** The handler with the default image and poll interval. */
export const onDemandSnapshotCompactionHandler: OnDemandSnapshotCompactionHandler =
  makeOnDemandSnapshotCompactionHandler();
