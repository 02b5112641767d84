/**
 * deploy-namespaced/ on a real kube-apiserver (RBAC, and the compaction Job policy of deploy/ that
 * both installs carry):
 *
 * - the overlay renders as kustomize renders it, binds the task rules in each watched namespace only
 *   and starts the controller with --namespace for exactly those namespaces;
 * - the real controller command, with the overlay's Deployment arguments and authenticated as its
 *   ServiceAccount, runs a compaction task in a watched namespace to Succeeded (the test plays the Job
 *   controller: no kubelet runs), its Job admitted by the policy; a task in another namespace is left
 *   alone; the ServiceAccount cannot read Secrets (nor Etcds, nor create Jobs) in another namespace;
 * - a task author's image is Rejected by the controller before any Job exists. The policy itself,
 *   field by field, is test/integration/compaction-job-policy.test.ts's.
 */
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import {
  AuthorizationV1Api,
  BatchV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  type V1Deployment,
  type V1RoleBinding,
} from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { parseAllDocuments } from "yaml";
import { serveController } from "../../src/cli/controller-command.ts";
import { readControllerOptions } from "../../src/cli/options.ts";
import { DefaultCompactionImage } from "../../src/etcd/on-demand-snapshot-compaction/job-spec.ts";
import { repoRoot, useControlPlane } from "../support/cluster.ts";
import { applyManifests, deployCrdFiles, theOne } from "../support/deploy-manifests.ts";
import { succeededJobStatus } from "../support/job-succeeded.ts";
import { type KubeManifest, renderKustomization } from "../support/kustomize.ts";
import { refusal } from "../support/refusal.ts";

const overlayDir = join(repoRoot, "deploy-namespaced");
const objects = renderKustomization(overlayDir);
const cluster = useControlPlane({ crds: deployCrdFiles });

const deployment = theOne<V1Deployment>(objects, "Deployment");
const deploymentArgs = (deployment.spec?.template.spec?.containers[0]?.args ?? []).slice(1);
const watched = readControllerOptions(deploymentArgs, {}).namespaces;
const unwatched = "etcd-other";
const serviceAccount = "system:serviceaccount:opstask-system:opstask";
const druid = { group: "druid.gardener.cloud", version: "v1alpha1" } as const;

const canonical = (value: unknown): unknown =>
  Array.isArray(value)
    ? value.map(canonical)
    : typeof value === "object" && value !== null
      ? Object.fromEntries(
          Object.entries(value)
            .sort(([a], [b]) => a.localeCompare(b))
            .map(([key, inner]) => [key, canonical(inner)]),
        )
      : value;

const kubectl = (): string | undefined => {
  try {
    execFileSync("kubectl", ["version", "--client"], { stdio: "ignore", timeout: 10_000 });
    return "kubectl";
  } catch {
    return undefined;
  }
};

let admin: KubeConfig;
let asController: KubeConfig;
const stop = new AbortController();
let served: Promise<"stopped" | "lost" | "failed"> | undefined;
const [first = "", second = ""] = watched;

const createEtcd = (namespace: string, name: string, store: Record<string, unknown>) =>
  admin.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
    ...druid,
    plural: "etcds",
    namespace,
    body: {
      apiVersion: "druid.gardener.cloud/v1alpha1",
      kind: "Etcd",
      metadata: { name, namespace },
      spec: { replicas: 1, labels: { app: name }, etcd: {}, backup: { store } },
    },
  });

const createTask = (namespace: string, name: string, etcdName: string, config: Record<string, unknown>) =>
  admin.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
    ...druid,
    plural: "etcdopstasks",
    namespace,
    body: {
      apiVersion: "druid.gardener.cloud/v1alpha1",
      kind: "EtcdOpsTask",
      metadata: { name, namespace },
      spec: { etcdName, ttlSecondsAfterFinished: 3600, config },
    },
  });

const readTask = async (namespace: string, name: string) =>
  (await admin
    .makeApiClient(CustomObjectsApi)
    .getNamespacedCustomObject({ ...druid, plural: "etcdopstasks", namespace, name })) as {
    metadata: { finalizers?: string[] };
    status?: { state?: string; lastErrors?: Array<{ code: string; description: string }> };
  };

const readJob = (namespace: string, name: string) =>
  admin.makeApiClient(BatchV1Api).readNamespacedJob({ namespace, name });

beforeAll(async () => {
  const plane = cluster();
  admin = plane.makeKubeConfig();
  const core = admin.makeApiClient(CoreV1Api);
  for (const name of [...watched, unwatched]) await core.createNamespace({ body: { metadata: { name } } });
  await applyManifests(admin, objects);
  asController = plane.kubeConfigForToken(
    await plane.serviceAccountToken("opstask-system", "opstask", { create: false, expirationSeconds: 3600 }),
    serviceAccount,
  );
  // A cloud store and a Local one in a watched namespace; an Etcd and a Secret in another.
  await createEtcd(first, "etcd-main", {
    provider: "aws",
    prefix: "shoot--a/etcd-main",
    container: "bucket",
    secretRef: { name: "etcd-backup" },
  });
  await createEtcd(first, "etcd-local", { provider: "Local", prefix: "etcd-local", container: "bucket" });
  await core.createNamespacedSecret({
    namespace: first,
    body: { metadata: { name: "etcd-backup" }, stringData: { accessKeyID: "id", secretAccessKey: "key" } },
  });
  await createEtcd(unwatched, "etcd-main", {
    provider: "aws",
    prefix: "other",
    secretRef: { name: "theirs" },
  });
  await core.createNamespacedSecret({
    namespace: unwatched,
    body: { metadata: { name: "theirs" }, stringData: { secretAccessKey: "not yours" } },
  });
  // The RBAC authorizer reads bindings from a cache: wait until the RoleBinding is in effect.
  const controllerCore = asController.makeApiClient(CoreV1Api);
  await vi.waitFor(() => controllerCore.readNamespacedSecret({ namespace: first, name: "etcd-backup" }), {
    timeout: 10_000,
    interval: 100,
  });
  const args = [...deploymentArgs, "--metrics-address=0", "--probe-address=0", "--log-level=error"];
  served = serveController(asController, readControllerOptions(args, {}), stop.signal);
}, 120_000);

afterAll(async () => {
  stop.abort();
  await served;
}, 60_000);

describe("deploy-namespaced/", () => {
  it("renders as kustomize renders it", () => {
    const binary = kubectl();
    if (binary === undefined) {
      process.stdout.write("deploy-namespaced: kubectl not on PATH; rendering not compared with kustomize\n");
      return;
    }
    const rendered = execFileSync(binary, ["kustomize", overlayDir], { encoding: "utf8", timeout: 60_000 });
    const theirs = parseAllDocuments(rendered).map((document) => document.toJS() as KubeManifest);
    const key = (o: KubeManifest) => JSON.stringify(canonical(o));
    expect(theirs.map(key).sort()).toEqual(objects.map(key).sort());
  });

  it("binds the task rules in each watched namespace only, and starts the controller for exactly those", () => {
    expect(watched.length).toBeGreaterThanOrEqual(2);
    expect(objects.some((o) => o.kind === "ClusterRoleBinding" && o.metadata.name === "opstask")).toBe(false);
    const bindings = objects.filter((o) => o.kind === "RoleBinding" && o.metadata.name === "opstask");
    expect(bindings.map((b) => b.metadata.namespace).sort()).toEqual([...watched].sort());
    for (const binding of bindings as unknown as V1RoleBinding[]) {
      expect(binding.roleRef).toEqual({
        apiGroup: "rbac.authorization.k8s.io",
        kind: "ClusterRole",
        name: "opstask",
      });
      expect(binding.subjects).toEqual([
        { kind: "ServiceAccount", name: "opstask", namespace: "opstask-system" },
      ]);
    }
  });

  it("runs a compaction task in a watched namespace to Succeeded; its Job passes the policy", async () => {
    await createTask(first, "compact-a", "etcd-main", {
      onDemandSnapshotCompaction: { timeoutSeconds: 600 },
    });
    const job = await vi.waitFor(() => readJob(first, "compact-a-compact"), {
      timeout: 30_000,
      interval: 200,
    });
    expect(job.spec?.template.spec?.containers[0]?.image).toBe(DefaultCompactionImage);
    // The Job controller's part (none runs here): the pod succeeded.
    job.status = succeededJobStatus();
    await admin
      .makeApiClient(BatchV1Api)
      .replaceNamespacedJobStatus({ namespace: first, name: "compact-a-compact", body: job });
    await vi.waitFor(
      async () => expect((await readTask(first, "compact-a")).status?.state).toBe("Succeeded"),
      {
        timeout: 30_000,
        interval: 200,
      },
    );
    // Deleting the task cleans up its Job through the same ServiceAccount.
    await admin.makeApiClient(CustomObjectsApi).deleteNamespacedCustomObject({
      ...druid,
      plural: "etcdopstasks",
      namespace: first,
      name: "compact-a",
    });
    await vi.waitFor(
      async () => expect((await refusal(readJob(first, "compact-a-compact"))).code).toBe(404),
      { timeout: 30_000, interval: 200 },
    );
  });

  it("leaves a task in a namespace it does not watch alone", async () => {
    await createTask(unwatched, "compact-other", "etcd-main", { onDemandSnapshotCompaction: {} });
    // A task in a watched namespace created after it is handled: the controller is not just slow.
    await createTask(second, "compact-b", "etcd-missing", { onDemandSnapshotCompaction: {} });
    await vi.waitFor(
      async () => expect((await readTask(second, "compact-b")).status?.state).toBe("Rejected"),
      {
        timeout: 30_000,
        interval: 200,
      },
    );
    const other = await readTask(unwatched, "compact-other");
    expect(other.status).toBeUndefined();
    expect(other.metadata.finalizers ?? []).toEqual([]);
  });

  it("cannot read Secrets, nor Etcds, nor create Jobs in a namespace it does not watch", async () => {
    const core = asController.makeApiClient(CoreV1Api);
    expect((await core.readNamespacedSecret({ namespace: first, name: "etcd-backup" })).metadata?.name).toBe(
      "etcd-backup",
    );
    expect((await refusal(core.readNamespacedSecret({ namespace: unwatched, name: "theirs" }))).code).toBe(
      403,
    );
    expect(
      (
        await refusal(
          asController.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({
            ...druid,
            plural: "etcds",
            namespace: unwatched,
            name: "etcd-main",
          }),
        )
      ).code,
    ).toBe(403);
    const authz = asController.makeApiClient(AuthorizationV1Api);
    const allowed = async (verb: string, group: string, resource: string, namespace: string) =>
      (
        await authz.createSelfSubjectAccessReview({
          body: { spec: { resourceAttributes: { verb, group, resource, namespace } } },
        })
      ).status?.allowed === true;
    expect(await allowed("get", "", "secrets", second)).toBe(true);
    expect(await allowed("get", "", "secrets", unwatched)).toBe(false);
    expect(await allowed("get", "", "secrets", "kube-system")).toBe(false);
    expect(await allowed("create", "batch", "jobs", unwatched)).toBe(false);
    expect(await allowed("list", druid.group, "etcdopstasks", "")).toBe(false);
    expect(await allowed("list", druid.group, "etcdopstasks", first)).toBe(true);
  });

  // The controller refuses the image itself (Admit); the policy (test/integration/compaction-job-policy.test.ts)
  // is the second wall, for a controller that would not.
  it("refuses a task author's image: the task is Rejected and no Job is created", async () => {
    await createEtcd(first, "etcd-second", {
      provider: "aws",
      prefix: "second",
      secretRef: { name: "etcd-backup" },
    });
    await createTask(first, "compact-evil", "etcd-second", {
      onDemandSnapshotCompaction: { image: "attacker.example/etcdbrctl:reads-all-backups" },
    });
    const errors = await vi.waitFor(
      async () => {
        const found = (await readTask(first, "compact-evil")).status?.lastErrors ?? [];
        expect(found.length).toBeGreaterThan(0);
        return found;
      },
      { timeout: 30_000, interval: 200 },
    );
    expect(errors[0]?.code).toBe("ERR_COMPACTION_IMAGE_NOT_ALLOWED");
    expect(JSON.stringify(errors)).toMatch(/spec\.config\.onDemandSnapshotCompaction\.image/);
    expect((await refusal(readJob(first, "compact-evil-compact"))).code).toBe(404);
  });
});
