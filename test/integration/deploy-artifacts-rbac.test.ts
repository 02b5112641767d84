/**
 * `opstask deploy-artifacts`' RBAC is exactly enough, on a real kube-apiserver: a library controller
 * run under the generated ServiceAccount's token, with leader election and its schedules
 * (`--schedules`), takes a task to Succeeded (its handler reads a ConfigMap, which the kind declares
 * in `rbacRules`), a steps task to Succeeded with its result (its progress in the controller's record,
 * in the controller's namespace), and a TaskSchedule (its CRD the generated file) creates a run; with
 * one generated rule removed, the API server refuses the controller's call and the task does not get
 * there.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as Effect from "effect/Effect";
import * as Schema from "effect/Schema";
import {
  completed,
  configMember,
  configUnion,
  defineTaskKind,
  memberHandlers,
  ObjectMeta,
  promiseHandler,
  promiseStep,
  runTaskController,
  stepsHandler,
  type TaskController,
  TaskStatusSchema,
} from "opstask";
import { taskCrd } from "opstask/crd";
import { type ControlPlane, startControlPlane } from "opstask/testing";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { deployArtifacts, identityOf } from "../../src/cli/deploy/deploy-artifacts.ts";
import { waitFor } from "../support/wait.ts";

const group = "lookups.example.com";
const LookupSpec = Schema.Struct({
  ttlSecondsAfterFinished: Schema.Number.check(Schema.isInt32()),
  config: configUnion({
    configMap: Schema.Struct({ name: Schema.String }),
    twoSteps: Schema.Struct({ label: Schema.String }),
  }),
});
const LookupSchema = Schema.Struct({
  metadata: ObjectMeta,
  spec: LookupSpec,
  status: Schema.optionalKey(TaskStatusSchema),
});
type Lookup = typeof LookupSchema.Type;
const lookupKind = defineTaskKind({
  group,
  version: "v1",
  kind: "Lookup",
  plural: "lookups",
  finalizer: `${group}/lookup`,
  schema: LookupSchema,
  ttlSeconds: (task) => task.spec.ttlSecondsAfterFinished,
  member: (task) => configMember(task.spec.config),
  status: (task) => task.status,
  result: Schema.Struct({ steps: Schema.Number }),
  rbacRules: [
    {
      apiGroups: [""],
      resources: ["configmaps"],
      verbs: ["get"],
      reason: "the handler reads the named ConfigMap",
    },
  ],
});
const handlers = memberHandlers((task: Lookup) => task.spec.config, {
  configMap: promiseHandler({
    execute: async (task, { config, objects }) => {
      const configMaps = { group: "", version: "v1", plural: "configmaps" };
      const found = await objects.get(configMaps, task.metadata.namespace, config.name);
      return completed(
        found === undefined ? `no ConfigMap ${config.name}` : `ConfigMap ${config.name} found`,
      );
    },
  }),
  twoSteps: stepsHandler(lookupKind, {
    progress: `${group}/two-steps`,
    steps: [
      promiseStep({ name: "First", run: async () => undefined }),
      {
        name: "Second",
        run: () =>
          Effect.succeed(lookupKind.succeeded({ description: "Both steps done", result: { steps: 2 } })),
      },
    ],
  }),
});

const files = deployArtifacts(lookupKind, { regenerate: "test", schedules: true });
const fileText = (path: string) => files.find((file) => file.path === path)?.text ?? "";
const identity = identityOf(lookupKind.resource, {});
const tasks = (namespace: string) => `/apis/${group}/v1/namespaces/${namespace}/lookups`;

describe("the generated RBAC of a kind's controller", () => {
  let plane: ControlPlane;
  let namespace: string;
  let controller: TaskController | undefined;

  beforeAll(async () => {
    const crd = taskCrd(lookupKind, LookupSpec);
    // The TaskSchedule CRD as generated.
    const dir = mkdtempSync(join(tmpdir(), "opstask-rbac-"));
    try {
      writeFileSync(join(dir, "taskschedules-crd.yaml"), fileText("taskschedules-crd.yaml"));
      plane = await startControlPlane({ crds: [crd, join(dir, "taskschedules-crd.yaml")] });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    await plane.apply(fileText("namespace.yaml"));
    await plane.apply(fileText("serviceaccount.yaml"));
    await plane.apply(fileText("rbac.yaml"));
    namespace = await plane.createNamespace("lookups");
    await plane.apply([
      { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "settings", namespace }, data: { a: "b" } },
    ]);
  }, 300_000);
  afterEach(async () => {
    await controller?.stop();
    controller = undefined;
  });
  afterAll(() => plane?.stop());

  /** The controller as deployed: the ServiceAccount's token, leader election in its namespace. */
  const startController = async (as = identity) => {
    const token = await plane.serviceAccountToken(as.namespace, as.name, { create: false });
    controller = await runTaskController({
      kind: lookupKind,
      handlers,
      kubeConfig: plane.kubeClient(token),
      leaderElection: { name: as.leaseName, namespace: as.namespace },
      // Where the Deployment's POD_NAMESPACE points it.
      progressNamespace: as.namespace,
      schedules: {},
      ...(as.watchNamespaces === undefined ? {} : { namespace: as.watchNamespaces }),
      timing: { backoffCapMs: 1_000 },
      logLevel: "none",
    });
    await controller.synced;
    return controller;
  };
  const lookupConfig = { configMap: { name: "settings" } };
  const create = (name: string, config: Record<string, unknown> = lookupConfig) =>
    plane.kubeClient().request({
      method: "POST",
      path: tasks(namespace),
      body: {
        apiVersion: `${group}/v1`,
        kind: "Lookup",
        metadata: { name },
        spec: { ttlSecondsAfterFinished: 3600, config },
      },
    });
  const stateOf = async (name: string) => {
    const { body } = await plane.kubeClient().request({ method: "GET", path: `${tasks(namespace)}/${name}` });
    return (
      body as { status?: { state?: string; lastOperation?: { description?: string }; result?: unknown } }
    ).status;
  };
  /** A TaskSchedule of a Lookup every minute (its first run at the next minute). */
  const createSchedule = (name: string) =>
    plane.kubeClient().request({
      method: "POST",
      path: `/apis/opstask.gardener.cloud/v1alpha1/namespaces/${namespace}/taskschedules`,
      body: {
        apiVersion: "opstask.gardener.cloud/v1alpha1",
        kind: "TaskSchedule",
        metadata: { name },
        spec: {
          taskKind: { apiVersion: `${group}/v1`, kind: "Lookup" },
          schedule: "* * * * *",
          taskTemplate: { spec: { ttlSecondsAfterFinished: 3600, config: lookupConfig } },
        },
      },
    });
  const runsOf = async (schedule: string) => {
    const { body } = await plane.kubeClient().request({ method: "GET", path: tasks(namespace) });
    return (body as { items: Array<{ metadata: { name: string } }> }).items.filter((item) =>
      item.metadata.name.startsWith(`${schedule}-`),
    );
  };
  /** Whether the ServiceAccount may do `verb` on `resource` in `namespace` (kubectl auth can-i). */
  const canI = async (verb: string, resource: string, apiGroup: string, as = identity, where = namespace) => {
    const token = await plane.serviceAccountToken(as.namespace, as.name, { create: false });
    const { body } = await plane.kubeClient(token).request({
      method: "POST",
      path: "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
      body: { spec: { resourceAttributes: { namespace: where, verb, group: apiGroup, resource } } },
    });
    return (body as { status?: { allowed?: boolean } }).status?.allowed === true;
  };

  it("lets the controller take a task and a steps task to Succeeded and a schedule create a run, refused nothing", async () => {
    const running = await startController();
    await createSchedule("every-minute");
    await create("with-all-rules");
    await create("steps-with-all-rules", { twoSteps: { label: "a" } });
    const status = await waitFor("with-all-rules to succeed", async () => {
      const current = await stateOf("with-all-rules");
      return current?.state === "Succeeded" ? current : undefined;
    });
    expect(status.lastOperation?.description).toBe("ConfigMap settings found");
    const steps = await waitFor("steps-with-all-rules to succeed", async () => {
      const current = await stateOf("steps-with-all-rules");
      return current?.state === "Succeeded" ? current : undefined;
    });
    expect(steps).toMatchObject({ lastOperation: { description: "Both steps done" }, result: { steps: 2 } });
    const runs = await waitFor(
      "the schedule's first run (at the next minute)",
      async () => {
        const found = await runsOf("every-minute");
        return found.length > 0 ? found : undefined;
      },
      90_000,
    );
    expect(runs).toHaveLength(1);
    expect(running.leading()).toBe(true);
    expect(running.requests.snapshot().filter((request) => request.code === 403)).toEqual([]);
  }, 150_000);

  it("with --watch-namespaces, grants the rules in those namespaces only: the controller works there, is refused elsewhere (issue 35, L8)", async () => {
    const other = await plane.createNamespace("lookups-other");
    const options = { name: "lookups-scoped", watchNamespaces: [namespace] };
    const scoped = deployArtifacts(lookupKind, { regenerate: "test", schedules: true, ...options });
    const scopedText = (path: string) => scoped.find((file) => file.path === path)?.text ?? "";
    await plane.apply(scopedText("serviceaccount.yaml"));
    await plane.apply(scopedText("rbac.yaml"));
    const as = identityOf(lookupKind.resource, options);
    await waitFor("the RoleBinding to take effect", async () =>
      (await canI("list", "lookups", group, as)) ? true : undefined,
    );
    expect(await canI("list", "lookups", group, as, other)).toBe(false);
    expect(await canI("get", "configmaps", "", as, other)).toBe(false);
    expect(await canI("list", "lookups", group, as, "")).toBe(false);

    const running = await startController(as);
    await create("scoped");
    await waitFor("scoped to succeed", async () =>
      (await stateOf("scoped"))?.state === "Succeeded" ? true : undefined,
    );
    expect(running.requests.snapshot().filter((request) => request.code === 403)).toEqual([]);
  });

  type Rule = { resources: string[]; verbs: string[] };
  type Role = { kind: string; metadata: { name: string }; rules: Rule[] };
  const roles = parseAllDocuments(fileText("rbac.yaml"))
    .map((document) => document.toJS() as Role)
    .filter((object) => object.kind.endsWith("Role"));
  const removals = [
    {
      why: "the rule the kind declared for its handler",
      role: identity.name,
      rule: { resource: "configmaps" },
      refused: ["get", "configmaps", "", undefined],
      config: lookupConfig,
      seen: "get",
    },
    {
      why: "the status rule",
      role: identity.name,
      rule: { resource: "lookups/status" },
      refused: ["patch", "lookups/status", group, undefined],
      config: lookupConfig,
      seen: "patch",
    },
    {
      why: "the task records' Role (a steps task's progress)",
      role: `${identity.name}-task-records`,
      rule: { resource: "configmaps" },
      refused: ["create", "configmaps", "", identity.namespace],
      config: { twoSteps: { label: "b" } },
      seen: "status",
    },
    {
      why: "the schedule's status rule",
      role: identity.name,
      rule: { resource: "taskschedules/status" },
      refused: ["patch", "taskschedules/status", "opstask.gardener.cloud", undefined],
      config: undefined,
      seen: "patch",
    },
    {
      why: "the schedule's create of its runs",
      role: identity.name,
      rule: { resource: "lookups", verb: "create" },
      refused: ["create", "lookups", group, undefined],
      config: undefined,
      seen: "create",
    },
  ] as const;
  it.each(removals)(
    "fails without $why: the API server refuses the controller's call",
    async ({ role, rule, refused, config, seen }) => {
      const generated = roles.find((each) => each.metadata.name === role);
      if (generated === undefined) throw new Error(`no role ${role} in rbac.yaml`);
      const removed = (each: Rule) =>
        each.resources.includes(rule.resource) && ("verb" in rule ? each.verbs.includes(rule.verb) : true);
      const without = { ...generated, rules: generated.rules.filter((each) => !removed(each)) };
      expect(without.rules.length).toBe(generated.rules.length - 1);
      await plane.apply([without]);
      const [verb, resource, apiGroup, where] = refused;
      await waitFor(`RBAC to take ${rule.resource} ${verb} away`, async () =>
        (await canI(verb, resource, apiGroup, identity, where)) ? undefined : true,
      );

      const running = await startController();
      const name = `without-${role.length}-${rule.resource.replace("/", "-")}-${verb}`;
      if (config !== undefined) await create(name, config);
      if (seen === "status")
        // The record's calls are the steps primitive's own: the task's status tells the refusal.
        await waitFor(
          "the refused record in the task's status",
          async () => {
            const current = await stateOf(name);
            return JSON.stringify(current ?? {}).includes("forbidden") ? true : undefined;
          },
          60_000,
        );
      else
        await waitFor(
          `the controller's refused ${verb}`,
          async () => (running.requests.count(seen, 403) > 0 ? true : undefined),
          90_000,
        );
      if (config !== undefined) expect((await stateOf(name))?.state).not.toBe("Succeeded");
      await plane.apply(fileText("rbac.yaml"));
      await waitFor(`RBAC to give ${rule.resource} back`, async () =>
        (await canI(verb, resource, apiGroup, identity, where)) ? true : undefined,
      );
    },
    150_000,
  );
});
