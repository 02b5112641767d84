/**
 * Security finding 10 (issue 16): a kubeconfig's proxy-url is refused with an error naming it (it was
 * silently ignored), and a kubeconfig that is not valid YAML is reported by line and column, without
 * the offending line (it may be key material) and without a stack trace.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { stringify } from "yaml";
import { KubeconfigError, loadKubeClient } from "../../src/kube/kubeconfig-loader.ts";
import { repoRoot } from "../support/cluster.ts";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "opstask-kubeconfig-safety-"));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
  vi.unstubAllEnvs();
});

const secret = "S3CRETKEYMATERIALxyz";
const write = (name: string, text: string): string => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};
const withProxy = (user: Record<string, unknown>) =>
  stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [
      { name: "c", cluster: { server: "https://127.0.0.1:6443", "proxy-url": "http://proxy:3128" } },
    ],
    users: [{ name: "u", user }],
    contexts: [{ name: "ctx", context: { cluster: "c", user: "u" } }],
    "current-context": "ctx",
  });
const broken = [
  "apiVersion: v1",
  "kind: Config",
  "users:",
  "- name: u",
  "  user:",
  `    client-key-data: ${secret}`,
  `    token: [${secret}, "unclosed`,
  "",
].join("\n");

const rejection = async (load: Promise<unknown>): Promise<KubeconfigError> => {
  const error = await load.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(KubeconfigError);
  return error as KubeconfigError;
};

describe("proxy-url is refused, naming the field", () => {
  it("in a kubeconfig opstask reads itself", async () => {
    const error = await rejection(loadKubeClient(write("config", withProxy({ token: "t" }))));
    expect(error.message).toContain("clusters[c].cluster.proxy-url is set");
    expect(error.message).toContain("remove proxy-url");
  });

  it("in a kubeconfig handed to client-node (exec credentials)", async () => {
    const error = await rejection(
      loadKubeClient(
        write(
          "config",
          withProxy({ exec: { apiVersion: "client.authentication.k8s.io/v1", command: "true" } }),
        ),
      ),
    );
    expect(error.message).toContain("proxy-url is set");
  });

  it("in several kubeconfig files merged by client-node", async () => {
    const first = write("a", withProxy({ token: "t" }));
    const second = write("b", stringify({ apiVersion: "v1", kind: "Config" }));
    vi.stubEnv("KUBERNETES_SERVICE_HOST", undefined as unknown as string);
    delete process.env.KUBERNETES_SERVICE_HOST;
    vi.stubEnv("KUBECONFIG", `${first}:${second}`);
    const error = await rejection(loadKubeClient());
    expect(error.message).toContain("proxy-url is set");
  });
});

describe("a YAML error names the line, never shows it", () => {
  it("one file: line and column, no key material", async () => {
    const error = await rejection(loadKubeClient(write("config", broken)));
    expect(error.message).toMatch(/not valid YAML at line \d+, column \d+/);
    expect(error.message).not.toContain(secret);
    expect(error.message).not.toContain("unclosed");
  });

  it("several files (client-node's parser): no key material", async () => {
    const good = write("good", stringify({ apiVersion: "v1", kind: "Config" }));
    const bad = write("bad", broken);
    delete process.env.KUBERNETES_SERVICE_HOST;
    vi.stubEnv("KUBECONFIG", `${good}:${bad}`);
    const error = await rejection(loadKubeClient());
    expect(error.message).toContain("not valid YAML");
    expect(error.message).not.toContain(secret);
  });

  it("`opstask controller` prints one line, no stack, no key material, and exits 2", async () => {
    const path = write("config", broken);
    const { code, stderr } = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = execFile(
        process.execPath,
        [join(repoRoot, "src/cli/main.ts"), "controller", "--kubeconfig", path],
        { timeout: 60_000, env: { ...process.env, KUBERNETES_SERVICE_HOST: "" } },
        (_error, _stdout, stderr) => resolve({ code: child.exitCode, stderr }),
      );
    });
    expect(code).toBe(2);
    expect(stderr).not.toContain(secret);
    expect(stderr).not.toMatch(/\n\s+at /);
    expect(stderr.trim().split("\n")).toHaveLength(1);
    expect(stderr).toContain("not valid YAML at line");
  }, 90_000);
});
