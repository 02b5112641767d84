/**
 * `ObjectReader` whose Etcds come from the controller's Etcd cache (the informer it runs to wake a
 * group's tasks when their Etcd changes, src/runtime/group-objects.ts), as druid's handlers read theirs
 * from its informer. A miss — an Etcd the cache has not heard of yet, or one that does not decode —
 * is a GET, so nothing is lost: the apiserver's answer (and its error text) decides. StatefulSets and
 * Secrets are read as before.
 *
 * The cache keeps of each Etcd its metadata and what `EtcdSchema` reads of its spec and status (the
 * handlers' part; an Etcd's pod templates, resources and backup settings are most of its size), and
 * the decoded Etcd beside it, sharing those parts: a read decodes nothing.
 */
import * as Effect from "effect/Effect";
import * as Result from "effect/Result";
import type { KubeObject } from "../advanced.ts";
import { cacheObject, type GroupObjects, makeGroupObjects, type TargetAtRest } from "../advanced.ts";
import { decodeEtcd, type Etcd } from "./api/etcd.ts";
import type { ObjectReaderShape } from "./services.ts";

/** The decoded Etcd of each kept object (weak: it goes with the cache's copy). */
const decodedEtcds = new WeakMap<KubeObject, Etcd>();

/** What the Etcd cache keeps of an Etcd: its metadata and the fields handlers read. */
export const keepEtcd = (object: KubeObject): KubeObject => {
  const cached = cacheObject(object);
  const decoded = decodeEtcd(cached);
  // Undecodable: kept as it is; a read of it is a GET, whose decode error names the fields.
  if (Result.isFailure(decoded)) return cached;
  const etcd = decoded.success;
  const kept: KubeObject = {
    apiVersion: etcd.apiVersion,
    kind: etcd.kind,
    metadata: cached.metadata,
    spec: etcd.spec,
    ...(etcd.status === undefined ? {} : { status: etcd.status }),
  };
  decodedEtcds.set(kept, etcd);
  return kept;
};

/** The controller's Etcd cache, to share between `runTaskController` and `etcdHandlerLayer`. */
export const makeEtcdCache = (): GroupObjects => makeGroupObjects(keepEtcd);

/** `reader` with its Etcds read from `etcds` first (a GET through `reader` on a miss). */
export const cachedEtcdReader = (reader: ObjectReaderShape, etcds: GroupObjects): ObjectReaderShape => ({
  ...reader,
  getEtcd: (namespace, name) => {
    const etcd = cachedEtcd(etcds, namespace, name);
    return etcd === undefined ? reader.getEtcd(namespace, name) : Effect.succeed(etcd);
  },
});

/** The Etcd the cache holds, decoded; undefined when it holds none, or one that does not decode. */
export const cachedEtcd = (etcds: GroupObjects, namespace: string, name: string): Etcd | undefined => {
  const cached = etcds.get(namespace, name);
  return cached === undefined ? undefined : decodedEtcds.get(cached);
};

/**
 * Whether the cache holds the Etcd hibernated (`spec.replicas: 0`, etcd-druid's hibernation): it takes
 * no snapshots then, so `opstask_target_at_rest` says so and the snapshot-age alert leaves it out.
 */
export const etcdAtRest =
  (etcds: GroupObjects): TargetAtRest =>
  (namespace, name) =>
    cachedEtcd(etcds, namespace, name)?.spec.replicas === 0;
