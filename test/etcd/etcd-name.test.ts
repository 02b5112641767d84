/**
 * Security finding 2 (issue 16): a name a task names is an object name, checked before any request,
 * and the admission group is the Etcd's identity. The real-apiserver side is
 * test/integration/etcd-name.test.ts.
 */
import { Effect, Layer, Result } from "effect";
import { describe, expect, it } from "vitest";
import { decodeEtcd } from "../../src/etcd/api/etcd.ts";
import { decodeEtcdOpsTaskManifest } from "../../src/etcd/api/etcdopstask.ts";
import { etcdOpsTaskKind } from "../../src/etcd/api/etcdopstask-kind.ts";
import { nodeBackupRestoreHttpLayer } from "../../src/etcd/backup-restore-http-node.ts";
import { makeKubernetesObjectReader } from "../../src/etcd/object-reader-kubernetes.ts";
import { makeOnDemandSnapshotHandler } from "../../src/etcd/on-demand-snapshot/handler.ts";
import { ObjectReader, ReadError } from "../../src/etcd/services.ts";
import { apiPath } from "../../src/kube/api-path.ts";
import type { ApiRequest, KubeClient } from "../../src/kube/kube-client.ts";
import { etcdObject, namespace, run, taskOf, world } from "./support/fixtures.ts";
import { memberContext } from "./support/member-context.ts";

const invalidNames = [
  "e005/status",
  "../etcds/e006",
  "e007.",
  "E005",
  "e005%2Fstatus",
  "..",
  "a".repeat(254),
];

describe("etcdName is checked as an object name before any read", () => {
  it.each(invalidNames)(
    "%j → Rejected (ERR_GET_ETCD), the cause naming spec.etcdName, nothing read",
    async (name) => {
      const objects = world([["etcd", etcdObject()]]);
      const outcome = await run("admit", taskOf({ etcdName: name }), objects);
      expect(outcome).toMatchObject({
        kind: "failed",
        description: "Etcd object not found",
        error: { code: "ERR_GET_ETCD", message: "etcd object not found" },
      });
      const cause = outcome.kind === "failed" ? outcome.error.cause : "";
      expect(cause).toMatch(/^spec\.etcdName: ".*" is not a valid name: expected a DNS-1123 subdomain/);
      expect(cause.length).toBeLessThan(400);
      expect(objects.reads).toEqual([]);
    },
  );

  it("an Etcd the reader answers with under another name is not taken for the one asked", async () => {
    const wire = etcdObject();
    const other = decodeEtcd({ ...wire, metadata: { ...(wire.metadata as object), name: "someone-else" } });
    if (Result.isFailure(other)) throw new Error(other.failure.message);
    const reader = ObjectReader.of({
      getEtcd: () => Effect.succeed(other.success),
      getStatefulSet: (ns, name) =>
        Effect.fail(
          new ReadError({
            reason: "NotFound",
            resource: "statefulsets.apps",
            namespace: ns,
            name,
            message: "",
          }),
        ),
      getSecret: (ns, name) =>
        Effect.fail(
          new ReadError({ reason: "NotFound", resource: "secrets", namespace: ns, name, message: "" }),
        ),
    });
    const outcome = await Effect.runPromise(
      makeOnDemandSnapshotHandler()
        .admit(taskOf(), memberContext("onDemandSnapshot", taskOf(), { phase: "admit" }))
        .pipe(
          Effect.provide(
            Layer.mergeAll(Layer.succeed(ObjectReader, reader), nodeBackupRestoreHttpLayer({ resolve: [] })),
          ),
        ),
    );
    expect(outcome).toMatchObject({ kind: "failed", error: { code: "ERR_GET_ETCD" } });
    expect(outcome.kind === "failed" ? outcome.error.cause : "").toContain(
      `asked for ${namespace}/test-etcd, the API returned ${namespace}/someone-else`,
    );
  });
});

describe("the Kubernetes ObjectReader sends no request for a name that is no object name", () => {
  const recording = () => {
    const requests: ApiRequest[] = [];
    const client: KubeClient = {
      _tag: "KubeClient",
      server: "https://127.0.0.1:1",
      request: (request) => {
        requests.push(request);
        return Promise.resolve({ status: 404, body: { message: "not found" } });
      },
      watch: () => Promise.reject(new Error("no watch")),
      close: () => undefined,
    };
    return { client, requests };
  };

  it.each(["e005/status", "..", "E005", "x".repeat(300)])(
    "%j: NotFound saying why, no request",
    async (name) => {
      const { client, requests } = recording();
      const reader = makeKubernetesObjectReader({ kubeConfig: client });
      const reads: ReadonlyArray<Effect.Effect<ReadError, unknown>> = [
        Effect.flip(reader.getEtcd("ns", name)),
        Effect.flip(reader.getSecret("ns", name)),
        Effect.flip(reader.getStatefulSet("ns", name)),
      ];
      for (const read of reads) {
        const error = await Effect.runPromise(read);
        expect(error.reason).toBe("NotFound");
        expect(error.message).toContain("is not a valid name");
        expect(error.message.length).toBeLessThan(400);
      }
      expect(requests).toEqual([]);
    },
  );

  it("a namespace that is no namespace name: NotFound, no request", async () => {
    const { client, requests } = recording();
    const reader = makeKubernetesObjectReader({ kubeConfig: client });
    const error = await Effect.runPromise(Effect.flip(reader.getSecret("ns/../other", "ca")));
    expect(error.message).toContain("the namespace is not a valid name");
    expect(requests).toEqual([]);
  });
});

describe("API paths escape every segment", () => {
  const etcds = { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcds" };
  it("names, namespaces and subresources cannot add or climb segments", () => {
    expect(apiPath(etcds, "ns", "e005/status")).toBe(
      "/apis/druid.gardener.cloud/v1alpha1/namespaces/ns/etcds/e005%2Fstatus",
    );
    expect(apiPath(etcds, "..", "..")).toBe(
      "/apis/druid.gardener.cloud/v1alpha1/namespaces/%2E%2E/etcds/%2E%2E",
    );
    expect(apiPath(etcds, "ns", "x", "status/../../y")).toBe(
      "/apis/druid.gardener.cloud/v1alpha1/namespaces/ns/etcds/x/status%2F..%2F..%2Fy",
    );
  });
});

describe("the admission group is the Etcd's identity", () => {
  const factsOf = (etcdName: string) => {
    const task = taskOf({ etcdName });
    return etcdOpsTaskKind.facts(task);
  };

  it("a valid name is the group; a string that is no name joins no group (it names no Etcd)", () => {
    expect(factsOf("e005").group).toBe("e005");
    expect(factsOf("").group).toBe("");
    for (const name of invalidNames) expect(factsOf(name).group).toBeUndefined();
  });
});

describe("a manifest a user writes is refused at decode time", () => {
  it.each(invalidNames)("etcdName %j: the error names spec.etcdName", (etcdName) => {
    const decoded = decodeEtcdOpsTaskManifest({
      apiVersion: "druid.gardener.cloud/v1alpha1",
      kind: "EtcdOpsTask",
      metadata: { name: "t", namespace: "ns" },
      spec: { etcdName, config: { onDemandSnapshot: { type: "full" } } },
    });
    expect(Result.isFailure(decoded)).toBe(true);
    if (Result.isFailure(decoded))
      expect(decoded.failure.errors.join("\n")).toMatch(/^spec\.etcdName: expected/m);
  });
});
