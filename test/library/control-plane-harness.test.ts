/**
 * `startControlPlane` from `opstask/testing`, as an operator's test uses it: a real kube-apiserver with
 * the kind's CRD, RBAC applied from YAML, a ServiceAccount whose token RBAC checks, kubeconfigs that
 * `loadKubeClient` reads, and a stop that removes them.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadKubeClient } from "opstask";
import { type ControlPlane, startControlPlane } from "opstask/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { crd } from "../../examples/getting-started/greeting.ts";

const greetings = "/apis/getting-started.opstask.dev/v1alpha1";

describe("startControlPlane (opstask/testing)", () => {
  let plane: ControlPlane;
  beforeAll(async () => {
    plane = await startControlPlane({ crds: [crd] });
  }, 300_000);
  afterAll(() => plane?.stop());

  it("serves the CRDs it was given", async () => {
    const namespace = await plane.createNamespace("harness");
    const admin = plane.kubeClient();
    await admin.request({
      method: "POST",
      path: `${greetings}/namespaces/${namespace}/greetings`,
      body: {
        apiVersion: "getting-started.opstask.dev/v1alpha1",
        kind: "Greeting",
        metadata: { name: "hi" },
        spec: { config: { hello: { name: "Ada" } } },
      },
    });
    const { body } = await admin.request({
      method: "GET",
      path: `${greetings}/namespaces/${namespace}/greetings/hi`,
    });
    expect(body).toMatchObject({ spec: { ttlSecondsAfterFinished: 600 } });
  });

  it("gives ServiceAccount tokens that RBAC applied from YAML governs", async () => {
    const namespace = await plane.createNamespace("rbac");
    const token = await plane.serviceAccountToken(namespace, "reader");
    const list = () =>
      plane
        .kubeClient(token)
        .request({ method: "GET", path: `${greetings}/namespaces/${namespace}/greetings` })
        .then(
          () => "allowed",
          (error: { readonly statusCode?: number }) => `refused ${String(error.statusCode)}`,
        );
    expect(await list()).toBe("refused 403");
    await plane.apply(`
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: { name: greeting-reader, namespace: ${namespace} }
rules:
  - apiGroups: [getting-started.opstask.dev]
    resources: [greetings]
    verbs: [list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: { name: greeting-reader, namespace: ${namespace} }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: Role, name: greeting-reader }
subjects: [{ kind: ServiceAccount, name: reader, namespace: ${namespace} }]
`);
    expect(await list()).toBe("allowed");
    // The same identity through a kubeconfig file, as runTaskController and kubectl read it.
    const fromFile = await loadKubeClient(plane.kubeconfigFor(token, "reader"));
    const { status } = await fromFile.request({
      method: "GET",
      path: `${greetings}/namespaces/${namespace}/greetings`,
    });
    expect(status).toBe(200);
    fromFile.close();
  });

  it("refuses a CRD taskCrd could not make, naming why", async () => {
    await expect(
      plane.installCrd({ ok: false, errors: ["spec.x: a union of unrelated shapes"] }),
    ).rejects.toThrow(/taskCrd\(\.\.\.\) made no CRD:\n {2}spec\.x: a union of unrelated shapes/);
  });

  it("removes its kubeconfigs when stopped", async () => {
    const other = await startControlPlane();
    const paths = [other.kubeconfigPath, other.kubeconfigFor(other.adminToken)];
    expect(paths.filter((path) => existsSync(path))).toEqual(paths);
    await other.stop();
    expect(paths.filter((path) => existsSync(path))).toEqual([]);
  }, 120_000);
});

describe("startControlPlane without binaries", () => {
  it("says where to get them, and builds nothing when build is false", async () => {
    const empty = mkdtempSync(join(tmpdir(), "opstask-no-binaries-"));
    const saved = { assets: process.env.KUBEBUILDER_ASSETS, cache: process.env.OPSTASK_CACHE };
    process.env.KUBEBUILDER_ASSETS = empty;
    process.env.OPSTASK_CACHE = empty;
    try {
      const started = startControlPlane({ build: false });
      await expect(started).rejects.toThrow(/Set KUBEBUILDER_ASSETS to a directory holding both/);
      await expect(started).rejects.toThrow(/build them once with \S+\/scripts\/testbin \(Go >= 1\.25/);
    } finally {
      for (const [name, value] of [
        ["KUBEBUILDER_ASSETS", saved.assets],
        ["OPSTASK_CACHE", saved.cache],
      ] as const)
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
