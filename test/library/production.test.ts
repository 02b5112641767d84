/**
 * runTaskController on a real kube-apiserver: issue 14 point 2 (the handler context: object reader,
 * Events, logger, client, attempt), point 3 (probes, metrics with the kind's own group label, leader
 * election, a clear error when the CRD is missing or the cluster does not answer) and point 6 (the
 * field manager of the library's writes is configurable).
 */
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import {
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  EventsV1Api,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from "@kubernetes/client-node";
import * as Effect from "effect/Effect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serveController } from "../../src/cli/controller-command.ts";
import { readControllerOptions } from "../../src/cli/options.ts";
import {
  completed,
  defineTaskKind,
  type HandlerContext,
  memberHandlers,
  promiseHandler,
  retry,
  runTaskController,
  type TaskController,
  TaskControllerStartError,
} from "../../src/index.ts";
import { makeKubeClient } from "../../src/kube/kube-client.ts";
import { createTestNamespace, useControlPlane } from "../support/cluster.ts";
import { waitFor } from "../support/wait.ts";
import { type Chore, ChoreSchema, choreKind, Group, Kind, Plural, Version } from "./new-kind/chore-kind.ts";

const cluster = useControlPlane({ crds: [fileURLToPath(new URL("./new-kind/crd.yaml", import.meta.url))] });
const resource = { group: Group, version: Version, plural: Plural };
const configMaps = { group: "", version: "v1", plural: "configmaps" } as const;

const chore = (name: string, config: object) => ({
  apiVersion: `${Group}/${Version}`,
  kind: Kind,
  metadata: { name },
  spec: { house: "villa", ttlSecondsAfterFinished: 600, config },
});

const get = async (url: string): Promise<{ status: number; body: string }> => {
  const response = await fetch(url);
  return { status: response.status, body: await response.text() };
};

/** A port nobody listens on (bound, then closed). */
const closedPort = async (): Promise<number> =>
  new Promise((resolve) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address !== null ? address.port : 1));
    });
  });

describe("runTaskController's start checks (point 3)", () => {
  it("fails with a clear error when the CRD is not installed", async () => {
    const absentKind = defineTaskKind({
      group: "absent.opstask.dev",
      version: "v1",
      kind: "Chore",
      plural: "chores",
      finalizer: "absent.opstask.dev/chore",
      schema: ChoreSchema,
      ttlSeconds: (task) => task.spec.ttlSecondsAfterFinished,
      member: () => "sweep",
      status: (task) => task.status,
    });
    const started = runTaskController({
      kind: absentKind,
      handlers: {},
      kubeConfig: cluster().makeKubeConfig(),
      crdManifest: "chores.yaml",
      logLevel: "none",
    });
    await expect(started).rejects.toBeInstanceOf(TaskControllerStartError);
    await expect(started).rejects.toThrow(
      "the CRD chores.absent.opstask.dev is not installed: kubectl apply -f chores.yaml",
    );
  });

  it("fails with a clear error when the cluster does not answer within startTimeoutMs", async () => {
    const server = `https://127.0.0.1:${await closedPort()}`;
    const started = runTaskController({
      kind: choreKind,
      handlers: {},
      kubeConfig: makeKubeClient({ server, credentials: async () => ({ headers: {} }) }),
      startTimeoutMs: 1_500,
      logLevel: "none",
    });
    await expect(started).rejects.toMatchObject({ reason: "Unreachable" });
    await expect(started).rejects.toThrow(`the cluster at ${server} did not answer within 2 s`);
  });
});

describe("opstask controller over runTaskController (point 3)", () => {
  it("exits with the missing CRD named instead of waiting forever", async () => {
    const written: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    }) as typeof process.stderr.write;
    try {
      const options = readControllerOptions(
        ["--metrics-address=0", "--probe-address=0", "--log-level=error"],
        {},
      );
      // This control plane has the Chore CRD only: no EtcdOpsTask.
      const served = await serveController(cluster().makeKubeConfig(), options, new AbortController().signal);
      expect(served).toBe("failed");
    } finally {
      process.stderr.write = write;
    }
    expect(written.join("")).toContain(
      "opstask controller: the CRD etcdopstasks.druid.gardener.cloud is not installed: kubectl apply -f deploy/crds/",
    );
  });
});

describe("a controller with its production wiring, on a real API server", () => {
  let kc: KubeConfig;
  let namespace: string;
  let controller: TaskController;
  const contexts: HandlerContext[] = [];
  const read: unknown[] = [];

  beforeAll(async () => {
    kc = cluster().makeKubeConfig();
    namespace = await createTestNamespace(kc, "production");
    await kc.makeApiClient(CoreV1Api).createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: "targets" }, data: { db: "198.18.0.7" } },
    });
    controller = await runTaskController({
      kind: choreKind,
      handlers: memberHandlers((task: Chore) => task.spec.config, {
        // Polls for ten minutes on its first call: only a user's edit can bring the second call sooner.
        sweep: promiseHandler({
          execute: (_task, { attempt }) =>
            attempt === 1 ? retry("Waiting for the broom", { afterMs: 600_000 }) : completed("Swept"),
        }),
        ping: promiseHandler({
          execute: async (task, context) => {
            contexts.push(context);
            const targets = await context.objects.get(configMaps, task.metadata.namespace, "targets");
            read.push(targets, await context.objects.get(configMaps, task.metadata.namespace, "none"));
            const address = (targets as { data?: Record<string, string> } | undefined)?.data?.[
              context.config.target
            ];
            context.events.record("Normal", "TargetResolved", `${context.config.target} is ${address}`);
            context.log.info("pinging", { address });
            return completed(`Pinged ${address}`);
          },
        }),
      }),
      kubeConfig: kc,
      namespace,
      fieldManager: "chore-operator",
      probes: "127.0.0.1:0",
      metrics: { address: "127.0.0.1:0", secure: false },
      logLevel: "none",
    });
  });
  afterAll(async () => {
    await controller?.stop();
  });

  it("gives the handler its context: objects, Events, client, attempt, its own config", async () => {
    const api = kc.makeApiClient(CustomObjectsApi);
    await api.createNamespacedCustomObject({
      ...resource,
      namespace,
      body: chore("p", { ping: { target: "db" } }),
    });
    const task = await waitFor("p to succeed", async () => {
      const object = (await api.getNamespacedCustomObject({ ...resource, namespace, name: "p" })) as {
        status?: { state?: string; lastOperation?: { description?: string } };
        metadata: { managedFields?: Array<{ manager?: string; subresource?: string }> };
      };
      return object.status?.state === "Succeeded" ? object : undefined;
    });
    expect(task.status?.lastOperation?.description).toBe("Pinged 198.18.0.7");
    expect(read[0]).toMatchObject({ metadata: { name: "targets" }, data: { db: "198.18.0.7" } });
    expect(read[1]).toBeUndefined();
    expect(contexts[0]?.attempt).toBe(1);
    expect(contexts[0]?.phase).toBe("execute");
    expect(contexts[0]?.kube?.server).toBe(kc.getCurrentCluster()?.server);
    expect(contexts[0]?.signal.aborted).toBe(false);
    const events = await waitFor("the handler's Event", async () => {
      const list = await kc
        .makeApiClient(EventsV1Api)
        .listNamespacedEvent({ namespace, fieldSelector: "regarding.name=p" });
      const found = list.items.filter((event) => event.reason === "TargetResolved");
      return found.length > 0 ? found : undefined;
    });
    expect(events[0]?.note).toBe("db is 198.18.0.7");
    // point 6: our writes carry the configured field manager, and only it.
    const managers = new Set((task.metadata.managedFields ?? []).map((entry) => entry.manager));
    expect(managers.has("chore-operator")).toBe(true);
    expect(managers.has("opstask")).toBe(false);
  });

  it("runs a polling handler again at once when a user edits the task (point 6)", async () => {
    const api = kc.makeApiClient(CustomObjectsApi);
    await api.createNamespacedCustomObject({
      ...resource,
      namespace,
      body: chore("s", { sweep: { room: "hall" } }),
    });
    const read = async () =>
      (await api.getNamespacedCustomObject({ ...resource, namespace, name: "s" })) as {
        status?: { state?: string; lastOperation?: { description?: string } };
      };
    await waitFor("s to poll", async () =>
      (await read()).status?.lastOperation?.description === "Waiting for the broom" ? true : undefined,
    );
    await api.patchNamespacedCustomObject(
      { ...resource, namespace, name: "s", body: { metadata: { labels: { broom: "found" } } } },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
    const done = await waitFor("s to succeed after the edit", async () => {
      const task = await read();
      return task.status?.state === "Succeeded" ? task : undefined;
    });
    expect(done.status?.lastOperation?.description).toBe("Swept");
  });

  it("serves /healthz, /readyz and metrics labelled with the kind's own group word", async () => {
    expect(controller.probesUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(await get(`${controller.probesUrl}/healthz`)).toEqual({ status: 200, body: "ok\n" });
    expect(await get(`${controller.probesUrl}/readyz`)).toEqual({ status: 200, body: "ok\n" });
    const metrics = await waitFor("the finished task in the metrics", async () => {
      const { body } = await get(`${controller.metricsUrl}/metrics`);
      return body.includes("opstask_tasks_total{") ? body : undefined;
    });
    expect(metrics).toContain(
      `opstask_tasks_total{type="ping",state="Succeeded",house="villa",namespace="${namespace}"} 1`,
    );
    expect(metrics).not.toContain('etcd="');
    expect(metrics).toContain("opstask_leader 1");
  });
});

describe("leader election (point 3)", () => {
  it("runs one replica at a time; the standby takes over when the leader stops", async () => {
    const kc = cluster().makeKubeConfig();
    const namespace = await createTestNamespace(kc, "leases");
    const options = {
      kind: choreKind,
      handlers: {
        sweep: {
          admit: () => Effect.succeed(completed("ok")),
          execute: () => Effect.succeed(completed("ok")),
          cleanup: () => Effect.succeed(completed("ok")),
        },
      },
      kubeConfig: kc,
      namespace,
      logLevel: "none" as const,
    };
    const first = await runTaskController({
      ...options,
      leaderElection: { name: "chores", identity: "first" },
    });
    await first.synced;
    const second = await runTaskController({
      ...options,
      leaderElection: { name: "chores", identity: "second" },
    });
    try {
      expect(first.leading()).toBe(true);
      expect(second.leading()).toBe(false);
      const lease = await kc
        .makeApiClient(CoordinationV1Api)
        .readNamespacedLease({ namespace, name: "chores" });
      expect(lease.spec?.holderIdentity).toBe("first");
      await first.stop();
      expect(await first.done).toBe("stopped");
      await second.synced;
      expect(second.leading()).toBe(true);
    } finally {
      await first.stop();
      await second.stop();
    }
  });
});
