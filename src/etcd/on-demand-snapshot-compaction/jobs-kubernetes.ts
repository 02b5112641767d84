/**
 * `Jobs` over the apiserver's `batch/v1` Jobs: one request per call, bounded by a timeout, counted with the
 * other API requests, and cancelled when the calling fiber is interrupted. Needs RBAC `batch/jobs`
 * verbs `create`, `get` and `delete` in the tasks' namespaces.
 */
import type { V1DeleteOptions, V1Job } from "@kubernetes/client-node";
import * as Duration from "effect/Duration";
import * as Effect from "effect/Effect";
import * as Layer from "effect/Layer";
import * as Predicate from "effect/Predicate";
import {
  type ApiResponse,
  apiPath,
  type KubeAccess,
  KubeError,
  kubeClientOf,
  kubeRequest,
  RequestCounter,
  type RequestSettings,
} from "../../advanced.ts";
import { JobResource, Jobs, type JobsShape, jobInfoOf } from "./jobs.ts";

export interface KubernetesJobsOptions {
  readonly kubeConfig: KubeAccess;
  /** Share the controller's request counter; default: a new one. */
  readonly counter?: RequestCounter;
  /** Bound on one request; default 30 s. */
  readonly requestTimeout?: Duration.Input;
}

/**
 * An empty name would turn a GET or DELETE into a call on the whole collection (a LIST, a
 * DELETE-collection); no Job has it, so it is NotFound without a request.
 */
const jobs = { group: "batch", version: "v1", plural: "jobs" };

/** The Job in an answer; `jobInfoOf` reads every field optionally, so any JSON object is safe to read. */
const jobOf = (verb: string, response: ApiResponse): Effect.Effect<V1Job, KubeError> =>
  Predicate.isObject(response.body)
    ? Effect.succeed(response.body as V1Job)
    : Effect.fail(
        new KubeError({
          reason: "Invalid",
          code: response.status,
          message: `${verb} Job: the server returned no object`,
        }),
      );

const named = <A>(name: string, call: () => Effect.Effect<A, KubeError>): Effect.Effect<A, KubeError> =>
  name === ""
    ? Effect.fail(new KubeError({ reason: "NotFound", code: 404, message: `${JobResource} "" not found` }))
    : call();

export const makeKubernetesJobs = (options: KubernetesJobsOptions): JobsShape => {
  const settings: RequestSettings = {
    counter: options.counter ?? new RequestCounter(),
    timeout: options.requestTimeout ?? Duration.seconds(30),
  };
  const client = kubeClientOf(options.kubeConfig);

  return Jobs.of({
    create: (job) =>
      kubeRequest(settings, "create", client, {
        method: "POST",
        path: apiPath(jobs, job.metadata?.namespace ?? ""),
        body: { apiVersion: "batch/v1", kind: "Job", ...job },
      }).pipe(
        Effect.flatMap((response) => jobOf("create", response)),
        Effect.map(jobInfoOf),
        Effect.withSpan("Jobs.create"),
      ),

    get: (namespace, name) =>
      named(name, () =>
        kubeRequest(settings, "get", client, { method: "GET", path: apiPath(jobs, namespace, name) }),
      ).pipe(
        Effect.flatMap((response) => jobOf("get", response)),
        Effect.map(jobInfoOf),
        Effect.withSpan("Jobs.get"),
      ),

    delete: (namespace, name, deleteOptions = {}) => {
      const body: V1DeleteOptions = {
        propagationPolicy: "Background",
        ...(deleteOptions.uid === undefined ? {} : { preconditions: { uid: deleteOptions.uid } }),
      };
      return named(name, () =>
        kubeRequest(settings, "delete", client, {
          method: "DELETE",
          path: apiPath(jobs, namespace, name),
          body,
        }),
      ).pipe(Effect.asVoid, Effect.withSpan("Jobs.delete"));
    },
  });
};

/** `Jobs` on the apiserver of `kubeConfig`. */
export const kubernetesJobsLayer = (options: KubernetesJobsOptions): Layer.Layer<Jobs> =>
  Layer.sync(Jobs, () => makeKubernetesJobs(options));
