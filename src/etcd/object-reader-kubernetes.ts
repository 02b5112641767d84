/**
 * `ObjectReader` over the apiserver: direct GETs (no informer cache), each bounded by a timeout, counted
 * with the other API requests, and cancelled when the calling fiber is interrupted.
 */
import * as Duration from "effect/Duration";
import * as Effect from "effect/Effect";
import * as Layer from "effect/Layer";
import * as Result from "effect/Result";
import type { KubeError } from "../advanced.ts";
import {
  apiPath,
  capText,
  isDns1123Label,
  type KubeAccess,
  kubeClientOf,
  kubeRequest,
  LabelRule,
  MaxEchoLength,
  RequestCounter,
  type RequestSettings,
  subdomainProblem,
} from "../advanced.ts";
import { decodeEtcd, EtcdApiVersion } from "./api/etcd.ts";
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
  readonly kubeConfig: KubeAccess;
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
 * (what druid's cached client answers, docs/contract.md §8). A name or namespace that is no valid object
 * name would be read as another path (`e005/status` is e005's status subresource): no object has it
 * either, so it is NotFound without a request, saying why.
 */
const named = <A>(
  resource: Resource,
  namespace: string,
  name: string,
  read: () => Effect.Effect<A, ReadError>,
): Effect.Effect<A, ReadError> => {
  const problem =
    name === ""
      ? notFoundMessage(resource, name)
      : !isDns1123Label(namespace)
        ? `${resource} in namespace ${JSON.stringify(capText(namespace, MaxEchoLength))}: the namespace is not a valid name: expected ${LabelRule}`
        : subdomainProblem(name) === undefined
          ? undefined
          : `${resource} ${subdomainProblem(name)}`;
  return problem === undefined
    ? read()
    : Effect.fail(
        new ReadError({
          reason: "NotFound",
          resource,
          namespace: capText(namespace, MaxEchoLength),
          name: capText(name, MaxEchoLength),
          message: problem,
        }),
      );
};

export const makeKubernetesObjectReader = (options: KubernetesObjectReaderOptions): ObjectReaderShape => {
  const settings: RequestSettings = {
    counter: options.counter ?? new RequestCounter(),
    timeout: options.requestTimeout ?? Duration.seconds(30),
  };
  const client = kubeClientOf(options.kubeConfig);
  const get = (resource: Parameters<typeof apiPath>[0], namespace: string, name: string) =>
    kubeRequest(settings, "get", client, { method: "GET", path: apiPath(resource, namespace, name) });
  const etcds = { group: etcdGroup, version: etcdVersion, plural: "etcds" };
  const statefulSets = { group: "apps", version: "v1", plural: "statefulsets" };
  const secrets = { group: "", version: "v1", plural: "secrets" };

  return ObjectReader.of({
    getEtcd: (namespace, name) =>
      named(Resources.etcd, namespace, name, () =>
        get(etcds, namespace, name).pipe(
          Effect.mapError(readError(Resources.etcd, namespace, name)),
          Effect.flatMap((response) => decoded(Resources.etcd, namespace, name, decodeEtcd(response.body))),
          Effect.withSpan("ObjectReader.getEtcd"),
        ),
      ),

    getStatefulSet: (namespace, name) =>
      named(Resources.statefulSet, namespace, name, () =>
        get(statefulSets, namespace, name).pipe(
          Effect.mapError(readError(Resources.statefulSet, namespace, name)),
          Effect.flatMap((response) =>
            decoded(Resources.statefulSet, namespace, name, decodeStatefulSet(response.body)),
          ),
          Effect.withSpan("ObjectReader.getStatefulSet"),
        ),
      ),

    getSecret: (namespace, name) =>
      named(Resources.secret, namespace, name, () =>
        get(secrets, namespace, name).pipe(
          Effect.mapError(readError(Resources.secret, namespace, name)),
          Effect.flatMap((response) =>
            decoded(Resources.secret, namespace, name, decodeSecret(response.body)),
          ),
          Effect.withSpan("ObjectReader.getSecret"),
        ),
      ),
  });
};

/** `ObjectReader` reading through the apiserver of `kubeConfig`. */
export const kubernetesObjectReaderLayer = (
  options: KubernetesObjectReaderOptions,
): Layer.Layer<ObjectReader> => Layer.sync(ObjectReader, () => makeKubernetesObjectReader(options));
