// What the lab hands etcd-druid (src/devcluster/lab/druid-etcd.ts), checked without druid: the
// image-vector override names every image druid 5b90b4a looks up (internal/images/images.yaml) with
// the lab's reference split into repository and tag as druid joins them again, and the Etcd names no
// image (so the vector decides) and adds peer TLS to the lab's client and backup-restore TLS.
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { labEtcdClusterSpec } from "../../src/devcluster/etcd-cluster/index.ts";
import { druidEtcdObject, imageVectorOverride } from "../../src/devcluster/lab/druid-etcd.ts";

const images = {
  etcdWrapper: "localhost/opstask-lab/etcd-wrapper-lab:76c7005d31e7-etcd-v3.5.27-2d095941a0a1",
  etcdbrctl: "localhost:5000/opstask-lab/etcdbrctl:v0.43.0-abc",
  busybox: "localhost/opstask-lab/busybox:1.35.0-def",
};

describe("the lab's image vector for etcd-druid", () => {
  const vector = parse(imageVectorOverride(images)) as {
    images: Array<{ name: string; repository: string; tag: string }>;
  };
  const byName = new Map(vector.images.map((image) => [image.name, `${image.repository}:${image.tag}`]));

  it("points every image druid looks up at the lab's, whether or not UpgradeEtcdVersion is on", () => {
    expect(Object.fromEntries(byName)).toEqual({
      "etcd-wrapper": images.etcdWrapper,
      "etcd-wrapper-next": images.etcdWrapper,
      "etcd-backup-restore": images.etcdbrctl,
      "etcd-backup-restore-next": images.etcdbrctl,
      alpine: images.busybox,
    });
  });

  it("splits at the tag's colon, not a registry port's", () => {
    const entry = vector.images.find((image) => image.name === "etcd-backup-restore");
    expect(entry).toEqual({
      name: "etcd-backup-restore",
      repository: "localhost:5000/opstask-lab/etcdbrctl",
      tag: "v0.43.0-abc",
    });
  });
});

describe("the Etcd the lab gives etcd-druid", () => {
  const spec = labEtcdClusterSpec({
    name: "etcd-main",
    namespace: "etcd-lab-test",
    store: {
      endpoint: "http://object-store.etcd-lab-test:9000",
      accessKeyID: "a",
      secretAccessKey: "b",
      region: "local",
    },
    images: { etcd: "etcd:ignored", etcdbrctl: "etcdbrctl:ignored" },
  });
  const etcd = druidEtcdObject(spec);

  it("names no image: druid takes them from its image vector", () => {
    expect(etcd.spec.etcd).not.toHaveProperty("image");
    expect(etcd.spec.backup).not.toHaveProperty("image");
  });

  it("has 3 replicas, TLS for clients, peers and the backup-restore server, and the S3 store", () => {
    expect(etcd.spec.replicas).toBe(3);
    expect(etcd.spec.etcd.clientUrlTls.serverTLSSecretRef.name).toBe("etcd-main-server-tls");
    expect(etcd.spec.etcd.peerUrlTls).toEqual({
      tlsCASecretRef: { name: "etcd-main-ca", dataKey: "bundle.crt" },
      serverTLSSecretRef: { name: "etcd-main-server-tls" },
    });
    expect(etcd.spec.backup.tls.serverTLSSecretRef.name).toBe("etcd-main-backup-restore-server-tls");
    expect(etcd.spec.backup.store).toMatchObject({ provider: "S3", secretRef: { name: "etcd-main-backup" } });
  });
});
