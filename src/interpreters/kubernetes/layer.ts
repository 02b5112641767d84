/**
 * The Kubernetes side of the interpreter as one Layer: `TaskWriter`, `EventRecorder` and the request
 * counter they share (`KubeRequests`, to be exported as Prometheus metrics), built from a KubeClient
 * or a client-node KubeConfig.
 */
import * as Context from "effect/Context";
import type * as Duration from "effect/Duration";
import * as Layer from "effect/Layer";
import type { KubeAccess } from "../../kube/kube-client-node.ts";
import { RequestCounter } from "../../kube/request-metrics.ts";
import type { ResourceRef } from "../../reconcile/task-kind.ts";
import { EventRecorder, makeEventRecorder } from "./event-recorder.ts";
import { makeTaskWriter, type RetryPolicy, TaskWriter } from "./task-writer.ts";

/** API requests by verb and code, counted at the client (retries included). */
export class KubeRequests extends Context.Service<KubeRequests, RequestCounter>()(
  "opstask/kubernetes/KubeRequests",
) {}

export interface KubernetesLayerOptions {
  /** opstask's lean `KubeClient` (`loadKubeClient`) or a client-node `KubeConfig`. */
  readonly kubeConfig: KubeAccess;
  readonly resource: ResourceRef;
  /** Share a counter with other clients (e.g. the informer); default: a new one. */
  readonly counter?: RequestCounter;
  /** Retries of the writer and of the event recorder (each has its own default). */
  readonly retry?: RetryPolicy;
  readonly requestTimeout?: Duration.Input;
  /** The writer's threshold for a WARN about an unanswered write (default 5 s). */
  readonly slowWriteAfter?: Duration.Input;
  readonly reportingController?: string;
  readonly reportingInstance?: string;
}

export const kubernetesLayer = (
  options: KubernetesLayerOptions,
): Layer.Layer<TaskWriter | EventRecorder | KubeRequests> => {
  const counter = options.counter ?? new RequestCounter();
  const common = {
    kubeConfig: options.kubeConfig,
    resource: options.resource,
    counter,
    ...(options.requestTimeout === undefined ? {} : { requestTimeout: options.requestTimeout }),
    ...(options.retry === undefined ? {} : { retry: options.retry }),
  };
  return Layer.mergeAll(
    Layer.succeed(KubeRequests, counter),
    Layer.sync(TaskWriter, () =>
      makeTaskWriter({
        ...common,
        ...(options.slowWriteAfter === undefined ? {} : { slowWriteAfter: options.slowWriteAfter }),
      }),
    ),
    Layer.sync(EventRecorder, () =>
      makeEventRecorder({
        ...common,
        ...(options.reportingController === undefined
          ? {}
          : { reportingController: options.reportingController }),
        ...(options.reportingInstance === undefined ? {} : { reportingInstance: options.reportingInstance }),
      }),
    ),
  );
};
