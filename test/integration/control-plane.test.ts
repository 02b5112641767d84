// The local control plane (real etcd + kube-apiserver) with etcd-druid's CRDs: defaults, CEL/OpenAPI
// validation, the /status subresource, kubeconfig file, and RBAC for a ServiceAccount token.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  ApiException,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { createTestNamespace, druidCrds, repoRoot, useControlPlane } from "../support/cluster.ts";

const cluster = useControlPlane({ crds: druidCrds });

const group = "druid.gardener.cloud";
const version = "v1alpha1";
const plural = "etcdopstasks";

type Json = Record<string, unknown>;
const isJson = (value: unknown): value is Json => typeof value === "object" && value !== null;

/** Follows a property path through unknown JSON. */
function at(value: unknown, ...path: string[]): unknown {
  let current = value;
  for (const key of path) current = isJson(current) ? current[key] : undefined;
  return current;
}

function exampleTask(): Json {
  const doc: unknown = parse(
    readFileSync(join(repoRoot, "examples", "tasks", "on-demand-snapshot.yaml"), "utf8"),
  );
  if (!isJson(doc)) throw new Error("example is not an object");
  return doc;
}

function withName(task: Json, name: string, namespace: string): Json {
  const metadata = isJson(task.metadata) ? task.metadata : {};
  return { ...task, metadata: { ...metadata, name, namespace } };
}

async function expectApiError(promise: Promise<unknown>, code: number): Promise<string> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(ApiException);
    if (!(err instanceof ApiException)) throw err;
    expect(err.code).toBe(code);
    return typeof err.body === "string" ? err.body : JSON.stringify(err.body);
  }
  throw new Error(`expected HTTP ${code}, but the request succeeded`);
}

describe("local control plane", () => {
  it("starts within the startup budget and reports it", () => {
    const cp = cluster();
    expect(cp.server).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(cp.caPem).toContain("BEGIN CERTIFICATE");
    console.info(`control plane ready in ${cp.startupMs} ms (${cp.binaries.kubeApiserver})`);
    expect(cp.startupMs).toBeLessThan(60_000);
  });

  it("writes a kubeconfig file that client-node can use", async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(cluster().kubeconfigPath);
    const ns = await kc.makeApiClient(CoreV1Api).readNamespace({ name: "default" });
    expect(ns.metadata?.name).toBe("default");
  });

  it("creates the README's example EtcdOpsTask (examples/tasks) under etcd-druid's CRD and applies its defaults", async () => {
    const api = cluster().makeKubeConfig().makeApiClient(CustomObjectsApi);
    const task = exampleTask();
    await api.createNamespacedCustomObject({ group, version, plural, namespace: "default", body: task });
    const name = String(at(task, "metadata", "name"));
    const read: unknown = await api.getNamespacedCustomObject({
      group,
      version,
      plural,
      namespace: "default",
      name,
    });
    expect(at(read, "spec", "config", "onDemandSnapshot", "timeoutSecondsDelta")).toBe(60);
    expect(at(read, "spec", "config", "onDemandSnapshot", "timeoutSecondsFull")).toBe(900);
    expect(at(read, "spec", "config", "onDemandSnapshot", "type")).toBe("full");
    expect(at(read, "spec", "ttlSecondsAfterFinished")).toBe(3600);
    expect(at(read, "metadata", "generation")).toBe(1);
  });

  it("rejects an invalid EtcdOpsTask with HTTP 422", async () => {
    const cp = cluster();
    const api = cp.makeKubeConfig().makeApiClient(CustomObjectsApi);
    const namespace = await createTestNamespace(cp.makeKubeConfig(), "invalid");
    const task = withName(exampleTask(), "ttl-zero", namespace);
    const body = { ...task, spec: { ...(isJson(task.spec) ? task.spec : {}), ttlSecondsAfterFinished: 0 } };
    const message = await expectApiError(
      api.createNamespacedCustomObject({ group, version, plural, namespace, body }),
      422,
    );
    expect(message).toContain("ttlSecondsAfterFinished");

    // A CEL rule from the CRD: isFinal is forbidden for delta snapshots.
    const delta = {
      ...task,
      metadata: { name: "final-delta", namespace },
      spec: { etcdName: "etcd-test", config: { onDemandSnapshot: { type: "delta", isFinal: true } } },
    };
    const celMessage = await expectApiError(
      api.createNamespacedCustomObject({ group, version, plural, namespace, body: delta }),
      422,
    );
    expect(celMessage).toContain("isFinal must be false");
  });

  it("merge-patches status through the /status subresource", async () => {
    const cp = cluster();
    const api = cp.makeKubeConfig().makeApiClient(CustomObjectsApi);
    const namespace = await createTestNamespace(cp.makeKubeConfig(), "status");
    const name = "status-patch";
    await api.createNamespacedCustomObject({
      group,
      version,
      plural,
      namespace,
      body: withName(exampleTask(), name, namespace),
    });
    const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
    const patched: unknown = await api.patchNamespacedCustomObjectStatus(
      {
        group,
        version,
        plural,
        namespace,
        name,
        // spec changes through /status are ignored by the subresource.
        body: { spec: { ttlSecondsAfterFinished: 5 }, status: { state: "InProgress", startedAt: now } },
      },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
    expect(at(patched, "status", "state")).toBe("InProgress");
    expect(at(patched, "status", "startedAt")).toBe(now);
    expect(at(patched, "spec", "ttlSecondsAfterFinished")).toBe(3600);
    expect(at(patched, "metadata", "generation")).toBe(1);

    const badState = api.patchNamespacedCustomObjectStatus(
      { group, version, plural, namespace, name, body: { status: { state: "Bogus" } } },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
    expect(await expectApiError(badState, 422)).toContain("Bogus");
  });

  it("authenticates ServiceAccount tokens and enforces RBAC", async () => {
    const cp = cluster();
    const namespace = await createTestNamespace(cp.makeKubeConfig(), "rbac");
    const token = await cp.serviceAccountToken(namespace, "reader");
    const kc = cp.kubeConfigForToken(token, `system:serviceaccount:${namespace}:reader`);
    const api = kc.makeApiClient(CustomObjectsApi);
    await expectApiError(api.listNamespacedCustomObject({ group, version, plural, namespace }), 403);
  });
});
