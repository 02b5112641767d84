/**
 * Names are checked once, in the client floor: every path the client sends has a valid namespace (a
 * DNS-1123 label) and object name (a DNS-1123 subdomain; a path segment name for RBAC objects), so
 * that a name taken from a task cannot reach another path ("e005/status" the status subresource).
 * A bad one is refused with an error naming the field and the value, and no request is sent: through
 * the raw client, and through a handler's `objects.get`.
 */
import { createServer, type Server } from "node:http";
import * as Context from "effect/Context";
import * as Effect from "effect/Effect";
import { afterEach, describe, expect, it } from "vitest";
import { capText, MaxEchoLength } from "../../src/api/text-cap.ts";
import { EventRecorder } from "../../src/interpreters/kubernetes/event-recorder.ts";
import { apiPath, apiPathProblem } from "../../src/kube/api-path.ts";
import { toKubeError } from "../../src/kube/errors.ts";
import { type KubeClient, makeKubeClient } from "../../src/kube/kube-client.ts";
import { InvalidPathName } from "../../src/kube/names.ts";
import { kubeHandlerContext, kubeObjectGetter } from "../../src/runtime/handler-context-kube.ts";

const etcds = { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcds" };
const secrets = { group: "", version: "v1", plural: "secrets" };
const roles = { group: "rbac.authorization.k8s.io", version: "v1", plural: "clusterroles" };
const badNames = ["e005/status", "..", ".", "a%2Fb", "", "E005", "x".repeat(254), "a b", "a\u001b[2Jb"];

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
});

/** An apiserver stand-in that answers every request with an empty object and counts them. */
const serve = async (): Promise<{ client: KubeClient; requests: string[] }> => {
  const requests: string[] = [];
  server = createServer((request, response) => {
    requests.push(request.url ?? "");
    response.writeHead(200, { "content-type": "application/json" }).end("{}");
  });
  await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  const client = makeKubeClient({
    server: `http://127.0.0.1:${port}`,
    credentials: async () => ({ headers: {} }),
  });
  return { client, requests };
};

const refusal = async (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    () => undefined,
    (error: unknown) => error,
  );

describe("the paths the client sends", () => {
  it("are refused for a bad name or namespace, naming the field and the value", () => {
    for (const name of badNames) {
      expect(apiPathProblem(apiPath(etcds, "ns", name))).toMatchObject({
        _tag: "InvalidPathName",
        field: "name",
        value: capText(name, MaxEchoLength),
      });
      expect(apiPathProblem(apiPath(etcds, name, "e005"))).toMatchObject({ field: "namespace" });
    }
    // A namespace is a label: no dots, at most 63 characters.
    expect(apiPathProblem(apiPath(secrets, "a.b", "s"))).toMatchObject({ field: "namespace", value: "a.b" });
    expect(apiPathProblem(apiPath(secrets, "n".repeat(64), "s"))).toMatchObject({ field: "namespace" });
    const problem = apiPathProblem(apiPath(etcds, "ns", "e005/status"));
    expect(problem?.message).toBe(
      "name \"e005/status\" cannot go into an API path: expected a DNS-1123 subdomain: at most 253 lower-case letters, digits, '-' and '.', starting and ending with a letter or digit",
    );
    // Hand-built paths: dot segments, escapes and empty segments anywhere up to the subresource.
    expect(apiPathProblem("/api/v1/namespaces/ns/secrets/../configmaps")).toMatchObject({ field: "name" });
    expect(
      apiPathProblem("/apis/druid.gardener.cloud/v1alpha1/namespaces/ns/etcds/e005/%2E%2E"),
    ).toMatchObject({
      field: "subresource",
    });
    expect(apiPathProblem("/apis/druid.gardener.cloud/../v1/etcds")).toMatchObject({ field: "path segment" });
    expect(apiPathProblem("/api/v1/namespaces/ns/secrets/a%ZZ")).toMatchObject({
      field: "name",
      value: "a%ZZ",
    });
    // RBAC names may hold ":" but stay one segment.
    expect(apiPathProblem(apiPath(roles, undefined, "a/b"))).toMatchObject({ field: "name", value: "a/b" });
  });

  it("pass for valid names, collections, subresources, RBAC names and paths outside the API", () => {
    for (const path of [
      apiPath(etcds),
      apiPath(etcds, "ns"),
      apiPath(etcds, "ns", "etcd-main"),
      apiPath(etcds, "ns", "etcd-main", "status"),
      apiPath(secrets, "kube-system", "etcd-main.backup-1"),
      apiPath(secrets, undefined, "x".repeat(253)),
      apiPath({ group: "", version: "v1", plural: "namespaces" }, undefined, "kube-system"),
      "/api/v1/namespaces/kube-system",
      "/api/v1/namespaces/kube-system/status",
      apiPath(roles, undefined, "system:controller:job-controller"),
      "/version",
      "/apis",
    ])
      expect(apiPathProblem(path), path).toBeUndefined();
  });

  it("a bad name is Invalid (not retried), not Transient", () => {
    const problem = apiPathProblem(apiPath(etcds, "ns", ".."));
    expect(problem).toBeInstanceOf(InvalidPathName);
    expect(toKubeError(problem)).toMatchObject({ reason: "Invalid", code: 0 });
  });
});

describe("a bad name sends no request", () => {
  it("through the raw client: request and watch reject with InvalidPathName", async () => {
    const { client, requests } = await serve();
    for (const name of badNames) {
      const error = await refusal(client.request({ method: "GET", path: apiPath(etcds, "ns", name) }));
      expect(error).toBeInstanceOf(InvalidPathName);
      expect(error).toMatchObject({ field: "name", value: capText(name, MaxEchoLength) });
      const watched = await refusal(
        client.watch(
          apiPath(etcds, name),
          {},
          () => {},
          () => {},
        ),
      );
      expect(watched).toMatchObject({ _tag: "InvalidPathName", field: "namespace" });
    }
    expect(requests).toEqual([]);
    // The stand-in answers a valid one.
    await client.request({ method: "GET", path: apiPath(etcds, "ns", "e005") });
    expect(requests).toEqual(["/apis/druid.gardener.cloud/v1alpha1/namespaces/ns/etcds/e005"]);
  });

  it("through a handler's HandlerContext.objects.get: a clear error, no request", async () => {
    const { client, requests } = await serve();
    const recorder = EventRecorder.of({ record: () => Effect.void });
    const context = kubeHandlerContext(
      {
        phase: "execute",
        attempt: 1,
        reconcileID: "r-1",
        subject: {
          namespace: "ns",
          name: "t",
          uid: "u-1",
          resourceVersion: "1",
        },
        client,
        objects: kubeObjectGetter(client),
        signal: new AbortController().signal,
      },
      Context.make(EventRecorder, recorder),
      recorder,
    );
    for (const name of ["e005/status", "..", "a%2Fb", ""]) {
      const error = await refusal(context.objects.get(etcds, "ns", name));
      expect(error).toBeInstanceOf(Error);
      expect(String((error as Error).message)).toContain(
        `name ${JSON.stringify(name)} cannot go into an API path`,
      );
      expect((error as Error).cause).toBeInstanceOf(InvalidPathName);
    }
    expect(requests).toEqual([]);
    expect(await context.objects.get(etcds, "ns", "e005")).toEqual({});
    expect(requests).toHaveLength(1);
  });
});
