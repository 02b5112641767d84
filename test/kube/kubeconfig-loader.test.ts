import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { stringify } from "yaml";
import {
  inClusterSource,
  KubeconfigError,
  kubeconfigSource,
  loadKubeClient,
  loadKubeTarget,
} from "../../src/kube/kubeconfig-loader.ts";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "opstask-kubeconfig-"));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
  vi.useRealTimers();
  vi.unstubAllEnvs();
});

const b64 = (text: string) => Buffer.from(text).toString("base64");

const kubeconfig = (cluster: Record<string, unknown>, user: Record<string, unknown>, extra = {}) =>
  stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "c", cluster: { server: "https://127.0.0.1:6443", ...cluster } }],
    users: [{ name: "u", user }],
    contexts: [{ name: "ctx", context: { cluster: "c", user: "u" } }],
    "current-context": "ctx",
    ...extra,
  });

const sourceOf = async (text: string) => {
  const source = await kubeconfigSource(text, join(dir, "config"));
  if (source === undefined) throw new Error("expected opstask to read this kubeconfig itself");
  return source;
};

describe("kubeconfigSource", () => {
  it("reads a bearer token and inline CA data", async () => {
    const source = await sourceOf(
      kubeconfig({ "certificate-authority-data": b64("CA PEM") }, { token: "t0k" }),
    );
    expect(source.server).toBe("https://127.0.0.1:6443");
    const credentials = await source.credentials();
    expect(credentials.ca?.toString()).toBe("CA PEM");
    expect(credentials.headers).toEqual({ Authorization: "Bearer t0k" });
    expect(credentials.rejectUnauthorized).toBeUndefined();
  });

  it("reads CA, client certificate, key and token files relative to the kubeconfig", async () => {
    mkdirSync(join(dir, "pki"));
    writeFileSync(join(dir, "pki", "ca.crt"), "CA FILE");
    writeFileSync(join(dir, "pki", "client.crt"), "CERT FILE");
    writeFileSync(join(dir, "pki", "client.key"), "KEY FILE");
    writeFileSync(join(dir, "token"), "file-token\n");
    const source = await sourceOf(
      kubeconfig(
        { "certificate-authority": "pki/ca.crt" },
        {
          "client-certificate": "pki/client.crt",
          "client-key": join(dir, "pki", "client.key"),
          tokenFile: "token",
        },
      ),
    );
    const credentials = await source.credentials();
    expect(credentials.ca?.toString()).toBe("CA FILE");
    expect(credentials.cert?.toString()).toBe("CERT FILE");
    expect(credentials.key?.toString()).toBe("KEY FILE");
    expect(credentials.headers.Authorization).toBe("Bearer file-token");
  });

  it("honours insecure-skip-tls-verify, tls-server-name, basic auth and impersonation", async () => {
    const source = await sourceOf(
      kubeconfig(
        { "insecure-skip-tls-verify": true, "tls-server-name": "api.internal" },
        { username: "ann", password: "s3cret", as: "bob" },
      ),
    );
    const credentials = await source.credentials();
    expect(credentials.rejectUnauthorized).toBe(false);
    expect(credentials.servername).toBe("api.internal");
    expect(credentials.headers).toEqual({
      Authorization: `Basic ${b64("ann:s3cret")}`,
      "Impersonate-User": "bob",
    });
  });

  it("leaves exec plugins and auth providers to client-node", async () => {
    const path = join(dir, "config");
    expect(await kubeconfigSource(kubeconfig({}, { exec: { command: "aws" } }), path)).toBeUndefined();
    expect(
      await kubeconfigSource(kubeconfig({}, { "auth-provider": { name: "oidc" } }), path),
    ).toBeUndefined();
  });

  it("names the field that is wrong", async () => {
    const path = join(dir, "config");
    const error = async (text: string) => {
      try {
        await kubeconfigSource(text, path);
      } catch (thrown) {
        expect(thrown).toBeInstanceOf(KubeconfigError);
        return (thrown as Error).message;
      }
      throw new Error("expected a KubeconfigError");
    };
    expect(await error(kubeconfig({}, {}, { "current-context": "" }))).toMatch(
      /current-context is not set.*use-context/,
    );
    expect(await error(kubeconfig({}, {}, { "current-context": "other" }))).toMatch(
      /current-context "other" is not in contexts/,
    );
    expect(await error(kubeconfig({ server: "" }, {}))).toMatch(/clusters\[c\]\.cluster\.server is empty/);
    expect(await error(kubeconfig({}, {}, { users: [] }))).toMatch(
      /contexts\[ctx\]\.user "u" is not in users/,
    );
    expect(await error("- a list")).toMatch(/not a kubeconfig/);
  });
});

describe("inClusterSource", () => {
  it("uses the service address, the CA and the token, re-reading the token after a minute", async () => {
    writeFileSync(join(dir, "ca.crt"), "SA CA");
    writeFileSync(join(dir, "token"), "first");
    vi.stubEnv("KUBERNETES_SERVICE_HOST", "10.0.0.1");
    vi.stubEnv("KUBERNETES_SERVICE_PORT", "443");
    vi.useFakeTimers({ toFake: ["Date"] });
    const source = inClusterSource(dir);
    expect(source.server).toBe("https://10.0.0.1:443");
    expect((await source.credentials()).ca?.toString()).toBe("SA CA");
    writeFileSync(join(dir, "token"), "rotated");
    expect((await source.credentials()).headers.Authorization).toBe("Bearer first");
    vi.advanceTimersByTime(60_000);
    expect((await source.credentials()).headers.Authorization).toBe("Bearer rotated");
  });

  it("brackets an IPv6 service address", () => {
    writeFileSync(join(dir, "ca.crt"), "SA CA");
    writeFileSync(join(dir, "token"), "t");
    vi.stubEnv("KUBERNETES_SERVICE_HOST", "fd00::1");
    vi.stubEnv("KUBERNETES_SERVICE_PORT", "6443");
    expect(inClusterSource(dir).server).toBe("https://[fd00::1]:6443");
  });
});

describe("loadKubeClient", () => {
  it("says which file cannot be read and how to name another", async () => {
    await expect(loadKubeClient(join(dir, "missing"))).rejects.toThrow(
      /kubeconfig .*missing cannot be read.*--kubeconfig PATH or set KUBECONFIG/,
    );
  });

  it("hands a kubeconfig with an exec plugin to client-node, which authenticates with it", async () => {
    const seen: Array<string | undefined> = [];
    const server = createServer((request, response) => {
      seen.push(request.headers.authorization);
      response
        .writeHead(200, { "Content-Type": "application/json" })
        .end('{"kind":"NamespaceList","items":[]}');
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const address = server.address();
    const port = typeof address === "object" && address !== null ? address.port : 0;
    const path = join(dir, "config");
    writeFileSync(
      path,
      kubeconfig(
        { server: `http://127.0.0.1:${port}`, "insecure-skip-tls-verify": true },
        {
          exec: {
            apiVersion: "client.authentication.k8s.io/v1",
            command: process.execPath,
            args: [
              "-e",
              'console.log(JSON.stringify({apiVersion:"client.authentication.k8s.io/v1",kind:"ExecCredential",status:{token:"from-exec"}}))',
            ],
            interactiveMode: "Never",
          },
        },
      ),
    );
    const client = await loadKubeClient(path);
    try {
      const response = await client.request({ method: "GET", path: "/api/v1/namespaces" });
      expect(response.body).toEqual({ kind: "NamespaceList", items: [] });
      expect(seen).toEqual(["Bearer from-exec"]);
    } finally {
      client.close();
      server.close();
    }
  });
});

describe("loadKubeClient with several files in $KUBECONFIG", () => {
  it("merges them through client-node, as kubectl does", async () => {
    const first = join(dir, "first");
    const second = join(dir, "second");
    writeFileSync(first, kubeconfig({ server: "https://first.example:6443" }, { token: "a" }));
    writeFileSync(
      second,
      stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [{ name: "other", cluster: { server: "https://second.example:6443" } }],
        users: [],
        contexts: [],
      }),
    );
    vi.stubEnv("KUBERNETES_SERVICE_HOST", undefined);
    vi.stubEnv("KUBECONFIG", `${first}:${second}`);
    const client = await loadKubeClient();
    expect(client.server).toBe("https://first.example:6443");
  });

  it("names the files when the merged config has no usable cluster", async () => {
    const only = join(dir, "empty");
    writeFileSync(
      only,
      stringify({ apiVersion: "v1", kind: "Config", clusters: [], users: [], contexts: [] }),
    );
    vi.stubEnv("KUBERNETES_SERVICE_HOST", undefined);
    vi.stubEnv("KUBECONFIG", `${only}:${only}`);
    await expect(loadKubeClient()).rejects.toThrow(/\$KUBECONFIG \(.*empty:.*empty\): .*no current cluster/);
  });
});

describe("loadKubeTarget: --context, the context's namespace, the field manager", () => {
  const twoContexts = (extra: object = {}) =>
    stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [
        { name: "a", cluster: { server: "https://a.example:6443" } },
        { name: "b", cluster: { server: "http://127.0.0.1:1" } },
      ],
      users: [{ name: "u", user: { token: "t" } }],
      contexts: [
        { name: "first", context: { cluster: "a", user: "u", namespace: "team-a" } },
        { name: "second", context: { cluster: "b", user: "u" } },
      ],
      "current-context": "first",
      ...extra,
    });

  it("uses the current context and its namespace, or the one --context names", async () => {
    const path = join(dir, "config");
    writeFileSync(path, twoContexts());
    const current = await loadKubeTarget(path);
    expect({ server: current.client.server, namespace: current.namespace }).toEqual({
      server: "https://a.example:6443",
      namespace: "team-a",
    });
    const second = await loadKubeTarget(path, { context: "second" });
    expect({ server: second.client.server, namespace: second.namespace }).toEqual({
      server: "http://127.0.0.1:1",
      namespace: undefined,
    });
    await expect(loadKubeTarget(path, { context: "third" })).rejects.toThrow(
      `${path}: --context "third" is not in contexts[]`,
    );
  });

  it("sends the field manager on writes only, unless a request names its own", async () => {
    const seen: string[] = [];
    const server = createServer((request, response) => {
      seen.push(`${request.method} ${request.url}`);
      response.writeHead(200, { "Content-Type": "application/json" }).end("{}");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const address = server.address();
    const port = typeof address === "object" && address !== null ? address.port : 0;
    const path = join(dir, "config");
    writeFileSync(path, kubeconfig({ server: `http://127.0.0.1:${port}` }, { token: "t" }));
    const client = await loadKubeClient(path, { fieldManager: "opstask-cli" });
    const controller = await loadKubeClient(path);
    try {
      await client.request({ method: "GET", path: "/x" });
      await client.request({ method: "POST", path: "/x", body: {} });
      await client.request({ method: "PATCH", path: "/x", query: { dryRun: "All" }, body: {} });
      await client.request({ method: "PUT", path: "/x", query: { fieldManager: "mine" }, body: {} });
      await client.request({ method: "DELETE", path: "/x" });
      await controller.request({ method: "POST", path: "/y", body: {} });
      expect(seen).toEqual([
        "GET /x",
        "POST /x?fieldManager=opstask-cli",
        "PATCH /x?dryRun=All&fieldManager=opstask-cli",
        "PUT /x?fieldManager=mine",
        "DELETE /x",
        "POST /y?fieldManager=opstask",
      ]);
    } finally {
      client.close();
      controller.close();
      server.close();
    }
  });
});
