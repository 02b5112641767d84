import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { cacheObject } from "../../src/runtime/cache-object.ts";

const task = () => ({
  apiVersion: "druid.gardener.cloud/v1alpha1",
  kind: "EtcdOpsTask",
  metadata: {
    name: "snap",
    namespace: "shoot",
    uid: "u-1",
    resourceVersion: "42",
    finalizers: ["druid.gardener.cloud/etcd-ops-task"],
    annotations: {
      "kubectl.kubernetes.io/last-applied-configuration": '{"apiVersion":"druid.gardener.cloud/v1alpha1"}',
      "opstask.gardener.cloud/machine-version": "1",
    },
    managedFields: [{ manager: "kubectl", operation: "Update" }],
  },
  spec: { etcdName: "etcd-main", config: { onDemandSnapshot: { type: "full" } } },
  status: { state: "Succeeded", lastErrors: [{ code: "ERR_X", description: "d" }], nothing: null, count: 3 },
});

describe("cacheObject", () => {
  it("drops managedFields and kubectl's last-applied copy, keeps everything else, changes nothing in place", () => {
    const input = task();
    const before = structuredClone(input);
    const cached = cacheObject(input);
    expect(input).toEqual(before);
    const { managedFields: _m, annotations: _a, ...metadata } = before.metadata;
    expect(cached).toEqual({
      ...before,
      metadata: { ...metadata, annotations: { "opstask.gardener.cloud/machine-version": "1" } },
    });
  });

  it("keeps a managedFields-like field outside metadata", () => {
    const input = { ...task(), spec: { managedFields: ["mine"] } };
    expect(cacheObject(input).spec).toEqual({ managedFields: ["mine"] });
  });

  it("shares small objects made of values seen before, frozen, and keeps unique ones out", () => {
    const named = (name: string, etcdName: string) => {
      const base = task();
      return { ...base, metadata: { ...base.metadata, name, uid: name }, spec: { ...base.spec, etcdName } };
    };
    const [first, second, third] = ["a", "b", "c"].map((name) => cacheObject(named(name, `etcd-${name}`)));
    const config = (object: typeof first): unknown =>
      Reflect.get(Reflect.get(object ?? {}, "spec"), "config");
    // The first copy met "full" for the first time; the second entered the table; the third finds it.
    expect(config(third)).toBe(config(second));
    expect(Object.isFrozen(config(third))).toBe(true);
    expect(third?.metadata.finalizers).toBe(second?.metadata.finalizers);
    expect(third?.metadata.annotations).toBe(second?.metadata.annotations);
    // Each spec holds its own Etcd's name: none is shared, and the metadata never is.
    expect(third?.spec).not.toBe(second?.spec);
    expect(third?.metadata).not.toBe(second?.metadata);
    expect(Object.isFrozen(third?.spec)).toBe(false);
    expect(config(first)).toEqual(config(third));
  });

  it("gives back an equal object whatever it shared before", () => {
    // Few distinct keys and values, so objects repeat and the tables fill and are cleared.
    const { json } = fc.letrec((tie) => ({
      json: fc.oneof(
        { depthSize: "small" },
        fc.constantFrom<unknown>("x", "y", "full", 1, 0, true, null),
        fc.array(tie("json"), { maxLength: 3 }),
        fc.dictionary(fc.constantFrom("a", "b", "type"), tie("json"), { maxKeys: 3 }),
      ),
    }));
    const object = fc.record({
      metadata: fc.record({
        name: fc.constantFrom("a", "b"),
        namespace: fc.constantFrom("n", "m"),
        uid: fc.constantFrom("u-1", "u-2"),
        resourceVersion: fc.constantFrom("1", "2"),
        labels: json,
      }),
      spec: json,
      status: json,
    });
    fc.assert(
      fc.property(fc.array(object, { minLength: 1, maxLength: 40 }), (objects) => {
        for (const input of objects) {
          const before = structuredClone(input);
          const cached = cacheObject(input);
          expect(cached).not.toBe(input);
          expect(cached).toEqual(before);
        }
      }),
    );
  });
});
