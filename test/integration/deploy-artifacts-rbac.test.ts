/**
 * `opstask deploy-artifacts`' RBAC is exactly enough, on a real kube-apiserver: a library controller
 * run under the generated ServiceAccount's token, with leader election, takes a task to Succeeded
 * (its handler reads a ConfigMap, which the kind declares in `rbacRules`); with one generated rule
 * removed, the API server refuses the controller's call and the task does not get there.
 */
import * as Schema from "effect/Schema";
import {
  completed,
  configMember,
  configUnion,
  defineTaskKind,
  memberHandlers,
  ObjectMeta,
  promiseHandler,
  runTaskController,
  type TaskController,
  TaskStatusSchema,
} from "opstask";
import { taskCrd } from "opstask/crd";
import { type ControlPlane, startControlPlane } from "opstask/testing";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { deployArtifacts, identityOf } from "../../src/cli/deploy/deploy-artifacts.ts";
import { waitFor } from "../support/wait.ts";

const group = "lookups.example.com";
const LookupSpec = Schema.Struct({
  ttlSecondsAfterFinished: Schema.Number.check(Schema.isInt32()),
  config: configUnion({ configMap: Schema.Struct({ name: Schema.String }) }),
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
});

const files = deployArtifacts(lookupKind, { regenerate: "test" });
const fileText = (path: string) => files.find((file) => file.path === path)?.text ?? "";
const identity = identityOf(lookupKind.resource, {});
const tasks = (namespace: string) => `/apis/${group}/v1/namespaces/${namespace}/lookups`;

describe("the generated RBAC of a kind's controller", () => {
  let plane: ControlPlane;
  let namespace: string;
  let controller: TaskController | undefined;

  beforeAll(async () => {
    const crd = taskCrd(lookupKind, LookupSpec);
    plane = await startControlPlane({ crds: [crd] });
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
      ...(as.watchNamespaces === undefined ? {} : { namespace: as.watchNamespaces }),
      timing: { backoffCapMs: 1_000 },
      logLevel: "none",
    });
    await controller.synced;
    return controller;
  };
  const create = (name: string) =>
    plane.kubeClient().request({
      method: "POST",
      path: tasks(namespace),
      body: {
        apiVersion: `${group}/v1`,
        kind: "Lookup",
        metadata: { name },
        spec: { ttlSecondsAfterFinished: 3600, config: { configMap: { name: "settings" } } },
      },
    });
  const stateOf = async (name: string) => {
    const { body } = await plane.kubeClient().request({ method: "GET", path: `${tasks(namespace)}/${name}` });
    return (body as { status?: { state?: string; lastOperation?: { description?: string } } }).status;
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

  it("lets the controller take a task to Succeeded, its handler's declared read included, refused nothing", async () => {
    const running = await startController();
    await create("with-all-rules");
    const status = await waitFor("with-all-rules to succeed", async () => {
      const current = await stateOf("with-all-rules");
      return current?.state === "Succeeded" ? current : undefined;
    });
    expect(status.lastOperation?.description).toBe("ConfigMap settings found");
    expect(running.leading()).toBe(true);
    expect(running.requests.snapshot().filter((request) => request.code === 403)).toEqual([]);
  });

  it("with --watch-namespaces, grants the rules in those namespaces only: the controller works there, is refused elsewhere (issue 35, L8)", async () => {
    const other = await plane.createNamespace("lookups-other");
    const options = { name: "lookups-scoped", watchNamespaces: [namespace] };
    const scoped = deployArtifacts(lookupKind, { regenerate: "test", ...options });
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

  const removals = [
    {
      rule: "configmaps",
      why: "the rule the kind declared for its handler",
      refused: ["get", "configmaps", ""],
    },
    { rule: "lookups/status", why: "the status rule", refused: ["patch", "lookups/status", group] },
  ] as const;
  it.each(removals)(
    "fails without $why: the API server refuses the controller's call",
    async ({ rule, refused }) => {
      const clusterRole = parse(fileText("rbac.yaml").split("\n---\n")[0] ?? "") as {
        rules: Array<{ resources: string[] }>;
      };
      const without = {
        ...clusterRole,
        rules: clusterRole.rules.filter((each) => !each.resources.includes(rule)),
      };
      expect(without.rules.length).toBe(clusterRole.rules.length - 1);
      await plane.apply([without]);
      const [verb, resource, apiGroup] = refused;
      await waitFor(`RBAC to take ${rule} away`, async () =>
        (await canI(verb, resource, apiGroup)) ? undefined : true,
      );

      const running = await startController();
      const name = `without-${rule.replace("/", "-")}`;
      await create(name);
      await waitFor(`the controller's refused ${verb}`, async () =>
        running.requests.count(verb, 403) > 0 ? true : undefined,
      );
      expect((await stateOf(name))?.state).not.toBe("Succeeded");
      await plane.apply(fileText("rbac.yaml"));
      await waitFor(`RBAC to give ${rule} back`, async () =>
        (await canI(verb, resource, apiGroup)) ? true : undefined,
      );
    },
  );
});
