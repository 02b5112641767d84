/**
 * Schedules of an author's own kind (the getting-started Greeting) on a real kube-apiserver, built
 * only from what the package exports: `runTaskController` runs the Greetings, `runScheduleController`
 * creates them from TaskSchedules (the clock injected, the minutes simulated). A run is created and
 * Succeeds through the real handler, and the schedule records it; a guard that says no is a recorded
 * skip and creates nothing; a template the kind's decoder rejects is reported on the schedule, naming
 * the field, and creates nothing. Each schedule's Events say what happened (RunCreated,
 * RunRefusedByGuard).
 */
import { join } from "node:path";
import { type KubeClient, runScheduleController, runTaskController } from "opstask";
import { type ControlPlane, startControlPlane } from "opstask/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { crd, greetingKind } from "../../examples/getting-started/greeting.ts";
import { handlers } from "../../examples/getting-started/handlers.ts";
import { repoRoot } from "../support/cluster.ts";
import { waitFor } from "../support/wait.ts";

const greetings = "/apis/getting-started.opstask.dev/v1alpha1";
const schedulesPath = "/apis/opstask.gardener.cloud/v1alpha1";

let plane: ControlPlane;
beforeAll(async () => {
  plane = await startControlPlane({
    crds: [crd, join(repoRoot, "deploy", "crds", "opstask.gardener.cloud_taskschedules.yaml")],
  });
}, 300_000);
afterAll(() => plane?.stop());

type Json = Record<string, unknown>;
const list = async (client: KubeClient, path: string): Promise<Json[]> =>
  ((await client.request({ method: "GET", path })).body as { items: Json[] }).items;
const get = async (client: KubeClient, path: string): Promise<Json> =>
  (await client.request({ method: "GET", path })).body as Json;

const schedule = (name: string, spec: Json) => ({
  apiVersion: "opstask.gardener.cloud/v1alpha1",
  kind: "TaskSchedule",
  metadata: { name },
  spec: {
    taskKind: { apiVersion: "getting-started.opstask.dev/v1alpha1", kind: "Greeting" },
    schedule: "* * * * *",
    ...spec,
  },
});

describe("a schedule of an author's own kind", () => {
  it("creates runs the kind's controller runs, records a guard's refusal, and reports a bad template", async () => {
    const namespace = await plane.createNamespace("greeting-schedule");
    const client = plane.kubeClient();
    let clock = Date.now();
    const tasks = await runTaskController({
      kind: greetingKind,
      handlers,
      kubeConfig: client,
      namespace,
      logLevel: "none",
    });
    const schedules = await runScheduleController({
      kubeConfig: client,
      namespace,
      targets: [
        { kind: greetingKind, guards: { notToday: async () => ({ allow: false, reason: "not today" }) } },
      ],
      now: () => clock,
      logLevel: "none",
    });
    try {
      await schedules.synced;
      for (const body of [
        schedule("hello-ada", { taskTemplate: { spec: { config: { hello: { name: "Ada" } } } } }),
        schedule("guarded", {
          taskTemplate: { spec: { config: { hello: { name: "Bob" } } } },
          guard: { name: "notToday" },
        }),
        schedule("nameless", { taskTemplate: { spec: { config: { hello: {} } } } }),
      ])
        await client.request({
          method: "POST",
          path: `${schedulesPath}/namespaces/${namespace}/taskschedules`,
          body,
        });
      clock += 61_000;
      await schedules.resync();

      const run = await waitFor(
        "hello-ada's run to succeed",
        async () => {
          const runs = await list(client, `${greetings}/namespaces/${namespace}/greetings`);
          const found = runs.find((item) => String((item.metadata as Json).name).startsWith("hello-ada-"));
          return (found?.status as Json | undefined)?.state === "Succeeded" ? found : undefined;
        },
        90_000,
      ); // under the whole suite's load the apiserver can take tens of seconds
      expect((run.status as Json).lastOperation).toMatchObject({ description: "Hello, Ada!" });
      const status = await waitFor("hello-ada's status to record the success", async () => {
        const current = (
          await get(client, `${schedulesPath}/namespaces/${namespace}/taskschedules/hello-ada`)
        ).status as Json | undefined;
        return current?.lastSuccessfulTime === undefined ? undefined : current;
      });
      expect(status.lastScheduleTime).toBeDefined();

      const guarded = await waitFor("the guard's refusal recorded", async () => {
        const current = (await get(client, `${schedulesPath}/namespaces/${namespace}/taskschedules/guarded`))
          .status as { skippedRuns?: Json[] } | undefined;
        return current?.skippedRuns?.length === 1 ? current : undefined;
      });
      expect(guarded.skippedRuns?.[0]).toMatchObject({ reason: "GuardRefused", message: "not today" });

      const nameless = await waitFor("the bad template reported", async () => {
        const current = (await get(client, `${schedulesPath}/namespaces/${namespace}/taskschedules/nameless`))
          .status as { conditions?: Json[] } | undefined;
        return current?.conditions?.[0];
      });
      expect(nameless).toMatchObject({ type: "Ready", status: "False", reason: "InvalidTemplate" });
      expect(String(nameless.message)).toContain("spec.taskTemplate.spec.config.hello.name");

      // Events on the schedules say what happened, for `kubectl describe taskschedule`.
      const reasons = await waitFor("the schedules' Events", async () => {
        const events = await list(client, `/apis/events.k8s.io/v1/namespaces/${namespace}/events`);
        const of = (name: string) =>
          events.filter((event) => (event.regarding as Json).name === name).map((event) => event.reason);
        const found = { "hello-ada": of("hello-ada"), guarded: of("guarded") };
        return found["hello-ada"].length > 0 && found.guarded.length > 0 ? found : undefined;
      });
      expect(reasons).toEqual({ "hello-ada": ["RunCreated"], guarded: ["RunRefusedByGuard"] });

      const names = (await list(client, `${greetings}/namespaces/${namespace}/greetings`)).map((item) =>
        String((item.metadata as Json).name),
      );
      expect(names.filter((name) => !name.startsWith("hello-ada-"))).toEqual([]);
    } finally {
      await schedules.stop();
      await tasks.stop();
    }
  });
});
