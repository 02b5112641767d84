// Shared by the Kubernetes and runtime tests: EtcdOpsTask objects on the real control plane.
import { CustomObjectsApi, type KubeConfig, PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import { etcdOpsTaskKind } from "../../src/etcd/api/etcdopstask-kind.ts";
import { isKubeObject, type KubeObject } from "../../src/kube/object.ts";

export const resource = etcdOpsTaskKind.resource;
const { group, version, plural } = resource;

export const taskBody = (name: string, namespace: string, finalizers?: ReadonlyArray<string>) => ({
  apiVersion: `${group}/${version}`,
  kind: resource.kind,
  metadata: { name, namespace, ...(finalizers === undefined ? {} : { finalizers: [...finalizers] }) },
  spec: { config: { onDemandSnapshot: { type: "full" } }, etcdName: "etcd-test" },
});

const asObject = (value: unknown): KubeObject => {
  if (!isKubeObject(value)) throw new Error(`not a namespaced object: ${JSON.stringify(value)}`);
  return value;
};

/** Plain client-node calls (promises), to set up and inspect what the code under test does. */
export const tasks = (kc: KubeConfig) => {
  const api = kc.makeApiClient(CustomObjectsApi);
  const merge = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
  return {
    create: async (namespace: string, name: string, finalizers?: ReadonlyArray<string>) =>
      asObject(
        await api.createNamespacedCustomObject({
          group,
          version,
          plural,
          namespace,
          body: taskBody(name, namespace, finalizers),
        }),
      ),
    get: async (namespace: string, name: string) =>
      asObject(await api.getNamespacedCustomObject({ group, version, plural, namespace, name })),
    patch: async (namespace: string, name: string, body: object) =>
      asObject(
        await api.patchNamespacedCustomObject({ group, version, plural, namespace, name, body }, merge),
      ),
    patchStatus: async (namespace: string, name: string, status: object) =>
      asObject(
        await api.patchNamespacedCustomObjectStatus(
          { group, version, plural, namespace, name, body: { status } },
          merge,
        ),
      ),
    delete: async (namespace: string, name: string) => {
      await api.deleteNamespacedCustomObject({ group, version, plural, namespace, name });
    },
    exists: async (namespace: string, name: string) => {
      try {
        await api.getNamespacedCustomObject({ group, version, plural, namespace, name });
        return true;
      } catch {
        return false;
      }
    },
  };
};
