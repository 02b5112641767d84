/**
 * Issue 27 point 2 on a real kube-apiserver, through the public entries only: a library kind's
 * `status.result` and its standard conditions survive the apiserver (taskCrd declares them), so
 * `kubectl wait --for=condition=Succeeded` returns 0 on a finished task and its result field is read
 * from status with kubectl; a failed task satisfies `--for=condition=Failed` instead.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import * as Schema from "effect/Schema";
import {
  configMember,
  configUnion,
  defineTaskKind,
  failed,
  memberHandlers,
  ObjectMeta,
  promiseHandler,
  runTaskController,
  TaskStatusSchema,
} from "opstask";
import { taskCrd, withDefault } from "opstask/crd";
import { type ControlPlane, startControlPlane } from "opstask/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const kubectl = "/usr/bin/kubectl";
const run = promisify(execFile);

const VacuumSpec = Schema.Struct({
  ttlSecondsAfterFinished: Schema.Number.check(Schema.isInt()).pipe(withDefault(600)),
  config: configUnion({ vacuum: Schema.Struct({ table: Schema.String, locked: Schema.Boolean }) }),
});
const VacuumSchema = Schema.Struct({
  metadata: ObjectMeta,
  spec: VacuumSpec,
  status: Schema.optionalKey(TaskStatusSchema),
});
type Vacuum = typeof VacuumSchema.Type;

const vacuumKind = defineTaskKind({
  group: "results.opstask.dev",
  version: "v1",
  kind: "Vacuum",
  plural: "vacuums",
  finalizer: "results.opstask.dev/vacuum",
  schema: VacuumSchema,
  ttlSeconds: (task) => task.spec.ttlSecondsAfterFinished,
  member: (task) => configMember(task.spec.config),
  status: (task) => task.status,
  result: Schema.Struct({ reclaimedBytes: Schema.Number.check(Schema.isInt()), table: Schema.String }),
});

const handlers = memberHandlers((task: Vacuum) => task.spec.config, {
  vacuum: promiseHandler({
    execute: (_task, { config }) =>
      config.locked
        ? failed("Table locked", { code: "ERR_LOCKED", message: `${config.table} is locked` })
        : vacuumKind.succeeded({
            description: `Vacuumed ${config.table}`,
            result: { reclaimedBytes: 4096, table: config.table },
          }),
  }),
});

const crd = taskCrd(vacuumKind, VacuumSpec);

let plane: ControlPlane;
beforeAll(async () => {
  plane = await startControlPlane({ crds: [crd] });
}, 300_000);
afterAll(() => plane?.stop());

/** kubectl as the admin of the control plane; its exit code and output. */
const kubectlRun = async (args: ReadonlyArray<string>) => {
  try {
    const { stdout } = await run(kubectl, [...args], {
      env: { ...process.env, KUBECONFIG: plane.kubeconfigPath },
    });
    return { code: 0, stdout };
  } catch (error) {
    const failure = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failure.code ?? -1, stdout: `${failure.stdout ?? ""}${failure.stderr ?? ""}` };
  }
};

describe("results and conditions on a real kube-apiserver", () => {
  it("kubectl wait --for=condition=Succeeded returns 0 and the result is read from status", async () => {
    const namespace = await plane.createNamespace("results");
    const client = plane.kubeClient();
    const controller = await runTaskController({
      kind: vacuumKind,
      handlers,
      kubeConfig: client,
      namespace,
      logLevel: "none",
    });
    try {
      for (const [name, locked] of [
        ["orders", false],
        ["ledger", true],
      ] as const)
        await client.request({
          method: "POST",
          path: `/apis/results.opstask.dev/v1/namespaces/${namespace}/vacuums`,
          body: {
            apiVersion: "results.opstask.dev/v1",
            kind: "Vacuum",
            metadata: { name },
            spec: { config: { vacuum: { table: name, locked } } },
          },
        });
      const wait = (condition: string, name: string) =>
        kubectlRun([
          "wait",
          `--for=condition=${condition}`,
          `vacuum/${name}`,
          "-n",
          namespace,
          "--timeout=60s",
        ]);

      const succeeded = await wait("Succeeded", "orders");
      expect(succeeded).toEqual({ code: 0, stdout: expect.stringContaining("condition met") });
      const read = (name: string, path: string) =>
        kubectlRun(["get", `vacuum/${name}`, "-n", namespace, "-o", `jsonpath={${path}}`]);
      expect((await read("orders", ".status.result.reclaimedBytes")).stdout).toBe("4096");
      expect((await read("orders", ".status.result.table")).stdout).toBe("orders");
      const generation = (await read("orders", ".metadata.generation")).stdout;
      expect(
        (await read("orders", '.status.conditions[?(@.type=="Succeeded")].observedGeneration')).stdout,
      ).toBe(generation);

      expect((await wait("Failed", "ledger")).code).toBe(0);
      expect((await wait("Succeeded=False", "ledger")).code).toBe(0);
      expect((await read("ledger", '.status.conditions[?(@.type=="Failed")].reason')).stdout).toBe("Failed");
      expect((await read("ledger", ".status.result")).stdout).toBe("");
    } finally {
      await controller.stop();
    }
  }, 180_000);
});
