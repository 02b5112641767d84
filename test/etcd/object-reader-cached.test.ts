/**
 * Etcds read from the controller's Etcd cache (src/etcd/object-reader-cached.ts): a cached Etcd is
 * answered without a read of the apiserver (here the memory reader, which records its reads), a miss
 * or an Etcd that does not decode is read through it, and the cache keeps only what handlers read.
 */
import { Effect, Exit } from "effect";
import { describe, expect, it } from "vitest";
import { cachedEtcdReader, keepEtcd, makeEtcdCache } from "../../src/etcd/object-reader-cached.ts";
import { MemoryObjects, makeMemoryObjectReader } from "../../src/etcd/object-reader-memory.ts";
import { Resources } from "../../src/etcd/services.ts";
import { isKubeObject, type KubeObject } from "../../src/kube/object.ts";
import { etcdName, etcdObject, etcdUid, namespace } from "./support/fixtures.ts";

const asObject = (value: unknown): KubeObject => {
  if (!isKubeObject(value)) throw new Error("not an object");
  return value;
};
/** An Etcd as the apiserver sends it: with the fields druid needs and handlers never read. */
const stored = (uid: string) => {
  const etcd = etcdObject({ uid }) as { metadata: Record<string, unknown>; spec: Record<string, unknown> };
  return asObject({
    ...etcd,
    metadata: { ...etcd.metadata, resourceVersion: "7", managedFields: [{ manager: "druid" }] },
    spec: {
      ...etcd.spec,
      etcd: { ...(etcd.spec.etcd as object), resources: { limits: { memory: "1Gi" } } },
      sharedConfig: { autoCompactionMode: "periodic" },
    },
  });
};

const setup = () => {
  const objects = new MemoryObjects();
  objects.put(Resources.etcd, stored("from-the-apiserver"));
  const etcds = makeEtcdCache();
  const cache = new Map<string, KubeObject>();
  etcds.attach((ns, name) => cache.get(`${ns}/${name}`));
  const reader = cachedEtcdReader(makeMemoryObjectReader(objects), etcds);
  const put = (object: KubeObject) =>
    cache.set(`${object.metadata.namespace}/${object.metadata.name}`, (etcds.keep ?? keepEtcd)(object));
  return { objects, reader, put };
};

describe("Etcds from the controller's cache", () => {
  it("answers a cached Etcd without reading the apiserver", async () => {
    const { objects, reader, put } = setup();
    put(stored(etcdUid));
    const exit = await Effect.runPromise(Effect.exit(reader.getEtcd(namespace, etcdName)));
    expect(Exit.isSuccess(exit) && exit.value.metadata.uid).toBe(etcdUid);
    expect(Exit.isSuccess(exit) && exit.value.spec.backup.store?.prefix).toBe("test-prefix");
    expect(objects.reads).toEqual([]);
  });

  it("reads through on a miss, and for a cached Etcd that does not decode", async () => {
    const { objects, reader, put } = setup();
    const missed = await Effect.runPromise(Effect.exit(reader.getEtcd(namespace, etcdName)));
    expect(Exit.isSuccess(missed) && missed.value.metadata.uid).toBe("from-the-apiserver");
    put(asObject({ ...stored(etcdUid), spec: { replicas: "three" } }));
    const undecodable = await Effect.runPromise(Effect.exit(reader.getEtcd(namespace, etcdName)));
    expect(Exit.isSuccess(undecodable) && undecodable.value.metadata.uid).toBe("from-the-apiserver");
    expect(objects.reads).toHaveLength(2);
  });

  it("keeps the metadata and what handlers read, nothing else", () => {
    const kept = keepEtcd(stored(etcdUid));
    expect(kept.metadata).not.toHaveProperty("managedFields");
    expect(kept.metadata.resourceVersion).toBe("7");
    expect(kept.spec).not.toHaveProperty("sharedConfig");
    expect(kept.spec).toMatchObject({ replicas: 1, backup: { store: { prefix: "test-prefix" } } });
    expect(JSON.stringify(kept.spec)).not.toContain("1Gi");
  });
});
