/**
 * Both `ObjectReader`s: the in-memory one, and the client-node one against a fake apiserver on
 * 127.0.0.1 (plain HTTP, canned JSON). NotFound is told apart from other failures, the API's message is
 * kept for the cause, and objects are decoded (base64 secret data included).
 */
import { createServer, type Server } from "node:http";
import { KubeConfig } from "@kubernetes/client-node";
import { Effect, Exit } from "effect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeKubernetesObjectReader } from "../../src/etcd/object-reader-kubernetes.ts";
import { MemoryObjects, makeMemoryObjectReader } from "../../src/etcd/object-reader-memory.ts";
import { type ObjectReaderShape, ReadError, type Resource, Resources } from "../../src/etcd/services.ts";
import {
  caSecretName,
  etcdName,
  etcdObject,
  etcdUid,
  namespace,
  secretObject,
  statefulSetObject,
} from "./support/fixtures.ts";

const run = <A>(effect: Effect.Effect<A, ReadError>) => Effect.runPromise(Effect.exit(effect));
type Read = (reader: ObjectReaderShape) => Effect.Effect<unknown, ReadError>;
const failureOf = <A>(exit: Exit.Exit<A, ReadError>): ReadError | undefined =>
  Exit.isFailure(exit)
    ? exit.cause.reasons.flatMap((r) => (r._tag === "Fail" ? [r.error] : []))[0]
    : undefined;

/** The same expectations for both readers. */
const readerContract = (
  reader: () => ObjectReaderShape,
  notFound: (resource: string, name: string) => string,
  forbidden: { readonly name: string; readonly message: string },
) => {
  it("decodes an Etcd, a StatefulSet and a Secret (data base64-decoded)", async () => {
    const etcd = await run(reader().getEtcd(namespace, etcdName));
    expect(Exit.isSuccess(etcd) && etcd.value.metadata.uid).toBe(etcdUid);
    const sts = await run(reader().getStatefulSet(namespace, etcdName));
    expect(Exit.isSuccess(sts) && sts.value.metadata.ownerReferences?.[0]).toMatchObject({
      uid: etcdUid,
      controller: true,
    });
    expect(Exit.isSuccess(sts) && sts.value.spec?.template?.spec?.volumes).toEqual([
      { name: "backup-restore-ca", secret: { secretName: caSecretName } },
    ]);
    const secret = await run(reader().getSecret(namespace, caSecretName));
    const data = Exit.isSuccess(secret) ? secret.value.data?.["ca.crt"] : undefined;
    expect(data === undefined ? undefined : Buffer.from(data).toString("utf8")).toBe("PEM DATA");
  });

  const missing: ReadonlyArray<readonly [string, Resource, Read]> = [
    ["etcd", Resources.etcd, (r) => r.getEtcd(namespace, "missing")],
    ["statefulSet", Resources.statefulSet, (r) => r.getStatefulSet(namespace, "missing")],
    ["secret", Resources.secret, (r) => r.getSecret(namespace, "missing")],
  ];
  it.each(missing)("a missing %s is NotFound with the apiserver's message", async (_, resource, read) => {
    expect(failureOf(await run(read(reader())))).toEqual(
      new ReadError({
        reason: "NotFound",
        resource,
        namespace,
        name: "missing",
        message: notFound(resource, "missing"),
      }),
    );
  });

  it("an empty name is NotFound", async () => {
    expect(failureOf(await run(reader().getEtcd(namespace, "")))).toMatchObject({
      reason: "NotFound",
      name: "",
    });
  });

  it("another API error is Failed, keeping its message", async () => {
    expect(failureOf(await run(reader().getSecret(namespace, forbidden.name)))).toEqual(
      new ReadError({
        reason: "Failed",
        resource: Resources.secret,
        namespace,
        name: forbidden.name,
        message: forbidden.message,
      }),
    );
  });

  it("an object that does not decode is Failed", async () => {
    expect(failureOf(await run(reader().getEtcd(namespace, "broken")))).toMatchObject({
      reason: "Failed",
      resource: Resources.etcd,
      message: expect.stringContaining("spec"),
    });
  });
};

const brokenEtcd = {
  apiVersion: "druid.gardener.cloud/v1alpha1",
  kind: "Etcd",
  metadata: { name: "broken", namespace, uid: "u" },
};

describe("in-memory ObjectReader", () => {
  const objects = new MemoryObjects();
  objects.put(Resources.etcd, etcdObject());
  objects.put(Resources.etcd, brokenEtcd);
  objects.put(Resources.statefulSet, statefulSetObject());
  objects.put(Resources.secret, secretObject(caSecretName, { "ca.crt": "PEM DATA" }));
  objects.put(Resources.secret, secretObject("locked", {}));
  objects.fail(Resources.secret, namespace, "locked", 'secrets "locked" is forbidden');

  readerContract(
    () => makeMemoryObjectReader(objects),
    (resource, name) => `${resource} "${name}" not found`,
    { name: "locked", message: 'secrets "locked" is forbidden' },
  );

  it("put needs metadata.namespace and metadata.name; heal lifts an injected failure", async () => {
    expect(objects.put(Resources.secret, { metadata: { name: "x" } })).toBe(false);
    objects.heal(Resources.secret, namespace, "locked");
    expect(Exit.isSuccess(await run(makeMemoryObjectReader(objects).getSecret(namespace, "locked")))).toBe(
      true,
    );
    objects.fail(Resources.secret, namespace, "locked", 'secrets "locked" is forbidden');
  });
});

describe("client-node ObjectReader against a fake apiserver", () => {
  let server: Server;
  let kubeConfig: KubeConfig;
  const status = (code: number, reason: string, message: string) => ({
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message,
    reason,
    code,
  });
  const routes = new Map<string, readonly [number, unknown]>([
    [`/apis/druid.gardener.cloud/v1alpha1/namespaces/${namespace}/etcds/${etcdName}`, [200, etcdObject()]],
    [`/apis/druid.gardener.cloud/v1alpha1/namespaces/${namespace}/etcds/broken`, [200, brokenEtcd]],
    [`/apis/apps/v1/namespaces/${namespace}/statefulsets/${etcdName}`, [200, statefulSetObject()]],
    [
      `/api/v1/namespaces/${namespace}/secrets/${caSecretName}`,
      [200, secretObject(caSecretName, { "ca.crt": "PEM DATA" })],
    ],
    [
      `/api/v1/namespaces/${namespace}/secrets/locked`,
      [
        403,
        status(403, "Forbidden", 'secrets "locked" is forbidden: User "x" cannot get resource "secrets"'),
      ],
    ],
  ]);
  const notFound = (resource: string, name: string) => `${resource} "${name}" not found`;

  beforeAll(async () => {
    server = createServer((req, res) => {
      const path = (req.url ?? "").split("?")[0] ?? "";
      const route = routes.get(path);
      const kind = path.split("/").at(-2) ?? "";
      const resource =
        kind === "etcds" ? Resources.etcd : kind === "statefulsets" ? Resources.statefulSet : kind;
      const [code, body] = route ?? [
        404,
        status(404, "NotFound", notFound(resource, path.split("/").at(-1) ?? "")),
      ];
      res.writeHead(code, { "content-type": "application/json" }).end(JSON.stringify(body));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
    const address = server.address();
    if (address === null || typeof address === "string") throw new Error("not listening");
    kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [{ name: "fake", server: `http://127.0.0.1:${address.port}`, skipTLSVerify: true }],
      users: [{ name: "nobody" }],
      contexts: [{ name: "fake", cluster: "fake", user: "nobody" }],
      currentContext: "fake",
    });
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  readerContract(() => makeKubernetesObjectReader({ kubeConfig, requestTimeout: "5 seconds" }), notFound, {
    name: "locked",
    message: 'secrets "locked" is forbidden: User "x" cannot get resource "secrets"',
  });
});
