/**
 * docs/contract.md §5 TLS rows (§10) and §13 D8, against an HTTPS stand-in on 127.0.0.1 whose server
 * certificate names only `test-etcd-client.ns.svc` (etcd-druid v0.38.1's `GetClientHostname`) and is signed by
 * a CA generated for the test (test PKI built on node:crypto). The connection goes to 127.0.0.1, through the
 * `--resolve` rule for the short name `test-etcd-client.ns`, while URL, Host, SNI and verification use the
 * `.svc` host.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { Resources } from "../../../src/etcd/services.ts";
import {
  caSecretName,
  caVolume,
  type EtcdOptions,
  etcdName,
  etcdObject,
  namespace,
  run,
  type StatefulSetOptions,
  secretObject,
  statefulSetObject,
  svcHost,
  taskOf,
  world,
} from "../support/fixtures.ts";
import { type Issued, makeCA, makeServerCertificate } from "../support/pki.ts";
import { Mode, type StandIn, startStandIn } from "../support/stand-in.ts";

let ca: Issued;
let otherCA: Issued;
let standIn: StandIn;

beforeAll(async () => {
  ca = makeCA();
  otherCA = makeCA("another test CA");
  standIn = await startStandIn({ tls: makeServerCertificate(ca, [svcHost]) });
});
afterAll(async () => {
  await standIn.close();
});
afterEach(() => {
  standIn.setMode(Mode.ok());
});

interface TlsWorld {
  readonly etcd?: EtcdOptions["tls"];
  /** undefined: no StatefulSet. */
  readonly statefulSet?: StatefulSetOptions | undefined;
  /** undefined: no Secret; the secret's name is `ca-etcdbr` unless given. */
  readonly secret?: { readonly name?: string; readonly data: Record<string, string> } | undefined;
}

const tlsWorld = (spec: TlsWorld = {}) => {
  const objects = world([
    ["etcd", etcdObject({ port: standIn.port, tls: spec.etcd ?? { dataKey: "ca.crt" } })],
  ]);
  const statefulSet = "statefulSet" in spec ? spec.statefulSet : {};
  if (statefulSet !== undefined) objects.put(Resources.statefulSet, statefulSetObject(statefulSet));
  const secret = "secret" in spec ? spec.secret : { data: { "ca.crt": ca.certPem } };
  if (secret !== undefined)
    objects.put(Resources.secret, secretObject(secret.name ?? caSecretName, secret.data));
  return objects;
};

const created = { kind: "completed", description: "Snapshot created successfully" } as const;

describe("TLS: the CA comes from the StatefulSet's backup-restore-ca volume (docs/contract.md §10)", () => {
  it("https POST verified with the secret's CA against a certificate naming only <etcd>-client.<ns>.svc; Host and SNI are that name, TLS ≥ 1.2, no client cert", async () => {
    const before = standIn.requests.length;
    expect(await run("execute", taskOf(), tlsWorld())).toEqual(created);
    expect(standIn.requests.slice(before)).toEqual([
      expect.objectContaining({
        method: "POST",
        path: "/snapshot/full",
        host: `${svcHost}:${standIn.port}`,
        sni: svcHost,
        clientCertificate: false,
      }),
    ]);
    expect(["TLSv1.2", "TLSv1.3"]).toContain(standIn.requests.at(-1)?.tlsVersion);
  });

  it("the data key defaults to bundle.crt; certificates beside junk and other PEM blocks are found", async () => {
    const bundle = `junk\n${otherCA.certPem}-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n${ca.certPem}`;
    const objects = tlsWorld({ etcd: {}, secret: { data: { "bundle.crt": bundle } } });
    expect(await run("execute", taskOf({ type: "delta" }), objects)).toEqual(created);
  });

  it("the StatefulSet, then the Secret, are read in the Etcd's namespace after the Etcd checks", async () => {
    const objects = tlsWorld();
    await run("execute", taskOf(), objects);
    expect(objects.reads).toEqual([
      { resource: Resources.etcd, namespace, name: etcdName },
      { resource: Resources.statefulSet, namespace, name: etcdName },
      { resource: Resources.secret, namespace, name: caSecretName },
    ]);
  });

  it("StatefulSet GET error → retry with ERR_GET_STATEFULSET", async () => {
    const objects = tlsWorld();
    objects.fail(Resources.statefulSet, namespace, etcdName, "etcd request timed out");
    expect(await run("execute", taskOf(), objects)).toEqual({
      kind: "retry",
      description: "Failed to get StatefulSet for backup-restore CA resolution",
      error: {
        code: "ERR_GET_STATEFULSET",
        message: "failed to get StatefulSet for etcd ns/test-etcd",
        cause: "etcd request timed out",
      },
    });
  });

  const notOwned = {
    kind: "failed",
    description: "StatefulSet for etcd ns/test-etcd not found or not owned by etcd",
    error: {
      code: "ERR_GET_STATEFULSET",
      message: "resolve backup-restore CA secret from StatefulSet",
      cause: "StatefulSet for etcd ns/test-etcd not found or not owned",
    },
  } as const;

  it("StatefulSet missing (and no tlsCASecretRef.name) → failed with ERR_GET_STATEFULSET", async () => {
    const objects = tlsWorld({ statefulSet: undefined });
    expect(await run("execute", taskOf(), objects)).toEqual(notOwned);
  });

  it.each([
    ["another UID", { controllerUid: "someone-else" }],
    ["no owner references", { controllerUid: undefined }],
  ] as const)(
    "StatefulSet not controlled by the Etcd (%s), no tlsCASecretRef.name → failed with ERR_GET_STATEFULSET",
    async (_, sts) => {
      const objects = tlsWorld({ statefulSet: sts });
      expect(await run("execute", taskOf(), objects)).toEqual(notOwned);
    },
  );

  const volumeMissing = {
    kind: "failed",
    description: 'backup-restore CA volume "backup-restore-ca" not found on StatefulSet ns/test-etcd',
    error: {
      code: "ERR_GET_CA_SECRET",
      message: "resolve backup-restore CA secret from StatefulSet volumes",
      cause: 'volume "backup-restore-ca" not found on StatefulSet ns/test-etcd',
    },
  } as const;

  it.each([
    ["no such volume", [{ name: "other", secret: { secretName: caSecretName } }]],
    ["not a secret volume", [{ name: "backup-restore-ca", configMap: { name: caSecretName } }]],
  ])("no secret volume named backup-restore-ca (%s) → failed with ERR_GET_CA_SECRET", async (_, volumes) => {
    const objects = tlsWorld({ statefulSet: { volumes } });
    expect(await run("execute", taskOf(), objects)).toEqual(volumeMissing);
  });

  it("CA secret not found → failed 'Failed to get etcdbr CA secret' with ERR_GET_CA_SECRET", async () => {
    const objects = tlsWorld({ secret: undefined });
    expect(await run("execute", taskOf(), objects)).toEqual({
      kind: "failed",
      description: "Failed to get etcdbr CA secret",
      error: {
        code: "ERR_GET_CA_SECRET",
        message: "failed to get etcdbr CA secret ns/ca-etcdbr",
        cause: 'secrets "ca-etcdbr" not found',
      },
    });
  });

  it("CA secret GET error (not NotFound) → retry with ERR_GET_CA_SECRET", async () => {
    const objects = tlsWorld();
    objects.fail(Resources.secret, namespace, caSecretName, 'secrets "ca-etcdbr" is forbidden');
    expect(await run("execute", taskOf(), objects)).toEqual({
      kind: "retry",
      description: "Failed to get etcdbr CA secret",
      error: {
        code: "ERR_GET_CA_SECRET",
        message: "failed to get etcdbr CA secret ns/ca-etcdbr",
        cause: 'secrets "ca-etcdbr" is forbidden',
      },
    });
  });

  it.each([
    ["dataKey ca.crt, secret has bundle.crt", { dataKey: "ca.crt" }, "ca.crt"],
    ["default key bundle.crt, secret has ca.crt", {}, "bundle.crt"],
    ["key named like an Object property", { dataKey: "constructor" }, "constructor"],
  ] as const)("data key missing (%s) → failed with ERR_CA_DATA_KEY_NOT_FOUND", async (_, tls, key) => {
    const data = key === "ca.crt" ? { "bundle.crt": ca.certPem } : { "ca.crt": ca.certPem };
    const objects = tlsWorld({ etcd: tls, secret: { data } });
    expect(await run("execute", taskOf(), objects)).toEqual({
      kind: "failed",
      description: "CA cert data key not found in secret",
      error: {
        code: "ERR_CA_DATA_KEY_NOT_FOUND",
        message: "CA cert data key not found in secret",
        cause: `CA cert data key "${key}" not found in secret ns/ca-etcdbr`,
      },
    });
  });

  it.each([
    ["not PEM at all", "this is not a certificate"],
    ["empty", ""],
    [
      "a CERTIFICATE block that does not parse",
      "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
    ],
  ])("no parsable PEM cert (%s) → failed with ERR_APPEND_CA_CERTS", async (_, pem) => {
    const objects = tlsWorld({ secret: { data: { "ca.crt": pem } } });
    expect(await run("execute", taskOf(), objects)).toEqual({
      kind: "failed",
      description: "Failed to append CA certs from secret",
      error: {
        code: "ERR_APPEND_CA_CERTS",
        message: "failed to append CA certs from secret",
        cause: "failed to append CA certs from secret ns/ca-etcdbr",
      },
    });
  });

  it("TLS handshake fails: server not signed by the secret's CA → retry with ERR_EXECUTE_HTTP_REQUEST", async () => {
    const objects = tlsWorld({ secret: { data: { "ca.crt": otherCA.certPem } } });
    const outcome = await run("execute", taskOf(), objects);
    expect(outcome).toMatchObject({
      kind: "retry",
      description: "Failed to execute HTTP request",
      error: { code: "ERR_EXECUTE_HTTP_REQUEST", message: "failed to execute HTTP request" },
    });
    expect(outcome.kind === "retry" && outcome.error?.cause).toMatch(
      new RegExp(`^Post "https://${svcHost}:${standIn.port}/snapshot/full": `),
    );
  });

  it("TLS handshake fails: certificate for another name → retry with ERR_EXECUTE_HTTP_REQUEST", async () => {
    const wrongName = await startStandIn({ tls: makeServerCertificate(ca, ["other-client.ns"]) });
    try {
      const objects = tlsWorld();
      objects.put(Resources.etcd, etcdObject({ port: wrongName.port, tls: { dataKey: "ca.crt" } }));
      const outcome = await run("execute", taskOf(), objects);
      expect(outcome).toMatchObject({ kind: "retry", error: { code: "ERR_EXECUTE_HTTP_REQUEST" } });
      expect(outcome.kind === "retry" && outcome.error?.cause).toContain(svcHost);
    } finally {
      await wrongName.close();
    }
  });

  it("HTTP answers over TLS map as without TLS: status ≠ 200 → failed ERR_CREATE_SNAPSHOT", async () => {
    standIn.setMode(Mode.status(500));
    expect(await run("execute", taskOf(), tlsWorld())).toMatchObject({
      kind: "failed",
      error: { code: "ERR_CREATE_SNAPSHOT", cause: "failed to create snapshot, status code: 500" },
    });
  });
});

describe("§13 D8: tlsCASecretRef.name stands in for a missing StatefulSet or volume", () => {
  const named = { name: "ca-from-ref", dataKey: "ca.crt" };
  // `ca` exists only once beforeAll ran, so the secret is built inside each test.
  const refSecret = () => ({ name: "ca-from-ref", data: { "ca.crt": ca.certPem } });

  it("StatefulSet missing → the secret named by tlsCASecretRef.name (in the Etcd's namespace) is used", async () => {
    const objects = tlsWorld({
      etcd: named,
      statefulSet: undefined,
      secret: refSecret(),
    });
    expect(await run("execute", taskOf(), objects)).toEqual(created);
    expect(objects.reads.at(-1)).toEqual({ resource: Resources.secret, namespace, name: "ca-from-ref" });
  });

  it("volume missing → the secret named by tlsCASecretRef.name is used", async () => {
    const objects = tlsWorld({
      etcd: named,
      statefulSet: { volumes: [] },
      secret: refSecret(),
    });
    expect(await run("execute", taskOf(), objects)).toEqual(created);
  });

  it.each([
    ["another UID", { controllerUid: "someone-else", volumes: [caVolume()] }],
    ["no owner references", { controllerUid: undefined, volumes: [caVolume()] }],
  ] as const)(
    "StatefulSet not controlled by the Etcd (%s) → treated as missing: tlsCASecretRef.name is used, its volume never",
    async (_, sts) => {
      const objects = tlsWorld({ etcd: named, statefulSet: sts, secret: refSecret() });
      expect(await run("execute", taskOf(), objects)).toEqual(created);
      const secretReads = objects.reads.filter((read) => read.resource === Resources.secret);
      expect(secretReads).toEqual([{ resource: Resources.secret, namespace, name: "ca-from-ref" }]);
    },
  );

  it("the volume wins over tlsCASecretRef.name when both exist", async () => {
    const objects = tlsWorld({ etcd: named, statefulSet: { volumes: [caVolume()] } });
    expect(await run("execute", taskOf(), objects)).toEqual(created);
    expect(objects.reads.at(-1)).toEqual({ resource: Resources.secret, namespace, name: caSecretName });
  });

  it("the fallback secret missing → failed 'Failed to get etcdbr CA secret' naming it", async () => {
    const objects = tlsWorld({ etcd: named, statefulSet: undefined, secret: undefined });
    expect(await run("execute", taskOf(), objects)).toEqual({
      kind: "failed",
      description: "Failed to get etcdbr CA secret",
      error: {
        code: "ERR_GET_CA_SECRET",
        message: "failed to get etcdbr CA secret ns/ca-from-ref",
        cause: 'secrets "ca-from-ref" not found',
      },
    });
  });
});
