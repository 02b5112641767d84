/**
 * The task CLI for a kind defined with the library (`defineTaskKind`), beside EtcdOpsTask: `--kind`
 * picks it, and get, describe, wait and delete read it through its own decoder, columns and words,
 * against a real API server with the library's controller (`runTaskController`) running it.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CustomObjectsApi } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { etcdCliKind } from "../../src/cli/task/etcd-kind.ts";
import { makeTaskCommands } from "../../src/cli/task/index.ts";
import { taskCli } from "../../src/cli/task/task-cli.ts";
import {
  completed,
  failed,
  promiseHandler,
  runTaskController,
  type TaskController,
} from "../../src/index.ts";
import { createTestNamespace, useControlPlane } from "../support/cluster.ts";
import { type Probe, probeCliKind, probeKind } from "../support/probe-kind.ts";
import { captureTaskIo } from "../support/task-io.ts";
import { waitFor } from "../support/wait.ts";

const group = "tests.opstask.dev";
const crdDir = mkdtempSync(join(tmpdir(), "opstask-probe-crd-"));
const crdPath = join(crdDir, "probes.yaml");
writeFileSync(
  crdPath,
  stringify({
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `probes.${group}` },
    spec: {
      group,
      scope: "Namespaced",
      names: { kind: "Probe", listKind: "ProbeList", plural: "probes", singular: "probe" },
      versions: [
        {
          name: "v1",
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: {
            openAPIV3Schema: {
              type: "object",
              properties: {
                spec: { type: "object", "x-kubernetes-preserve-unknown-fields": true },
                status: { type: "object", "x-kubernetes-preserve-unknown-fields": true },
              },
            },
          },
        },
      ],
    },
  }),
);
const cluster = useControlPlane({ crds: [crdPath] });

const run = async (args: ReadonlyArray<string>, command = "get") => {
  const { io, captured } = captureTaskIo();
  const code = await makeTaskCommands(() => io, [etcdCliKind, probeCliKind])[command]?.(args);
  return { code, ...captured };
};

describe("the task CLI for a kind defined with the library", () => {
  let namespace: string;
  let controller: TaskController | undefined;
  const at = () => ["--kubeconfig", cluster().kubeconfigPath, "-n", namespace, "--kind", "probes"];

  beforeAll(async () => {
    const kc = cluster().makeKubeConfig();
    namespace = await createTestNamespace(kc, "kinds");
    controller = await runTaskController({
      kind: probeKind,
      handlers: {
        ping: promiseHandler<Probe>({
          execute: (task) =>
            task.spec.config.kind === "ping" && task.spec.config.answer === "pong"
              ? completed("Pong received")
              : failed("No pong", { code: "ERR_NO_PONG", message: "no pong", cause: task.spec.target }),
        }),
      },
      kubeConfig: kc,
      namespace,
      logLevel: "warn",
    });
    const api = kc.makeApiClient(CustomObjectsApi);
    for (const [name, answer] of [
      ["good", "pong"],
      ["bad", "silence"],
    ] as const)
      await api.createNamespacedCustomObject({
        group,
        version: "v1",
        plural: "probes",
        namespace,
        body: {
          apiVersion: `${group}/v1`,
          kind: "Probe",
          metadata: { name },
          spec: { target: `host-${name}`, ttlSecondsAfterFinished: 3600, config: { ping: { answer } } },
        },
      });
  });
  afterAll(async () => {
    await controller?.stop();
    rmSync(crdDir, { recursive: true, force: true });
  });

  it("waits, lists, describes and deletes Probes with their own columns and words", async () => {
    expect(await run([...at(), "good"], "wait")).toMatchObject({ code: 0 });
    expect(await run([...at(), "bad"], "wait")).toMatchObject({ code: 1 });

    const table = await run(at());
    expect(table.code).toBe(0);
    const lines = table.out.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^NAME +STATE +TARGET +PHASE +AGE +LAST ERROR$/);
    expect(lines[1]).toMatch(/^bad +Failed +host-bad +Execution\/Failed +\d+s +ERR_NO_PONG$/);
    expect(lines[2]).toMatch(/^good +Succeeded +host-good +Execution\/Completed +\d+s +<none>$/);

    expect((await run([...at(), "-o", "name"])).out).toBe(
      "probe.tests.opstask.dev/bad\nprobe.tests.opstask.dev/good\n",
    );

    const described = await run([...at(), "bad"], "describe");
    expect(described.code).toBe(0);
    expect(described.out).toContain("Target:      host-bad\n");
    expect(described.out).toContain("Task:        ping host-bad\n");
    expect(described.out).toContain("Why:         Failed: ERR_NO_PONG: no pong (cause: host-bad)");

    // The default kind stays EtcdOpsTask (none here; its CRD is not even installed).
    const etcdTasks = await run(["--kubeconfig", cluster().kubeconfigPath, "-n", namespace]);
    expect(etcdTasks.code).toBe(1);
    expect(etcdTasks.err).toContain("NotFound (404)");

    const deleted = await run([...at(), "good", "bad"], "delete");
    expect(deleted).toEqual({
      code: 0,
      out: 'probe.tests.opstask.dev "good" deleted\nprobe.tests.opstask.dev "bad" deleted\n',
      err: "",
    });
    await waitFor("both to be gone (the controller releases its finalizer)", async () => {
      const left = await run([...at(), "-o", "name"]);
      return left.out === "" ? true : undefined;
    });
  });

  it("creates a Probe from a file, checked by its decoder first, and follows it to its end", async () => {
    const file = join(crdDir, "filed.yaml");
    writeFileSync(
      file,
      stringify({
        apiVersion: `${group}/v1`,
        kind: "Probe",
        metadata: { name: "filed", labels: { from: "file" } },
        spec: { target: "host-filed", ttlSecondsAfterFinished: 3600, config: { ping: { answer: "pong" } } },
      }),
    );
    const { io, captured } = captureTaskIo();
    const probes = taskCli([probeCliKind], { program: "probe-cli", io: () => io });
    const code = await probes([
      "create",
      "-f",
      file,
      "--wait",
      "--kubeconfig",
      cluster().kubeconfigPath,
      "-n",
      namespace,
    ]);
    expect({ code, err: captured.err }).toEqual({ code: 0, err: "" });
    expect(captured.out).toMatch(/^filed\n/);
    expect(captured.out).toContain("filed Succeeded");
    const stored = (await cluster()
      .makeKubeConfig()
      .makeApiClient(CustomObjectsApi)
      .getNamespacedCustomObject({ group, version: "v1", plural: "probes", namespace, name: "filed" })) as {
      metadata: { labels?: Record<string, string>; managedFields?: Array<{ manager?: string }> };
      spec: { target: string };
    };
    expect(stored.metadata.labels).toEqual({ from: "file" });
    expect(stored.spec.target).toBe("host-filed");
    expect(stored.metadata.managedFields?.[0]?.manager).toBe("opstask-cli");

    // A task the controller would reject is named and never sent.
    writeFileSync(
      file,
      stringify({ metadata: { name: "unsent" }, spec: { target: "t", config: { ping: {} } } }),
    );
    const refused = await run([...at(), "-f", file], "create");
    expect(refused.code).toBe(2);
    expect(refused.err).toContain("spec.ttlSecondsAfterFinished: required field is missing");
    expect(refused.err).toContain("spec.config.ping.answer: required field is missing");
    expect((await run([...at(), "unsent"])).code).toBe(1);
  });

  it("names the operator's kind, not EtcdOpsTask, in an API error's hint", async () => {
    const { io, captured } = captureTaskIo();
    const probes = taskCli([probeCliKind], { program: "probe-cli", io: () => io });
    const code = await probes([
      "describe",
      "missing",
      "--kubeconfig",
      cluster().kubeconfigPath,
      "-n",
      namespace,
    ]);
    expect(code).toBe(1);
    expect(captured.err).toMatch(/^probe-cli describe: NotFound \(404\): /);
    expect(captured.err).toContain(
      "hint: check the name and the namespace (-n); is the Probe CRD (probes.tests.opstask.dev) installed?\n",
    );
    expect(captured.err).not.toMatch(/etcd/i);
  });
});
