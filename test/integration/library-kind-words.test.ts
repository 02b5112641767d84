/**
 * Issue 27 points 3 and 7, on a real kube-apiserver: a kind defined with the library, run by
 * `runTaskController` with no field manager given, speaks of itself. Its writes and Events name its
 * own controller (`<group>/<plural>-controller`), another writer on its tasks is reported in words of
 * the kind and that controller (etcd-druid is the flagship's business), and a finished task stays
 * counted in `opstask_tasks_finished_total` after its TTL deleted it and its per-task series went.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  CustomObjectsApi,
  EventsV1Api,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from "@kubernetes/client-node";
import * as Schema from "effect/Schema";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { taskCrd } from "../../src/crd.ts";
import {
  completed,
  configMember,
  configUnion,
  defineTaskKind,
  ObjectMeta,
  promiseHandler,
  runTaskController,
  type TaskController,
  TaskStatusSchema,
} from "../../src/index.ts";
import { createTestNamespace, useControlPlane } from "../support/cluster.ts";
import { waitFor } from "../support/wait.ts";

const group = "laundry.example.com";
const resource = { group, version: "v1", plural: "washes" };
const WashSpec = Schema.Struct({
  ttlSecondsAfterFinished: Schema.Number.check(Schema.isInt32()),
  config: configUnion({ rinse: Schema.Struct({ temperature: Schema.Number.check(Schema.isInt32()) }) }),
});
const WashSchema = Schema.Struct({
  metadata: ObjectMeta,
  spec: WashSpec,
  status: Schema.optionalKey(TaskStatusSchema),
});
type Wash = typeof WashSchema.Type;
const washKind = defineTaskKind({
  ...resource,
  kind: "Wash",
  finalizer: `${group}/wash`,
  schema: WashSchema,
  ttlSeconds: (task) => task.spec.ttlSecondsAfterFinished,
  member: (task) => configMember(task.spec.config),
  status: (task) => task.status,
});
const ownName = "laundry.example.com/washes-controller";

const crd = taskCrd(washKind, WashSpec);
if (!crd.ok) throw new Error(crd.errors.join("; "));
const crdDir = mkdtempSync(join(tmpdir(), "opstask-wash-crd-"));
const crdPath = join(crdDir, "washes.yaml");
writeFileSync(crdPath, stringify(crd.crd));
const cluster = useControlPlane({ crds: [crdPath] });
const merge = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

interface Stored {
  readonly metadata: { readonly managedFields?: ReadonlyArray<{ readonly manager?: string }> };
  readonly status?: { readonly state?: string };
}

const handlers = { rinse: promiseHandler<Wash>({ execute: () => completed("Rinsed") }) };

describe("a library kind's controller speaks of its kind and itself", () => {
  let kc: KubeConfig;
  let api: CustomObjectsApi;
  const controllers: TaskController[] = [];

  const wash = (namespace: string, name: string, ttlSecondsAfterFinished: number) =>
    api.createNamespacedCustomObject({
      ...resource,
      namespace,
      body: {
        apiVersion: `${group}/v1`,
        kind: "Wash",
        metadata: { name },
        spec: { ttlSecondsAfterFinished, config: { rinse: { temperature: 40 } } },
      },
    });
  const read = async (namespace: string, name: string) =>
    (await api.getNamespacedCustomObject({ ...resource, namespace, name })) as Stored;
  const start = async (namespace: string, metrics?: { address: string; secure: false }) => {
    const controller = await runTaskController({
      kind: washKind,
      handlers,
      kubeConfig: kc,
      namespace,
      ...(metrics === undefined ? {} : { metrics }),
      logLevel: "none",
    });
    controllers.push(controller);
    return controller;
  };

  beforeAll(() => {
    kc = cluster().makeKubeConfig();
    api = kc.makeApiClient(CustomObjectsApi);
  });
  afterAll(async () => {
    for (const controller of controllers) await controller.stop();
    rmSync(crdDir, { recursive: true, force: true });
  });

  it("writes as <group>/<plural>-controller and reports another writer without etcd-druid's or opstask's words", async () => {
    const namespace = await createTestNamespace(kc, "words");
    // Before the controller runs, another operator takes a task: our finalizer and a status.
    await wash(namespace, "taken", 3600);
    await api.patchNamespacedCustomObject(
      {
        ...resource,
        namespace,
        name: "taken",
        body: { metadata: { finalizers: [washKind.finalizer] } },
        fieldManager: "other-operator",
      },
      merge,
    );
    const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
    await api.patchNamespacedCustomObjectStatus(
      {
        ...resource,
        namespace,
        name: "taken",
        body: { status: { state: "Pending", lastTransitionTime: now } },
        fieldManager: "other-operator",
      },
      merge,
    );
    await start(namespace);

    await wash(namespace, "own", 3600);
    const own = await waitFor("own to succeed", async () => {
      const task = await read(namespace, "own");
      return task.status?.state === "Succeeded" ? task : undefined;
    });
    const managers = new Set((own.metadata.managedFields ?? []).map((entry) => entry.manager));
    expect(managers.has(ownName)).toBe(true);
    expect(managers.has("opstask")).toBe(false);

    const events = await waitFor("two ForeignWriter Events and one on own", async () => {
      const items = (await kc.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace })).items;
      const foreign = items.filter((event) => event.reason === "ForeignWriter");
      return foreign.length >= 2 && items.some((event) => event.regarding?.name === "own")
        ? items
        : undefined;
    });
    const notes = events
      .filter((event) => event.reason === "ForeignWriter")
      .map((event) => event.note ?? "")
      .sort();
    expect(notes).toEqual([
      `field manager "other-operator" added the finalizer ${ownName} uses: another controller acts on this Wash; ${ownName} does not fight over it. Keep one controller per Wash.`,
      `field manager "other-operator" wrote this Wash's status: another controller acts on it; ${ownName} does not fight over it. Keep one controller per Wash.`,
    ]);
    for (const note of notes) expect(note).not.toMatch(/druid|opstask|etcd|coexistence/i);
    expect(new Set(events.map((event) => event.reportingController))).toEqual(new Set([ownName]));
  });

  it("still counts finished tasks in opstask_tasks_finished_total once they and their series are gone", async () => {
    const namespace = await createTestNamespace(kc, "finished");
    const controller = await start(namespace, { address: "127.0.0.1:0", secure: false });
    const scrape = async () => (await fetch(`${controller.metricsUrl}/metrics`)).text();
    await wash(namespace, "first", 1);
    await wash(namespace, "second", 1);
    for (const name of ["first", "second"])
      await waitFor(`${name} to be deleted after its TTL`, async () =>
        (await read(namespace, name).then(
          () => false,
          () => true,
        ))
          ? true
          : undefined,
      );
    // The per-task series goes with its last task (metric-series.ts); the counter stays.
    const metrics = await waitFor("the tasks' per-task series to go", async () => {
      const text = await scrape();
      return text.includes("opstask_tasks_total{") ? undefined : text;
    });
    expect(metrics).toContain('opstask_tasks_finished_total{kind="Wash",type="rinse",state="Succeeded"} 2');
  });
});
