/**
 * History on a real kube-apiserver, through `runTaskController`: outcomes outlive their tasks (TTL 0)
 * in the kind's history ConfigMap, written by the controller's field manager, and a restarted
 * controller answers the same last-success and last-failure metrics before any new task finishes.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { makeTaskCommands } from "../../src/cli/task/index.ts";
import { decodeEntries } from "../../src/history/history-entry.ts";
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
const crdDir = mkdtempSync(join(tmpdir(), "opstask-history-crd-"));
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
const configMapName = "opstask-history-probes";

const start = (kc: KubeConfig, namespace: string) =>
  runTaskController({
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
    fieldManager: "history-test-controller",
    metrics: { address: "127.0.0.1:0", secure: false },
    history: {},
  });

const historyLines = async (controller: TaskController): Promise<string[]> => {
  const text = await (await fetch(`${controller.metricsUrl}/metrics`)).text();
  return text
    .split("\n")
    .filter((line) => /^opstask_task_last_(success|failure)_timestamp_seconds\{/.test(line))
    .sort();
};

describe("task history outlives the TTL and the controller", () => {
  let kc: KubeConfig;
  let namespace: string;
  let controller: TaskController | undefined;

  beforeAll(async () => {
    kc = cluster().makeKubeConfig();
    namespace = await createTestNamespace(kc, "history");
    controller = await start(kc, namespace);
  });
  afterAll(async () => {
    await controller?.stop();
    rmSync(crdDir, { recursive: true, force: true });
  });

  it("keeps the last outcomes of deleted tasks, and a restarted controller shows the same metrics", async () => {
    const api = kc.makeApiClient(CustomObjectsApi);
    const core = kc.makeApiClient(CoreV1Api);
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
          spec: { target: `host-${name}`, ttlSecondsAfterFinished: 0, config: { ping: { answer } } },
        },
      });
    await waitFor("both tasks deleted at their TTL", async () => {
      const list = (await api.listNamespacedCustomObject({
        group,
        version: "v1",
        plural: "probes",
        namespace,
      })) as {
        items: unknown[];
      };
      return list.items.length === 0 ? true : undefined;
    });
    const configMap = await waitFor("both outcomes in the history ConfigMap", async () => {
      const found = await core
        .readNamespacedConfigMap({ name: configMapName, namespace })
        .catch(() => undefined);
      return decodeEntries(found?.data?.["entries.json"]).entries.length === 2 ? found : undefined;
    });
    const entries = decodeEntries(configMap.data?.["entries.json"]).entries;
    expect(
      entries.map((entry) => [entry.target, entry.type, entry.last.state, entry.last.errorCode]),
    ).toEqual([
      ["host-bad", "ping", "Failed", "ERR_NO_PONG"],
      ["host-good", "ping", "Succeeded", undefined],
    ]);
    expect(configMap.metadata?.labels).toMatchObject({ "opstask.dev/history-of": "probes" });
    expect(configMap.metadata?.managedFields?.map((field) => field.manager)).toEqual([
      "history-test-controller",
    ]);

    const before = await historyLines(controller as TaskController);
    expect(before).toHaveLength(2);
    expect(before[0]).toMatch(
      new RegExp(
        `^opstask_task_last_failure_timestamp_seconds\\{kind="Probe",namespace="${namespace}",target="host-bad",type="ping"\\} \\d+(\\.\\d+)?$`,
      ),
    );
    expect(before[1]).toMatch(/^opstask_task_last_success_timestamp_seconds\{.*target="host-good".*\} \d/);

    await controller?.stop();
    controller = await start(kc, namespace);
    expect(await historyLines(controller)).toEqual(before);

    // `history <target>`: the deleted tasks' outcomes, one row per type.
    const history = async (...args: string[]) => {
      const { io, captured } = captureTaskIo();
      const code = await makeTaskCommands(() => io, [probeCliKind]).history?.([
        ...args,
        "--kubeconfig",
        cluster().kubeconfigPath,
        "-n",
        namespace,
      ]);
      return { code, ...captured };
    };
    const bad = await history("host-bad");
    expect(bad.code).toBe(0);
    const [header, row, ...rest] = bad.out.trimEnd().split("\n");
    expect(header).toMatch(/^TYPE +LAST SUCCESS +LAST FAILURE +LAST OUTCOME +DURATION +ERROR CODE$/);
    expect(row).toMatch(
      /^ping +<none> +\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(\d+s ago\) +Failed \d+s ago +[\d.]+s +ERR_NO_PONG$/,
    );
    expect(rest).toEqual([]);
    const all = await history();
    expect(all.out.split("\n")[0]).toMatch(/^TARGET +TYPE +LAST SUCCESS/);
    expect(all.out).toMatch(/^host-good +ping +\d{4}-.*Succeeded/m);
    expect(await history("host-none")).toEqual({
      code: 1,
      out: "",
      err: `opstask history: no history of host-none in namespace ${namespace} (targets recorded: host-bad, host-good)\n`,
    });
  }, 120_000);
});
