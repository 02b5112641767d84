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
});
