/**
 * Issue 35, M6, on a real kube-apiserver: deploy/ and deploy/quorum-recovery/ applied, every request
 * made as the controller's ServiceAccount (a TokenRequest token).
 *
 * Before the fix the recovery's RBAC was bound cluster-wide and nothing narrowed it: as the controller,
 * dry-run `PATCH kube-system/coredns`, `CREATE kube-system/aws-auth` and `DELETE kube-node-lease/<node>`
 * were admitted. Now the recovery's rules hold in the namespaces deploy/quorum-recovery/rolebindings.yaml
 * binds only, and deploy/controller-writes-policy.yaml admits, where they do hold, only etcd-druid's
 * objects and the Etcd annotations the recovery sets; the recovery's own writes (QuorumCluster's, as
 * the handler makes them) and the history ConfigMap's still pass.
 */
import {
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1RoleBinding,
} from "@kubernetes/client-node";
import * as Effect from "effect/Effect";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { RecoveryAnnotations } from "../../src/etcd/api/config/recover-from-quorum-loss.ts";
import { memberLeaseLabels, volumeLabels } from "../../src/etcd/recover-from-quorum-loss/cluster.ts";
import { makeKubernetesQuorumCluster } from "../../src/etcd/recover-from-quorum-loss/cluster-kubernetes.ts";
import { useControlPlane } from "../support/cluster.ts";
import { applyManifests, deployCrdFiles, deployObjects } from "../support/deploy-manifests.ts";
import { etcdStatefulSet, memberClaim } from "../support/etcd-member-objects.ts";
import { refusal } from "../support/refusal.ts";

const cluster = useControlPlane({ crds: deployCrdFiles });
const serviceAccount = "system:serviceaccount:opstask-system:opstask";
const policy = /ValidatingAdmissionPolicy 'opstask-controller-writes'/;
const recovery = deployObjects("quorum-recovery");
const bound = recovery
  .filter((object) => object.kind === "RoleBinding")
  .map((object) => (object as unknown as V1RoleBinding).metadata?.namespace ?? "");
const [namespace = ""] = bound;
const unbound = "etcd-elsewhere";
const etcd = "etcd-main";
const merge = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
const etcds = { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcds" } as const;

let admin: KubeConfig;
let asController: KubeConfig;
const admitted = { code: 0, message: "admitted" };

/** The objects of one Etcd as etcd-druid labels them, and a namesake of each that is not druid's. */
const createEtcdObjects = async (ns: string) => {
  const core = admin.makeApiClient(CoreV1Api);
  const coordination = admin.makeApiClient(CoordinationV1Api);
  await admin.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
    ...etcds,
    namespace: ns,
    body: {
      apiVersion: "druid.gardener.cloud/v1alpha1",
      kind: "Etcd",
      metadata: { name: etcd, namespace: ns },
      spec: { replicas: 3, labels: { app: etcd }, etcd: {}, backup: {} },
    },
  });
  await admin
    .makeApiClient(AppsV1Api)
    .createNamespacedStatefulSet({ namespace: ns, body: etcdStatefulSet(etcd) });
  const claim = (name: string, labels: Record<string, string>) =>
    core.createNamespacedPersistentVolumeClaim({ namespace: ns, body: memberClaim(name, labels) });
  for (const ordinal of [0, 1, 2]) await claim(`data-${etcd}-${ordinal}`, volumeLabels(etcd));
  await claim("app-data", { app: "shop" });
  for (const ordinal of [0, 1, 2])
    await coordination.createNamespacedLease({
      namespace: ns,
      body: { metadata: { name: `${etcd}-${ordinal}`, labels: memberLeaseLabels(etcd) } },
    });
  await coordination.createNamespacedLease({ namespace: ns, body: { metadata: { name: "shop-leader" } } });
  await core.createNamespacedConfigMap({
    namespace: ns,
    body: {
      metadata: { name: `${etcd}-config`, labels: volumeLabels(etcd) },
      data: { "etcd.conf.yaml": "name: etcd-main\n", other: "kept" },
    },
  });
  await core.createNamespacedConfigMap({
    namespace: ns,
    body: { metadata: { name: "shop-settings" }, data: {} },
  });
};

beforeAll(async () => {
  const plane = cluster();
  admin = plane.makeKubeConfig();
  const core = admin.makeApiClient(CoreV1Api);
  for (const name of [...bound, unbound]) await core.createNamespace({ body: { metadata: { name } } });
  await applyManifests(admin, [...deployObjects(), ...recovery]);
  asController = plane.kubeConfigForToken(
    await plane.serviceAccountToken("opstask-system", "opstask", { create: false, expirationSeconds: 3600 }),
    serviceAccount,
  );
  await createEtcdObjects(namespace);
  await createEtcdObjects(unbound);
  await core.createNamespacedConfigMap({ namespace: "kube-system", body: { metadata: { name: "coredns" } } });
  await admin
    .makeApiClient(CoordinationV1Api)
    .createNamespacedLease({ namespace: "kube-node-lease", body: { metadata: { name: "node-1" } } });
  // RBAC and the policy take effect from caches: wait until the policy refuses a ConfigMap patch in
  // a bound namespace (where RBAC allows it).
  await vi.waitFor(
    async () => {
      const refused = await refusal(
        asController
          .makeApiClient(CoreV1Api)
          .patchNamespacedConfigMap(
            { namespace, name: "shop-settings", body: { data: { x: "y" } }, dryRun: "All" },
            merge,
          ),
      );
      expect(refused.message).toMatch(policy);
    },
    { timeout: 30_000, interval: 200 },
  );
}, 120_000);

describe("the recovery's RBAC is namespaced (deploy/quorum-recovery/)", () => {
  it("binds the recovery's rules by RoleBindings only, none cluster-wide", () => {
    expect(recovery.map((object) => object.kind).sort()).toEqual([
      "ClusterRole",
      "RoleBinding",
      "RoleBinding",
    ]);
    expect(bound.length).toBeGreaterThan(0);
  });

  it("refuses, as the controller, the writes the security round made: coredns, aws-auth, a node's Lease", async () => {
    const core = asController.makeApiClient(CoreV1Api);
    const patched = await refusal(
      core.patchNamespacedConfigMap(
        {
          namespace: "kube-system",
          name: "coredns",
          body: { data: { Corefile: ". { forward . 203.0.113.53 }" } },
          dryRun: "All",
        },
        merge,
      ),
    );
    const created = await refusal(
      core.createNamespacedConfigMap({
        namespace: "kube-system",
        body: { metadata: { name: "aws-auth" }, data: { mapRoles: "- rolearn: arn:aws:iam::1:role/x" } },
        dryRun: "All",
      }),
    );
    const deleted = await refusal(
      asController
        .makeApiClient(CoordinationV1Api)
        .deleteNamespacedLease({ namespace: "kube-node-lease", name: "node-1", dryRun: "All" }),
    );
    for (const answer of [patched, created, deleted]) expect(answer.code).toBe(403);
    // Where RBAC no longer reaches (patch, delete), and where it does (create ConfigMaps), the policy.
    expect(created.message).toMatch(policy);
  });

  it("refuses the recovery's verbs in a namespace it is not bound in (RBAC)", async () => {
    const quorum = makeKubernetesQuorumCluster({ kubeConfig: asController });
    const scaled = await Effect.runPromise(Effect.flip(quorum.scale(unbound, etcd, 0)));
    expect(scaled.reason).toBe("Forbidden");
    const deleted = await Effect.runPromise(Effect.flip(quorum.deletePvcs(unbound, volumeLabels(etcd))));
    expect(deleted.reason).toBe("Forbidden");
  });
});

describe("the controller's writes are narrowed to etcd-druid's objects (deploy/controller-writes-policy.yaml)", () => {
  const core = () => asController.makeApiClient(CoreV1Api);
  const expectRefused = (answer: { code: number; message: string }, message: RegExp) => {
    expect(answer.code).toBe(403);
    expect(answer.message).toMatch(policy);
    expect(answer.message).toMatch(message);
  };

  it("refuses other ConfigMaps, volumes and Leases in a bound namespace", async () => {
    expectRefused(
      await refusal(
        core().createNamespacedConfigMap({
          namespace,
          body: { metadata: { name: "aws-auth" } },
          dryRun: "All",
        }),
      ),
      /only its history ConfigMap/,
    );
    expectRefused(
      await refusal(
        core().patchNamespacedConfigMap(
          { namespace, name: `${etcd}-config`, body: { data: { other: "changed" } }, dryRun: "All" },
          merge,
        ),
      ),
      /only etcd.conf.yaml of etcd-druid's/,
    );
    expectRefused(
      await refusal(
        core().patchNamespacedConfigMap(
          {
            namespace,
            name: `${etcd}-config`,
            body: { metadata: { labels: { "app.kubernetes.io/part-of": "x" } } },
            dryRun: "All",
          },
          merge,
        ),
      ),
      /only etcd.conf.yaml of etcd-druid's/,
    );
    expectRefused(
      await refusal(
        core().deleteNamespacedPersistentVolumeClaim({ namespace, name: "app-data", dryRun: "All" }),
      ),
      /only etcd-druid's member volumes/,
    );
    expectRefused(
      await refusal(
        asController
          .makeApiClient(CoordinationV1Api)
          .deleteNamespacedLease({ namespace, name: "shop-leader", dryRun: "All" }),
      ),
      /only etcd-druid's member Leases/,
    );
  });

  it("refuses an Etcd patch beyond the recovery's annotations, and a scale other than 0 or 1", async () => {
    const custom = asController.makeApiClient(CustomObjectsApi);
    const patchEtcd = (body: Record<string, unknown>) =>
      refusal(
        custom.patchNamespacedCustomObject({ ...etcds, namespace, name: etcd, body, dryRun: "All" }, merge),
      );
    expectRefused(
      await patchEtcd({ metadata: { annotations: { "example.com/other": "x" } } }),
      /refused: example.com\/other/,
    );
    expectRefused(
      await patchEtcd({ spec: { priorityClassName: "system-node-critical" } }),
      /a change beyond its annotations/,
    );
    expectRefused(
      await patchEtcd({ metadata: { labels: { team: "x" } } }),
      /a change beyond its annotations/,
    );
    expectRefused(
      await refusal(
        asController
          .makeApiClient(AppsV1Api)
          .patchNamespacedStatefulSetScale(
            { namespace, name: etcd, body: { spec: { replicas: 5 } }, dryRun: "All" },
            merge,
          ),
      ),
      /to 0 or 1 replicas only/,
    );
  });

  it("admits the recovery's own writes, as QuorumCluster makes them, and the history ConfigMap's", async () => {
    const quorum = makeKubernetesQuorumCluster({ kubeConfig: asController });
    const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect);
    await run(
      quorum.annotateEtcd(namespace, etcd, {
        [RecoveryAnnotations.suspendReconcile]: "true",
        [RecoveryAnnotations.disableProtection]: "true",
      }),
    );
    await run(quorum.scale(namespace, etcd, 0));
    expect(await run(quorum.deletePvcs(namespace, volumeLabels(etcd)))).toBe(3);
    expect(await run(quorum.deleteLeases(namespace, memberLeaseLabels(etcd)))).toBe(3);
    await run(
      quorum.writeConfigData(
        namespace,
        `${etcd}-config`,
        "etcd.conf.yaml",
        "name: etcd-main\n# one member\n",
      ),
    );
    await run(quorum.scale(namespace, etcd, 1));
    await run(
      quorum.annotateEtcd(namespace, etcd, {
        [RecoveryAnnotations.suspendReconcile]: null,
        [RecoveryAnnotations.disableProtection]: null,
        [RecoveryAnnotations.operation]: "reconcile",
      }),
    );
    const config = await admin
      .makeApiClient(CoreV1Api)
      .readNamespacedConfigMap({ namespace, name: `${etcd}-config` });
    expect(config.data).toEqual({ "etcd.conf.yaml": "name: etcd-main\n# one member\n", other: "kept" });
    const history = { metadata: { name: "opstask-history-etcdopstasks" }, data: { "entries.json": "[]" } };
    expect(await refusal(core().createNamespacedConfigMap({ namespace, body: history }))).toEqual(admitted);
    expect(
      await refusal(
        core().replaceNamespacedConfigMap({
          namespace,
          name: history.metadata.name,
          body: { ...history, data: { "entries.json": "[{}]" } },
        }),
      ),
    ).toEqual(admitted);
    // A steps task's progress record, in the controller's own namespace (src/runtime/own-record-kube.ts).
    const record = { metadata: { name: "opstask-record-0f6a3c5e-1b2d-4e8f-9a7b-6c5d4e3f2a1b" }, data: {} };
    const own = { namespace: "opstask-system", name: record.metadata.name };
    expect(
      await refusal(core().createNamespacedConfigMap({ namespace: own.namespace, body: record })),
    ).toEqual(admitted);
    expect(
      await refusal(core().patchNamespacedConfigMap({ ...own, body: { data: { step: "1" } } }, merge)),
    ).toEqual(admitted);
    expect(await refusal(core().deleteNamespacedConfigMap(own))).toEqual(admitted);
  });
});
