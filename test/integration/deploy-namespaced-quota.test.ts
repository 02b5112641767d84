/**
 * deploy-namespaced/'s ResourceQuota (task-quota.yaml) on a real kube-apiserver: one per watched
 * namespace, and it refuses the task over its count. With it, the number of tasks the controller
 * keeps is bounded per namespace, and so its memory (each task is kept at most --max-task-bytes).
 *
 * No kube-controller-manager runs here: the test plays the quota controller once, writing the quota's
 * first status (hard as in the spec, nothing used); from there the apiserver's ResourceQuota admission
 * counts every create itself, as in a cluster.
 */
import { join } from "node:path";
import {
  ApiException,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  type V1Deployment,
  type V1ResourceQuota,
} from "@kubernetes/client-node";
import { beforeAll, describe, expect, it } from "vitest";
import { readControllerOptions } from "../../src/cli/options.ts";
import { repoRoot, useControlPlane } from "../support/cluster.ts";
import { applyManifests, deployCrdFiles, theOne } from "../support/deploy-manifests.ts";
import { renderKustomization } from "../support/kustomize.ts";

const objects = renderKustomization(join(repoRoot, "deploy-namespaced"));
const cluster = useControlPlane({ crds: deployCrdFiles });
const resource = "count/etcdopstasks.druid.gardener.cloud";

const deployment = theOne<V1Deployment>(objects, "Deployment");
const watched = readControllerOptions(
  (deployment.spec?.template.spec?.containers[0]?.args ?? []).slice(1),
  {},
).namespaces;
const quotas = objects.filter((object) => object.kind === "ResourceQuota") as unknown as V1ResourceQuota[];

let admin: KubeConfig;

beforeAll(async () => {
  admin = cluster().makeKubeConfig();
  const core = admin.makeApiClient(CoreV1Api);
  for (const name of watched) await core.createNamespace({ body: { metadata: { name } } });
  await applyManifests(admin, objects);
  // The quota controller's first status: the limits of the spec, nothing used yet.
  for (const quota of quotas) {
    const namespace = quota.metadata?.namespace ?? "";
    const name = quota.metadata?.name ?? "";
    const stored = await core.readNamespacedResourceQuota({ namespace, name });
    await core.replaceNamespacedResourceQuotaStatus({
      namespace,
      name,
      body: { ...stored, status: { hard: stored.spec?.hard ?? {}, used: { [resource]: "0" } } },
    });
  }
}, 120_000);

const createTask = (namespace: string, name: string) =>
  admin.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
    group: "druid.gardener.cloud",
    version: "v1alpha1",
    plural: "etcdopstasks",
    namespace,
    body: {
      apiVersion: "druid.gardener.cloud/v1alpha1",
      kind: "EtcdOpsTask",
      metadata: { name, namespace },
      spec: { etcdName: "etcd-main", config: { onDemandSnapshot: { type: "full" } } },
    },
  });

describe("deploy-namespaced: a ResourceQuota bounds the tasks of each watched namespace", () => {
  it("has one quota of tasks per watched namespace, and no other", () => {
    expect(quotas.map((quota) => quota.metadata?.namespace).sort()).toEqual([...watched].sort());
    for (const quota of quotas) expect(Object.keys(quota.spec?.hard ?? {})).toEqual([resource]);
  });

  it("admits tasks up to the count and refuses the one over it", async () => {
    const namespace = watched[0] ?? "";
    const quota = quotas.find((q) => q.metadata?.namespace === namespace);
    const count = Number(quota?.spec?.hard?.[resource]);
    expect(count).toBeGreaterThan(0);
    for (let index = 0; index < count; index += 1) await createTask(namespace, `task-${index}`);
    const refused = await createTask(namespace, "one-too-many").then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(ApiException);
    const { code, body } = refused as ApiException<unknown>;
    expect(code).toBe(403);
    expect(String(body)).toContain(`exceeded quota: etcdopstasks, requested: ${resource}=1`);
    // Another namespace's quota is its own.
    const other = watched[1];
    if (other !== undefined) await createTask(other, "elsewhere");
  }, 120_000);
});
