/**
 * `ObjectReader` over client-node: direct GETs (no informer cache), each bounded by a timeout, counted
 * with the other API requests, and cancelled when the calling fiber is interrupted.
 */
import { AppsV1Api, CoreV1Api, CustomObjectsApi, type KubeConfig } from "@kubernetes/client-node";
import { Duration, Effect, Layer, Result } from "effect";
import { decodeEtcd, EtcdApiVersion } from "../api/etcd.ts";
import { kubeRequest, type RequestSettings } from "../interpreters/kubernetes/client.ts";
import type { KubeError } from "../interpreters/kubernetes/errors.ts";
import { RequestCounter } from "../interpreters/kubernetes/request-metrics.ts";
import { decodeSecret, decodeStatefulSet } from "./objects.ts";
import {
  notFoundMessage,
  ObjectReader,
  type ObjectReaderShape,
  ReadError,
  type Resource,
  Resources,
} from "./services.ts";

export interface KubernetesObjectReaderOptions {
  readonly kubeConfig: KubeConfig;
  /** Share the controller's request counter; default: a new one. */
  readonly counter?: RequestCounter;
  /** Bound on one GET; default 30 s. */
  readonly requestTimeout?: Duration.Input;
}

const [etcdGroup = "druid.gardener.cloud", etcdVersion = "v1alpha1"] = EtcdApiVersion.split("/");

const readError = (resource: Resource, namespace: string, name: string) => (error: KubeError) =>
  new ReadError({
    reason: error.reason === "NotFound" ? "NotFound" : "Failed",
    resource,
    namespace,
    name,
    message: error.message,
  });

/** A decoded object, or a `Failed` read whose message lists what did not decode. */
const decoded = <A>(
  resource: Resource,
  namespace: string,
  name: string,
  result: Result.Result<A, { readonly message: string }>,
): Effect.Effect<A, ReadError> =>
  Result.isSuccess(result)
    ? Effect.succeed(result.success)
    : Effect.fail(
        new ReadError({ reason: "Failed", resource, namespace, name, message: result.failure.message }),
      );

/**
 * An empty name would turn the GET into a LIST of the collection; no object has it, so it is NotFound
 * (what druid's cached client answers, contract §1.9).
 */
const named = <A>(
  resource: Resource,
  namespace: string,
  name: string,
  read: () => Effect.Effect<A, ReadError>,
): Effect.Effect<A, ReadError> =>
  name === ""
    ? Effect.fail(
        new ReadError({
          reason: "NotFound",
          resource,
          namespace,
          name,
          message: notFoundMessage(resource, name),
        }),
      )
    : read();

export const makeKubernetesObjectReader = (options: KubernetesObjectReaderOptions): ObjectReaderShape => {
  const settings: RequestSettings = {
    counter: options.counter ?? new RequestCounter(),
    timeout: options.requestTimeout ?? Duration.seconds(30),
  };
  const custom = options.kubeConfig.makeApiClient(CustomObjectsApi);
  const apps = options.kubeConfig.makeApiClient(AppsV1Api);
  const core = options.kubeConfig.makeApiClient(CoreV1Api);

  return ObjectReader.of({
    getEtcd: (namespace, name) =>
      named(Resources.etcd, namespace, name, () =>
        kubeRequest(settings, "get", (clientOptions) =>
          custom.getNamespacedCustomObjectWithHttpInfo(
            { group: etcdGroup, version: etcdVersion, plural: "etcds", namespace, name },
            clientOptions,
          ),
        ).pipe(
          Effect.mapError(readError(Resources.etcd, namespace, name)),
          Effect.flatMap((info) => decoded(Resources.etcd, namespace, name, decodeEtcd(info.data))),
          Effect.withSpan("ObjectReader.getEtcd"),
        ),
      ),

    getStatefulSet: (namespace, name) =>
      named(Resources.statefulSet, namespace, name, () =>
        kubeRequest(settings, "get", (clientOptions) =>
          apps.readNamespacedStatefulSetWithHttpInfo({ namespace, name }, clientOptions),
        ).pipe(
          Effect.mapError(readError(Resources.statefulSet, namespace, name)),
          Effect.flatMap((info) =>
            decoded(Resources.statefulSet, namespace, name, decodeStatefulSet(info.data)),
          ),
          Effect.withSpan("ObjectReader.getStatefulSet"),
        ),
      ),

    getSecret: (namespace, name) =>
      named(Resources.secret, namespace, name, () =>
        kubeRequest(settings, "get", (clientOptions) =>
          core.readNamespacedSecretWithHttpInfo({ namespace, name }, clientOptions),
        ).pipe(
          Effect.mapError(readError(Resources.secret, namespace, name)),
          Effect.flatMap((info) => decoded(Resources.secret, namespace, name, decodeSecret(info.data))),
          Effect.withSpan("ObjectReader.getSecret"),
        ),
      ),
  });
};

/** `ObjectReader` reading through the apiserver of `kubeConfig`. */
export const kubernetesObjectReaderLayer = (
  options: KubernetesObjectReaderOptions,
): Layer.Layer<ObjectReader> => Layer.sync(ObjectReader, () => makeKubernetesObjectReader(options));
