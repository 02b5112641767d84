/**
 * The lab's etcd cluster objects (src/devcluster/etcd-cluster) against the real kube-apiserver with
 * druid's Etcd CRD, without a node: every object passes the apiserver's validation and admission in a
 * server-side dry run, and what the EtcdOpsTask handlers read from them is what druid would give
 * them (the Etcd decodes, backup and client TLS are on, the StatefulSet's `backup-restore-ca` volume
 * names the CA secret, and the TLS material verifies for the names the handlers dial).
 */
import { X509Certificate } from "node:crypto";
import { CustomObjectsApi } from "@kubernetes/client-node";
import * as Result from "effect/Result";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { applyEtcdCluster, labEtcdClusterSpec } from "../../src/devcluster/etcd-cluster/index.ts";
import { configMap, etcdObject, secrets, statefulSet } from "../../src/devcluster/etcd-cluster/manifests.ts";
import { decodeEtcd, isBackupEnabled } from "../../src/etcd/api/etcd.ts";
import { etcdClientHost } from "../../src/etcd/on-demand-maintenance/endpoint.ts";
import { backupRestoreHost } from "../../src/etcd/on-demand-snapshot/request.ts";
import { createTestNamespace, druidCrds, useControlPlane } from "../support/cluster.ts";

const cluster = useControlPlane({ crds: druidCrds });

const images = {
  etcd: "localhost/opstask-lab/etcd:test",
  etcdbrctl: "localhost/opstask-lab/etcdbrctl:test",
};
const store = {
  endpoint: "http://object-store.etcd-lab.svc:9000",
  accessKeyID: "lab",
  secretAccessKey: "lab-secret",
  region: "us-east-1",
};

describe("the lab etcd cluster's objects", () => {
  it("pass the apiserver's validation in a server-side dry run, and nothing is stored", async () => {
    const kc = cluster().makeKubeConfig();
    const namespace = await createTestNamespace(kc, "etcd-lab");
    const spec = labEtcdClusterSpec({
      name: "etcd-main",
      namespace,
      store,
      images,
    });
    const applied = await applyEtcdCluster(kc, spec, { dryRun: true });
    expect(applied.uid).toMatch(/^[0-9a-f-]{36}$/);
    const stored = await kc.makeApiClient(CustomObjectsApi).listNamespacedCustomObject({
      group: "druid.gardener.cloud",
      version: "v1alpha1",
      plural: "etcds",
      namespace,
    });
    expect((stored as { items: unknown[] }).items).toEqual([]);
  });

  it("give the handlers a backup-enabled Etcd with client and backup TLS, and the CA volume druid mounts", () => {
    const spec = labEtcdClusterSpec({ name: "etcd-main", namespace: "shoot--a", store, images });
    const decoded = decodeEtcd({ ...etcdObject(spec), metadata: { ...etcdObject(spec).metadata, uid: "u" } });
    if (Result.isFailure(decoded)) throw new Error(decoded.failure.errors.join("\n"));
    const etcd = decoded.success;
    expect(isBackupEnabled(etcd)).toBe(true);
    expect(etcd.spec.backup.tls?.tlsCASecretRef).toEqual({ name: "etcd-main-ca", dataKey: "bundle.crt" });
    expect(etcd.spec.etcd.clientUrlTls?.clientTLSSecretRef).toEqual({ name: "etcd-main-client-tls" });
    const set = statefulSet(spec, "u");
    expect(set.metadata?.ownerReferences?.[0]).toMatchObject({ uid: "u", controller: true });
    expect(
      set.spec?.template.spec?.volumes?.find((volume) => volume.name === "backup-restore-ca")?.secret,
    ).toMatchObject({ secretName: "etcd-main-ca" });
    expect(
      secrets(spec).find((secret) => secret.metadata?.name === "etcd-main-ca")?.stringData,
    ).toHaveProperty("bundle.crt");
    // The sidecar finds its member's URLs under its POD_NAME, as in druid's etcd.conf.yaml.
    const config = parse(configMap(spec, "u").data?.["etcd.conf.yaml"] ?? "") as Record<string, unknown>;
    expect(config["advertise-client-urls"]).toMatchObject({
      "etcd-main-1": ["https://etcd-main-1.etcd-main-peer.shoot--a.svc:2379"],
    });
  });

  it("issue certificates that verify for the hosts the handlers and the sidecars dial", () => {
    const spec = labEtcdClusterSpec({ name: "etcd-main", namespace: "shoot--a", store, images });
    const ca = new X509Certificate(spec.pki.ca.certPem);
    const backup = new X509Certificate(spec.pki.backupRestoreServer.certPem);
    const server = new X509Certificate(spec.pki.etcdServer.certPem);
    const client = new X509Certificate(spec.pki.etcdClient.certPem);
    for (const leaf of [backup, server, client]) expect(leaf.verify(ca.publicKey)).toBe(true);
    const etcd = { metadata: { name: "etcd-main", namespace: "shoot--a" } } as Parameters<
      typeof backupRestoreHost
    >[0];
    expect(backup.checkHost(backupRestoreHost(etcd))).toBe(backupRestoreHost(etcd));
    expect(backup.checkHost("etcd-main-2.etcd-main-peer.shoot--a.svc")).toBeDefined();
    expect(server.checkHost(etcdClientHost(etcd))).toBe("etcd-main-client.shoot--a");
    expect(server.checkHost("etcd-main-0.etcd-main-peer.shoot--a.svc")).toBeDefined();
    expect(server.checkHost("etcd-main-local")).toBe("etcd-main-local");
    expect(server.checkIP("127.0.0.1")).toBe("127.0.0.1");
    expect(server.keyUsage).toEqual(expect.arrayContaining(["1.3.6.1.5.5.7.3.1", "1.3.6.1.5.5.7.3.2"]));
    expect(client.keyUsage).toEqual(["1.3.6.1.5.5.7.3.2"]);
    expect(backup.checkHost("etcd-main-client.other")).toBeUndefined();
  });
});
