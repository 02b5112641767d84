/**
 * The task CLI's kubectl conventions against a real kube-apiserver: `get [NAME…]` with each output
 * format, label selectors, `delete`, `--context` and the context's namespace, exit codes (0 done, 1 an
 * API error, 2 a bad argument), `--help` on every command, and one Kubernetes client for the CLI and
 * the controller: both work through a kubeconfig whose server is plain http://.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CustomObjectsApi, type KubeConfig, PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, parseAllDocuments, stringify } from "yaml";
import { completionFlags } from "../../src/cli/completion-command.ts";
import { makeOpstaskCommands } from "../../src/cli/task/index.ts";
import { loadKubeClient } from "../../src/kube/kubeconfig-loader.ts";
import { createTestNamespace, repoRoot, useControlPlane } from "../support/cluster.ts";
import { type RunningController, scriptedHandlers, startController } from "../support/controller.ts";
import { captureTaskIo } from "../support/task-io.ts";
import { waitFor } from "../support/wait.ts";

const crds = readdirSync(join(repoRoot, "deploy", "crds"))
  .filter((file) => file.endsWith(".yaml"))
  .map((file) => join(repoRoot, "deploy", "crds", file));
const cluster = useControlPlane({ crds });
const gvr = { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcdopstasks" } as const;

interface Run {
  readonly code: number | undefined;
  readonly out: string;
  readonly err: string;
}

const run = async (command: string, args: ReadonlyArray<string>, signal?: AbortSignal): Promise<Run> => {
  const { io, captured } = captureTaskIo(signal === undefined ? {} : { signal });
  const code = await makeOpstaskCommands(() => io)[command]?.(args);
  return { code, ...captured };
};

/** `opstask …` as a process (the commands outside the task CLI: dev, machine, completion). */
const opstask = (args: ReadonlyArray<string>) => {
  const result = spawnSync(process.execPath, [join(repoRoot, "src", "cli", "main.ts"), ...args], {
    encoding: "utf8",
    timeout: 60_000,
    env: { ...process.env, KUBECONFIG: "/nonexistent" },
  });
  return { code: result.status, out: result.stdout, err: result.stderr };
};

const task = (name: string, labels: Record<string, string>) => ({
  apiVersion: "druid.gardener.cloud/v1alpha1",
  kind: "EtcdOpsTask",
  metadata: { name, labels },
  spec: { etcdName: `etcd-${name}`, config: { onDemandSnapshot: { type: "full" } } },
});

describe("opstask get, delete and the kubeconfig, kubectl's way", () => {
  let kc: KubeConfig;
  let namespace: string;
  let other: string;
  let dir: string;
  /** Two contexts on the test cluster: `main` (current, namespace `namespace`) and `elsewhere`. */
  let kubeconfig: string;
  let controller: RunningController | undefined;

  beforeAll(async () => {
    kc = cluster().makeKubeConfig();
    namespace = await createTestNamespace(kc, "kubectl");
    other = await createTestNamespace(kc, "kubectl-other");
    controller = await startController(kc, scriptedHandlers().registry, {}, namespace);
    dir = mkdtempSync(join(tmpdir(), "opstask-cli-"));
    kubeconfig = join(dir, "kubeconfig");
    writeFileSync(
      kubeconfig,
      stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [
          {
            name: "test",
            cluster: {
              server: cluster().server,
              "certificate-authority-data": Buffer.from(cluster().caPem).toString("base64"),
            },
          },
        ],
        users: [{ name: "admin", user: { token: cluster().token } }],
        contexts: [
          { name: "main", context: { cluster: "test", user: "admin", namespace } },
          { name: "elsewhere", context: { cluster: "test", user: "admin", namespace: other } },
        ],
        "current-context": "main",
      }),
    );
    const api = kc.makeApiClient(CustomObjectsApi);
    await api.createNamespacedCustomObject({ ...gvr, namespace, body: task("alpha", { app: "x" }) });
    await api.createNamespacedCustomObject({ ...gvr, namespace, body: task("beta", { app: "y" }) });
    await api.createNamespacedCustomObject({ ...gvr, namespace: other, body: task("gamma", { app: "x" }) });
    // Let the controller finish them, so that the columns have values.
    await waitFor("alpha and beta to succeed", async () => {
      const listed = await run("get", ["--kubeconfig", kubeconfig, "-o", "json"]);
      const items = (JSON.parse(listed.out) as { items: Array<{ status?: { state?: string } }> }).items;
      return items.length === 2 && items.every((item) => item.status?.state === "Succeeded")
        ? true
        : undefined;
    });
  });
  afterAll(async () => {
    await controller?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const at = () => ["--kubeconfig", kubeconfig];

  it("takes the namespace from the current context, and --context picks another", async () => {
    const here = await run("get", at());
    expect(here.code).toBe(0);
    expect(here.out).toMatch(/^NAME +STATE +ETCD +PHASE +AGE +LAST ERROR\n/);
    expect(here.out).toMatch(/\nalpha +Succeeded +etcd-alpha +Execution\/Completed +\d+s +<none>\n/);
    expect(here.out).toMatch(/\nbeta +Succeeded/);
    expect(here.out).not.toContain("gamma");
    const there = await run("get", [...at(), "--context", "elsewhere", "-o", "name"]);
    expect(there).toEqual({ code: 0, out: "etcdopstask.druid.gardener.cloud/gamma\n", err: "" });
    const flagged = await run("get", [...at(), "--context", "elsewhere", "-n", namespace, "-o", "name"]);
    expect(flagged.out.split("\n").filter(Boolean)).toEqual([
      "etcdopstask.druid.gardener.cloud/alpha",
      "etcdopstask.druid.gardener.cloud/beta",
    ]);
    const missing = await run("get", [...at(), "--context", "nowhere"]);
    expect(missing.code).toBe(2);
    expect(missing.err).toBe(`opstask get: ${kubeconfig}: --context "nowhere" is not in contexts[]\n`);
  });

  it("prints one task or a List as JSON and YAML, names, and a wide table", async () => {
    const one = await run("get", [...at(), "alpha", "-o", "json"]);
    expect(one.code).toBe(0);
    const object = JSON.parse(one.out) as { kind: string; metadata: { name: string; labels: object } };
    expect(object.kind).toBe("EtcdOpsTask");
    expect(object.metadata).toMatchObject({ name: "alpha", namespace, labels: { app: "x" } });
    // As kubectl: managedFields only when asked for.
    expect(object.metadata).not.toHaveProperty("managedFields");
    const managed = await run("get", [...at(), "alpha", "-o", "json", "--show-managed-fields"]);
    const fields = (JSON.parse(managed.out) as { metadata: { managedFields?: Array<{ manager: string }> } })
      .metadata.managedFields;
    expect(fields?.map((entry) => entry.manager)).toContain("opstask");

    const list = await run("get", [...at(), "-o", "yaml"]);
    expect(list.code).toBe(0);
    const parsed = parse(list.out) as { kind: string; items: Array<{ metadata: { name: string } }> };
    expect(parsed.kind).toBe("List");
    expect(parsed.items.map((item) => item.metadata.name)).toEqual(["alpha", "beta"]);

    const oneYaml = parse((await run("get", [...at(), "beta", "-o", "yaml"])).out) as { kind: string };
    expect(oneYaml.kind).toBe("EtcdOpsTask");

    const two = await run("get", [...at(), "beta", "alpha", "-o", "name"]);
    expect(two.out).toBe("etcdopstask.druid.gardener.cloud/beta\netcdopstask.druid.gardener.cloud/alpha\n");

    const wide = await run("get", [...at(), "-o", "wide"]);
    const lines = wide.out.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^NAME +STATE +ETCD +PHASE +AGE +LAST ERROR +TYPE +DESCRIPTION$/);
    expect(lines[1]).toMatch(
      /^alpha +Succeeded +etcd-alpha .* onDemandSnapshot +Snapshot created successfully$/,
    );

    const all = await run("get", [...at(), "-A", "-o", "name"]);
    expect(all.out).toContain("/gamma\n");
    expect(all.out).toContain("/alpha\n");
  });

  it("selects by label (-l), for get and delete", async () => {
    const x = await run("get", [...at(), "-l", "app=x", "-o", "name"]);
    expect(x).toEqual({ code: 0, out: "etcdopstask.druid.gardener.cloud/alpha\n", err: "" });
    const both = await run("get", [...at(), "--selector", "app in (x,y)", "-o", "name"]);
    expect(both.out.split("\n").filter(Boolean)).toHaveLength(2);
    const allX = await run("get", [...at(), "-A", "-l", "app=x", "-o", "name"]);
    expect(allX.out.split("\n").filter(Boolean).sort()).toEqual([
      "etcdopstask.druid.gardener.cloud/alpha",
      "etcdopstask.druid.gardener.cloud/gamma",
    ]);
    const none = await run("get", [...at(), "-l", "app=z"]);
    expect(none).toEqual({ code: 0, out: "", err: `No resources found in ${namespace} namespace.\n` });
    // The API server judges the selector's syntax: a 400, which is the user's input (exit 2).
    const bad = await run("get", [...at(), "-l", "app=("]);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/^opstask get: \S+ \(400\): /);
  });

  it("watches with -o name: one line per change, until interrupted", async () => {
    const stop = new AbortController();
    const watching = run("get", [...at(), "-w", "-o", "name", "-l", "app=w"], stop.signal);
    await new Promise((resolve) => setTimeout(resolve, 500));
    await kc
      .makeApiClient(CustomObjectsApi)
      .createNamespacedCustomObject({ ...gvr, namespace, body: task("watched", { app: "w" }) });
    await waitFor("the task to succeed", async () => {
      const now = await run("get", [...at(), "watched", "-o", "json"]);
      return now.out.includes('"Succeeded"') ? true : undefined;
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    stop.abort();
    const result = await watching;
    expect(result.code).toBe(0);
    const lines = result.out.split("\n").filter(Boolean);
    expect(lines.length).toBeGreaterThanOrEqual(2);
    expect(new Set(lines)).toEqual(new Set(["etcdopstask.druid.gardener.cloud/watched"]));
  });

  it("completes task names from the cluster, for opstask and the kubectl plugin", () => {
    const plugin = spawnSync(
      join(repoRoot, "bin", "kubectl_complete-opstask"),
      ["describe", "--kubeconfig", kubeconfig, ""],
      { encoding: "utf8", timeout: 60_000 },
    );
    expect(plugin.stdout.split("\n").filter(Boolean)).toEqual(["alpha", "beta", "watched", ":4"]);
    const flags = spawnSync(join(repoRoot, "bin", "kubectl_complete-opstask"), ["get", "-o", ""], {
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(flags.stdout).toBe("json\nyaml\nname\nwide\n:4\n");
  });

  it("deletes by name and by selector; a missing task is exit 1 and the others still go", async () => {
    const deleted = await run("delete", [...at(), "beta", "no-such-task", "--wait"]);
    expect(deleted.code).toBe(1);
    expect(deleted.out).toBe('etcdopstask.druid.gardener.cloud "beta" deleted\n');
    expect(deleted.err).toMatch(
      /^Error from server \(NotFound\): etcdopstask.druid.gardener.cloud "no-such-task": /,
    );
    // --wait returned only once beta was gone (the controller's cleanup and release done).
    expect((await run("get", [...at(), "beta"])).code).toBe(1);

    // A foreign finalizer keeps a deleted task: --wait gives up after --wait-timeout, exit 3.
    const api = kc.makeApiClient(CustomObjectsApi);
    await api.createNamespacedCustomObject({
      ...gvr,
      namespace,
      body: { ...task("held", { app: "h" }), metadata: { name: "held", finalizers: ["example.com/keep"] } },
    });
    const held = await run("delete", [...at(), "held", "--wait", "--wait-timeout", "1s"]);
    expect(held).toEqual({
      code: 3,
      out: 'etcdopstask.druid.gardener.cloud "held" deleted\n',
      err: "error: timed out after 1s waiting for the deleted tasks to be gone (describe shows what holds them)\n",
    });
    await api.patchNamespacedCustomObject(
      { ...gvr, namespace, name: "held", body: [{ op: "remove", path: "/metadata/finalizers" }] },
      setHeaderOptions("Content-Type", PatchStrategy.JsonPatch),
    );
    expect((await run("delete", [...at(), "--wait-timeout", "1s", "held"])).code).toBe(2);
    const bySelector = await run("delete", [...at(), "--context", "elsewhere", "-l", "app=x"]);
    expect(bySelector).toEqual({
      code: 0,
      out: 'etcdopstask.druid.gardener.cloud "gamma" deleted\n',
      err: "",
    });
  });

  it("exits 1 with one line for an API error and 2 for a bad argument", async () => {
    const missing = await run("get", [...at(), "no-such-task"]);
    expect(missing.code).toBe(1);
    expect(missing.err).toContain(
      'NotFound (404): etcdopstasks.druid.gardener.cloud "no-such-task" not found',
    );
    const cases: ReadonlyArray<[string, ReadonlyArray<string>, string]> = [
      ["get", ["--bogus"], "opstask get: Unknown option '--bogus'; see 'opstask get --help'\n"],
      [
        "get",
        ["-o", "table"],
        'opstask get: invalid value "table" for -o/--output: expected json | yaml | name | wide\n',
      ],
      [
        "get",
        ["-A", "alpha"],
        "opstask get: a task cannot be fetched by name across all namespaces: drop -A, or use -n NS\n",
      ],
      ["get", ["alpha", "-l", "app=x"], "opstask get: NAMEs and -l/--selector exclude each other: use one\n"],
      [
        "get",
        ["--kind", "pods"],
        'opstask get: unknown value "pods" for --kind: expected one of etcdopstasks (EtcdOpsTask)\n',
      ],
      [
        "delete",
        [],
        "opstask delete: missing NAME: expected task names or -l SELECTOR; see 'opstask delete --help'\n",
      ],
      [
        "describe",
        ["a", "b"],
        "opstask describe: unexpected argument \"b\": expected only <task>; see 'opstask describe --help'\n",
      ],
    ];
    for (const [command, args, message] of cases) {
      const result = await run(command, [...at(), ...args]);
      expect({ args, code: result.code, err: result.err, out: result.out }).toEqual({
        args,
        code: 2,
        err: message,
        out: "",
      });
    }
    // The kind's names: plural, singular, the CRD's short name, with the group.
    for (const kind of ["etcdopstasks", "EtcdOpsTask", "eot", "etcdopstasks.druid.gardener.cloud"])
      expect((await run("get", [...at(), "--kind", kind, "alpha", "-o", "name"])).code).toBe(0);
  });

  it("answers --help on every command with exit 0", async () => {
    for (const command of ["snapshot", "maintain", "recover-quorum", "get", "describe", "wait", "delete"]) {
      const result = await run(command, ["--help"]);
      expect({ command, code: result.code }).toEqual({ command, code: 0 });
      expect(result.out).toMatch(new RegExp(`^Usage: opstask ${command} `));
      // The completion script offers exactly flags the command documents.
      for (const flag of completionFlags[command] ?? []) expect(result.out).toContain(flag);
    }
    for (const command of ["dev", "machine", "controller", "completion"]) {
      const result = opstask([command, "--help"]);
      expect({ command, code: result.code, err: result.err }).toEqual({ command, code: 0, err: "" });
      expect(result.out).toMatch(new RegExp(`^Usage: opstask ${command}`));
      for (const flag of completionFlags[command] ?? []) expect(result.out).toContain(flag);
    }
    expect(opstask(["machine", "--bogus"])).toEqual({
      code: 2,
      out: "",
      err: "opstask machine: Unknown option '--bogus'; see 'opstask machine --help'\n",
    });
    const bash = opstask(["completion", "bash"]);
    expect(bash.code).toBe(0);
    expect(bash.out).toContain("complete -o default -F _opstask opstask");
    expect(spawnSync("bash", ["-n"], { input: bash.out, timeout: 10_000 }).status).toBe(0);
    expect(opstask(["completion", "fish"])).toMatchObject({ code: 2 });
  });
});

describe("one client for the CLI and the controller: a kubeconfig with an http:// server", () => {
  let proxy: http.Server | undefined;
  let dir: string;
  let kubeconfig: string;
  let namespace: string;
  let controller: RunningController | undefined;

  beforeAll(async () => {
    const kc = cluster().makeKubeConfig();
    namespace = await createTestNamespace(kc, "plain-http");
    // A plain-HTTP front for the test apiserver on loopback (what `kubectl proxy` is), streams included.
    const upstream = new URL(cluster().server);
    proxy = http.createServer((request, response) => {
      const forwarded = https.request(
        {
          hostname: upstream.hostname,
          port: upstream.port,
          path: request.url,
          method: request.method,
          headers: request.headers,
          ca: cluster().caPem,
        },
        (answer) => {
          response.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(response);
        },
      );
      forwarded.on("error", () => response.destroy());
      request.pipe(forwarded);
    });
    await new Promise<void>((resolve) => proxy?.listen(0, "127.0.0.1", resolve));
    const port = (proxy.address() as AddressInfo).port;
    dir = mkdtempSync(join(tmpdir(), "opstask-http-"));
    kubeconfig = join(dir, "kubeconfig");
    writeFileSync(
      kubeconfig,
      stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [{ name: "plain", cluster: { server: `http://127.0.0.1:${port}` } }],
        users: [{ name: "admin", user: { token: cluster().token } }],
        contexts: [{ name: "plain", context: { cluster: "plain", user: "admin", namespace } }],
        "current-context": "plain",
      }),
    );
    // The controller reads the same file with the same loader as the CLI.
    controller = await startController(
      await loadKubeClient(kubeconfig),
      scriptedHandlers().registry,
      {},
      namespace,
    );
  });
  afterAll(async () => {
    await controller?.stop();
    proxy?.closeAllConnections();
    await new Promise((resolve) => proxy?.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  it("creates, follows, lists and deletes a task through it, run by a controller using it", async () => {
    const created = await run("snapshot", [
      "etcd-h",
      "--type",
      "full",
      "--name",
      "plain",
      "--wait",
      "--kubeconfig",
      kubeconfig,
    ]);
    expect(created.err).toBe("");
    expect(created.code).toBe(0);
    expect(created.out).toMatch(/\nplain Succeeded after \d+s: Snapshot created successfully\n$/);
    const listed = await run("get", ["--kubeconfig", kubeconfig, "-o", "yaml"]);
    const [document] = parseAllDocuments(listed.out).map((d) => d.toJS() as { items: unknown[] });
    expect(document?.items).toHaveLength(1);
    expect((await run("delete", ["plain", "--kubeconfig", kubeconfig])).code).toBe(0);
  });
});
