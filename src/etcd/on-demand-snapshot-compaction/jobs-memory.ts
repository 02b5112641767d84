/**
 * `Jobs` over Jobs held in memory, for unit tests and the simulated controller. It behaves like the
 * apiserver where handlers can tell: a taken name is a 409 AlreadyExists, a missing Job a 404 with the
 * apiserver's text, a UID precondition that does not hold a 409, and a Job with finalizers is only
 * marked for deletion. No Job ever runs: tests set `status` themselves. Failures can be injected per
 * operation.
 */
import type { V1Job, V1JobStatus } from "@kubernetes/client-node";
import * as Effect from "effect/Effect";
import * as Layer from "effect/Layer";
import { KubeError } from "../../advanced.ts";
import { type JobInfo, JobResource, Jobs, type JobsShape, jobInfoOf } from "./jobs.ts";

export type JobOperation = "create" | "get" | "delete";

export interface JobCall {
  readonly operation: JobOperation;
  readonly namespace: string;
  readonly name: string;
  /** The UID precondition of a delete. */
  readonly uid?: string;
}

const keyOf = (namespace: string, name: string): string => `${namespace}/${name}`;

const notFound = (name: string): KubeError =>
  new KubeError({ reason: "NotFound", code: 404, message: `${JobResource} "${name}" not found` });

/** The Jobs a memory `Jobs` serves; inspect and change them between (or during) handler calls. */
export class MemoryJobs {
  readonly #jobs = new Map<string, V1Job>();
  readonly #failures = new Map<JobOperation, KubeError>();
  readonly #calls: JobCall[] = [];
  #nextUid = 1;

  /**
   * Stores a Job as the apiserver would hold it: a UID and creation time are assigned when missing,
   * `status` is kept as given. Replaces a Job of the same name.
   */
  put(job: V1Job): JobInfo {
    const namespace = job.metadata?.namespace ?? "";
    const name = job.metadata?.name ?? "";
    const stored: V1Job = structuredClone(job);
    stored.metadata = {
      ...stored.metadata,
      namespace,
      name,
      uid: stored.metadata?.uid ?? `job-uid-${this.#nextUid++}`,
      creationTimestamp: stored.metadata?.creationTimestamp ?? new Date(),
    };
    this.#jobs.set(keyOf(namespace, name), stored);
    return jobInfoOf(stored);
  }

  /** The stored Job (a copy), or undefined. */
  job(namespace: string, name: string): V1Job | undefined {
    const job = this.#jobs.get(keyOf(namespace, name));
    return job === undefined ? undefined : structuredClone(job);
  }

  /** Every stored Job (copies), in insertion order. */
  all(): ReadonlyArray<V1Job> {
    return [...this.#jobs.values()].map((job) => structuredClone(job));
  }

  /** Replaces the Job's `status` (what the Job controller would write). */
  setStatus(namespace: string, name: string, status: V1JobStatus): void {
    const job = this.#jobs.get(keyOf(namespace, name));
    if (job === undefined) throw new Error(`no job ${keyOf(namespace, name)}`);
    job.status = structuredClone(status);
  }

  /** Drops the Job's finalizers; a Job marked for deletion is then gone. */
  removeFinalizers(namespace: string, name: string): void {
    const key = keyOf(namespace, name);
    const job = this.#jobs.get(key);
    if (job?.metadata === undefined) return;
    job.metadata.finalizers = [];
    if (job.metadata.deletionTimestamp !== undefined) this.#jobs.delete(key);
  }

  /** Every call of `operation` fails with `error` until `heal` is called. */
  fail(operation: JobOperation, error: KubeError): void {
    this.#failures.set(operation, error);
  }

  heal(operation: JobOperation): void {
    this.#failures.delete(operation);
  }

  /** Every call so far, in order (failed ones included). */
  get calls(): ReadonlyArray<JobCall> {
    return this.#calls;
  }

  #record(call: JobCall): KubeError | undefined {
    this.#calls.push(call);
    return this.#failures.get(call.operation);
  }

  create(manifest: V1Job): Effect.Effect<JobInfo, KubeError> {
    return Effect.suspend(() => {
      const namespace = manifest.metadata?.namespace ?? "";
      const name = manifest.metadata?.name ?? "";
      const failure = this.#record({ operation: "create", namespace, name });
      if (failure !== undefined) return Effect.fail(failure);
      if (this.#jobs.has(keyOf(namespace, name))) {
        return Effect.fail(
          new KubeError({
            reason: "Conflict",
            code: 409,
            message: `${JobResource} "${name}" already exists`,
          }),
        );
      }
      // The server assigns the UID and starts without a status, whatever the request said.
      const { status: _status, ...spec } = manifest;
      const { uid: _uid, ...metadata } = spec.metadata ?? {};
      return Effect.succeed(this.put({ ...spec, metadata }));
    });
  }

  get(namespace: string, name: string): Effect.Effect<JobInfo, KubeError> {
    return Effect.suspend(() => {
      const failure = this.#record({ operation: "get", namespace, name });
      if (failure !== undefined) return Effect.fail(failure);
      const job = this.#jobs.get(keyOf(namespace, name));
      return job === undefined ? Effect.fail(notFound(name)) : Effect.succeed(jobInfoOf(job));
    });
  }

  delete(namespace: string, name: string, uid: string | undefined): Effect.Effect<void, KubeError> {
    return Effect.suspend(() => {
      const failure = this.#record({
        operation: "delete",
        namespace,
        name,
        ...(uid === undefined ? {} : { uid }),
      });
      if (failure !== undefined) return Effect.fail(failure);
      const key = keyOf(namespace, name);
      const job = this.#jobs.get(key);
      if (job?.metadata === undefined) return Effect.fail(notFound(name));
      if (uid !== undefined && job.metadata.uid !== uid) {
        return Effect.fail(
          new KubeError({
            reason: "Conflict",
            code: 409,
            message:
              `Operation cannot be fulfilled on ${JobResource} "${name}": Precondition failed: ` +
              `UID in precondition: ${uid}, UID in object meta: ${job.metadata.uid ?? ""}`,
          }),
        );
      }
      if ((job.metadata.finalizers ?? []).length > 0) {
        job.metadata.deletionTimestamp ??= new Date();
      } else {
        this.#jobs.delete(key);
      }
      return Effect.void;
    });
  }
}

export const makeMemoryJobs = (jobs: MemoryJobs): JobsShape =>
  Jobs.of({
    create: (manifest) => jobs.create(manifest),
    get: (namespace, name) => jobs.get(namespace, name),
    delete: (namespace, name, options = {}) => jobs.delete(namespace, name, options.uid),
  });

/** `Jobs` serving `jobs`. */
export const memoryJobsLayer = (jobs: MemoryJobs): Layer.Layer<Jobs> =>
  Layer.succeed(Jobs, makeMemoryJobs(jobs));
