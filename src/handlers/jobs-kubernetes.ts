/**
 * `Jobs` over client-node's `BatchV1Api`: one request per call, bounded by a timeout, counted with the
 * other API requests, and cancelled when the calling fiber is interrupted. Needs RBAC `batch/jobs`
 * verbs `create`, `get` and `delete` in the tasks' namespaces.
 */
import { BatchV1Api, type KubeConfig, type V1DeleteOptions } from "@kubernetes/client-node";
import { Duration, Effect, Layer } from "effect";
import { kubeRequest, type RequestSettings } from "../interpreters/kubernetes/client.ts";
import { KubeError } from "../interpreters/kubernetes/errors.ts";
import { RequestCounter } from "../interpreters/kubernetes/request-metrics.ts";
import { JobResource, Jobs, type JobsShape, jobInfoOf } from "./jobs.ts";

export interface KubernetesJobsOptions {
  readonly kubeConfig: KubeConfig;
  /** Share the controller's request counter; default: a new one. */
  readonly counter?: RequestCounter;
  /** Bound on one request; default 30 s. */
  readonly requestTimeout?: Duration.Input;
}

/**
 * An empty name would turn a GET or DELETE into a call on the whole collection (a LIST, a
 * DELETE-collection); no Job has it, so it is NotFound without a request.
 */
const named = <A>(name: string, call: () => Effect.Effect<A, KubeError>): Effect.Effect<A, KubeError> =>
  name === ""
    ? Effect.fail(new KubeError({ reason: "NotFound", code: 404, message: `${JobResource} "" not found` }))
    : call();

export const makeKubernetesJobs = (options: KubernetesJobsOptions): JobsShape => {
  const settings: RequestSettings = {
    counter: options.counter ?? new RequestCounter(),
    timeout: options.requestTimeout ?? Duration.seconds(30),
  };
  const batch = options.kubeConfig.makeApiClient(BatchV1Api);

  return Jobs.of({
    create: (job) =>
      kubeRequest(settings, "create", (clientOptions) =>
        batch.createNamespacedJobWithHttpInfo(
          { namespace: job.metadata?.namespace ?? "", body: job },
          clientOptions,
        ),
      ).pipe(
        Effect.map((info) => jobInfoOf(info.data)),
        Effect.withSpan("Jobs.create"),
      ),

    get: (namespace, name) =>
      named(name, () =>
        kubeRequest(settings, "get", (clientOptions) =>
          batch.readNamespacedJobWithHttpInfo({ namespace, name }, clientOptions),
        ),
      ).pipe(
        Effect.map((info) => jobInfoOf(info.data)),
        Effect.withSpan("Jobs.get"),
      ),

    delete: (namespace, name, deleteOptions = {}) => {
      const body: V1DeleteOptions = {
        propagationPolicy: "Background",
        ...(deleteOptions.uid === undefined ? {} : { preconditions: { uid: deleteOptions.uid } }),
      };
      return named(name, () =>
        kubeRequest(settings, "delete", (clientOptions) =>
          batch.deleteNamespacedJobWithHttpInfo({ namespace, name, body }, clientOptions),
        ),
      ).pipe(Effect.asVoid, Effect.withSpan("Jobs.delete"));
    },
  });
};

/** `Jobs` on the apiserver of `kubeConfig`. */
export const kubernetesJobsLayer = (options: KubernetesJobsOptions): Layer.Layer<Jobs> =>
  Layer.sync(Jobs, () => makeKubernetesJobs(options));
