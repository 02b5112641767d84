/**
 * `spec.etcd.clientUrlTls`: https to etcd's client endpoint with the CA from `tlsCASecretRef` and the
 * client certificate from `clientTLSSecretRef`, against a real etcd serving TLS (server verified as
 * `<etcd>-client.<ns>`), and the failures of finding that material.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Resources } from "../../../src/etcd/services.ts";
import { makeCA, makeServerCertificate } from "../support/pki.ts";
import { makeMutualTlsPki } from "./openssl-pki.ts";
import {
  etcdObject,
  host,
  namespace,
  run,
  secretObject,
  startTlsTestEtcd,
  type TestEtcd,
  taskOf,
  world,
} from "./support.ts";

const ca = makeCA();
const serverCert = makeServerCertificate(ca, [host]);
// The server does not ask for one (see support.ts); it is still loaded, so it must be a valid pair.
const clientCert = makeServerCertificate(ca, ["etcd-client"]);

const caSecret = "ca-etcd";
const clientSecret = "etcd-client-tls";
const clientUrlTls = (options: { caName?: string; dataKey?: string; clientName?: string } = {}) => ({
  tlsCASecretRef: {
    ...(options.caName === "" ? {} : { name: options.caName ?? caSecret }),
    ...(options.dataKey === undefined ? {} : { dataKey: options.dataKey }),
  },
  serverTLSSecretRef: { name: "etcd-server-tls" },
  ...(options.clientName === "" ? {} : { clientTLSSecretRef: { name: options.clientName ?? clientSecret } }),
});

const both = taskOf({ compaction: { physical: true }, defragmentation: true });

let etcd: TestEtcd | undefined;
const port = (): number => {
  if (etcd === undefined) throw new Error("etcd not started");
  return etcd.port;
};

beforeAll(async () => {
  etcd = await startTlsTestEtcd({
    certPem: serverCert.certPem,
    keyPem: serverCert.keyPem,
    caPem: ca.certPem,
  });
}, 120_000);
afterAll(async () => {
  await etcd?.stop();
}, 30_000);

describe("https with the Etcd's CA and client certificate", () => {
  it("compacts and defragments a TLS etcd", async () => {
    const objects = world([
      ["etcd", etcdObject({ clientPort: port(), clientUrlTls: clientUrlTls() })],
      ["secret", secretObject(caSecret, { "bundle.crt": ca.certPem })],
      ["secret", secretObject(clientSecret, { "tls.crt": clientCert.certPem, "tls.key": clientCert.keyPem })],
    ]);
    const outcome = await run("execute", both, objects);
    expect(outcome).toEqual({
      kind: "completed",
      description: expect.stringMatching(
        /^(Compacted to revision \d+ \(physical\)|Revision \d+ was already compacted); defragmented 1 member\(s\): \S+ db size /,
      ),
    });
  });

  it("the CA under a custom dataKey", async () => {
    const objects = world([
      ["etcd", etcdObject({ clientPort: port(), clientUrlTls: clientUrlTls({ dataKey: "ca.crt" }) })],
      ["secret", secretObject(caSecret, { "ca.crt": ca.certPem })],
      ["secret", secretObject(clientSecret, { "tls.crt": clientCert.certPem, "tls.key": clientCert.keyPem })],
    ]);
    expect((await run("execute", taskOf({ defragmentation: true }), objects)).kind).toBe("completed");
  });

  it("a CA that did not sign the server certificate → retry with ERR_ETCD_UNREACHABLE", async () => {
    const other = makeCA("another CA");
    const objects = world([
      ["etcd", etcdObject({ clientPort: port(), clientUrlTls: clientUrlTls() })],
      ["secret", secretObject(caSecret, { "bundle.crt": other.certPem })],
      ["secret", secretObject(clientSecret, { "tls.crt": clientCert.certPem, "tls.key": clientCert.keyPem })],
    ]);
    expect(await run("execute", both, objects)).toEqual({
      kind: "retry",
      description: "Failed to reach etcd",
      error: {
        code: "ERR_ETCD_UNREACHABLE",
        message: "failed to reach etcd",
        cause: expect.stringMatching(
          new RegExp(
            `^Post "https://${host.replace(".", "\\.")}:${port()}/v3/maintenance/status": .*certificate`,
          ),
        ),
      },
    });
  });
});

describe("finding the TLS material (no call is made when it fails)", () => {
  const etcdWith = (tls: ReturnType<typeof clientUrlTls>) =>
    ["etcd", etcdObject({ clientPort: 1, clientUrlTls: tls })] as const;
  const clientPair = [
    "secret",
    secretObject(clientSecret, { "tls.crt": clientCert.certPem, "tls.key": clientCert.keyPem }),
  ] as const;
  const caBundle = ["secret", secretObject(caSecret, { "bundle.crt": ca.certPem })] as const;

  it("no tlsCASecretRef.name → failed with ERR_GET_CA_SECRET", async () => {
    expect(await run("execute", both, world([etcdWith(clientUrlTls({ caName: "" })), clientPair]))).toEqual({
      kind: "failed",
      description: "Failed to get etcd client CA secret",
      error: {
        code: "ERR_GET_CA_SECRET",
        message: "etcd client CA secret is not referenced",
        cause: `spec.etcd.clientUrlTls.tlsCASecretRef.name is not set on etcd ${namespace}/test-etcd`,
      },
    });
  });

  it("CA secret not found → failed with ERR_GET_CA_SECRET", async () => {
    expect(await run("execute", both, world([etcdWith(clientUrlTls()), clientPair]))).toEqual({
      kind: "failed",
      description: "Failed to get etcd client CA secret",
      error: {
        code: "ERR_GET_CA_SECRET",
        message: `failed to get etcd client CA secret ${namespace}/${caSecret}`,
        cause: `secrets "${caSecret}" not found`,
      },
    });
  });

  it("CA secret read error → retry with ERR_GET_CA_SECRET", async () => {
    const objects = world([etcdWith(clientUrlTls()), caBundle, clientPair]);
    objects.fail(Resources.secret, namespace, caSecret, "etcdserver: request timed out");
    expect(await run("execute", both, objects)).toMatchObject({
      kind: "retry",
      error: { code: "ERR_GET_CA_SECRET", cause: "etcdserver: request timed out" },
    });
  });

  it("data key missing → failed with ERR_CA_DATA_KEY_NOT_FOUND", async () => {
    const objects = world([etcdWith(clientUrlTls({ dataKey: "ca.crt" })), caBundle, clientPair]);
    expect(await run("execute", both, objects)).toEqual({
      kind: "failed",
      description: "CA cert data key not found in secret",
      error: {
        code: "ERR_CA_DATA_KEY_NOT_FOUND",
        message: "CA cert data key not found in secret",
        cause: `CA cert data key "ca.crt" not found in secret ${namespace}/${caSecret}`,
      },
    });
  });

  it("no parsable certificate → failed with ERR_APPEND_CA_CERTS", async () => {
    const garbage = ["secret", secretObject(caSecret, { "bundle.crt": "not a certificate" })] as const;
    expect(await run("execute", both, world([etcdWith(clientUrlTls()), garbage, clientPair]))).toMatchObject({
      kind: "failed",
      error: { code: "ERR_APPEND_CA_CERTS" },
    });
  });

  it("no clientTLSSecretRef → failed with ERR_GET_CLIENT_TLS_SECRET", async () => {
    const objects = world([etcdWith(clientUrlTls({ clientName: "" })), caBundle]);
    expect(await run("execute", both, objects)).toEqual({
      kind: "failed",
      description: "Failed to get etcd client TLS secret",
      error: {
        code: "ERR_GET_CLIENT_TLS_SECRET",
        message: "etcd client TLS secret is not referenced",
        cause: `spec.etcd.clientUrlTls.clientTLSSecretRef.name is not set on etcd ${namespace}/test-etcd`,
      },
    });
  });

  it("client secret without tls.key → failed with ERR_GET_CLIENT_TLS_SECRET", async () => {
    const certOnly = ["secret", secretObject(clientSecret, { "tls.crt": clientCert.certPem })] as const;
    expect(await run("execute", both, world([etcdWith(clientUrlTls()), caBundle, certOnly]))).toEqual({
      kind: "failed",
      description: "Failed to get etcd client TLS secret",
      error: {
        code: "ERR_GET_CLIENT_TLS_SECRET",
        message: `failed to get etcd client TLS secret ${namespace}/${clientSecret}`,
        cause: `data key "tls.key" not found in secret ${namespace}/${clientSecret}`,
      },
    });
  });
});

describe("etcd with --client-cert-auth (as druid runs it)", () => {
  // openssl makes these certificates (Node cannot); it is on every machine here, and a missing one fails.
  const pki = makeMutualTlsPki(host);
  let mtls: TestEtcd | undefined;
  const objectsWith = (client: { certPem: string; keyPem: string }) => {
    if (mtls === undefined) throw new Error("mutual-TLS etcd not started");
    return world([
      ["etcd", etcdObject({ clientPort: mtls.port, clientUrlTls: clientUrlTls() })],
      ["secret", secretObject(caSecret, { "bundle.crt": pki.ca.certPem })],
      ["secret", secretObject(clientSecret, { "tls.crt": client.certPem, "tls.key": client.keyPem })],
    ]);
  };

  beforeAll(async () => {
    mtls = await startTlsTestEtcd({
      certPem: pki.server.certPem,
      keyPem: pki.server.keyPem,
      caPem: pki.ca.certPem,
      clientCertAuth: pki.client,
    });
  }, 120_000);
  afterAll(async () => {
    await mtls?.stop();
  }, 30_000);

  it("presents the client certificate from clientTLSSecretRef", async () => {
    const outcome = await run("execute", both, objectsWith(pki.client));
    expect(outcome).toEqual({
      kind: "completed",
      description: expect.stringMatching(
        /^Compacted to revision \d+ \(physical\); defragmented 1 member\(s\)/,
      ),
    });
  });

  it("a client certificate etcd does not trust → retry with ERR_ETCD_UNREACHABLE", async () => {
    const outcome = await run("execute", both, objectsWith(clientCert));
    expect(outcome).toMatchObject({
      kind: "retry",
      error: { code: "ERR_ETCD_UNREACHABLE", cause: expect.stringMatching(/alert unknown ca/i) },
    });
  });
});
