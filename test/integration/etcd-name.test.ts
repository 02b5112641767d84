/**
 * Security finding 2 (issue 16) on a real kube-apiserver: `spec.etcdName` is an object name, never a
 * path. Before the fix, a task for "e005/status" read Etcd e005 through its status subresource, was
 * admitted in an admission group of its own, and took a snapshot of e005 while another task did.
 *
 * The controller runs with its real handlers and real services; the backup-restore sidecar is a
 * stand-in HTTP server on 127.0.0.1 that holds every snapshot POST for a while and records how many
 * were in flight at once.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { CustomObjectsApi, type KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TaskStatus } from "../../src/api/status.ts";
import { createReadyEtcd } from "../../src/devcluster/ready-etcd.ts";
import { etcdHandlerLayer, etcdHandlers } from "../../src/etcd/registry.ts";
import { createTestNamespace, druidCrds, useControlPlane } from "../support/cluster.ts";
import { type RunningController, startControllerWith } from "../support/controller.ts";

const cluster = useControlPlane({ crds: druidCrds });
const tasks = { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcdopstasks" };
const etcdName = "e005";
const holdMs = 1_500;

/** A backup-restore stand-in: every POST is answered 200 after `holdMs`; counts what overlaps. */
const startSidecar = async () => {
  let inFlight = 0;
  const seen = { posts: 0, maxInFlight: 0 };
  const server: Server = createServer((request, response) => {
    request.resume();
    seen.posts += 1;
    inFlight += 1;
    seen.maxInFlight = Math.max(seen.maxInFlight, inFlight);
    setTimeout(() => {
      inFlight -= 1;
      response.writeHead(200, { "content-type": "application/json" }).end("{}");
    }, holdMs);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    seen,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
};

describe("spec.etcdName is an object name, never a path (finding 2)", () => {
  let kc: KubeConfig;
  let api: CustomObjectsApi;
  let namespace: string;
  let sidecar: Awaited<ReturnType<typeof startSidecar>>;
  let controller: RunningController;

  const create = (name: string, etcd: string) =>
    api.createNamespacedCustomObject({
      ...tasks,
      namespace,
      body: {
        apiVersion: "druid.gardener.cloud/v1alpha1",
        kind: "EtcdOpsTask",
        metadata: { name, namespace },
        spec: { etcdName: etcd, config: { onDemandSnapshot: { type: "full" } } },
      },
    });

  const terminal = async (name: string): Promise<TaskStatus> => {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const task = (await api.getNamespacedCustomObject({ ...tasks, namespace, name })) as {
        status?: TaskStatus;
      };
      const state = task.status?.state;
      if (state === "Succeeded" || state === "Failed" || state === "Rejected") return task.status ?? {};
      if (Date.now() > deadline)
        throw new Error(`${name} not terminal after 60 s: ${JSON.stringify(task.status)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };

  beforeAll(async () => {
    kc = cluster().makeKubeConfig();
    api = kc.makeApiClient(CustomObjectsApi);
    namespace = await createTestNamespace(kc, "names");
    sidecar = await startSidecar();
    await createReadyEtcd(kc, { name: etcdName, namespace, backupPort: sidecar.port });
    const resolve = [{ host: `${etcdName}-client.${namespace}`, port: "*" as const, address: "127.0.0.1" }];
    controller = await startControllerWith(
      kc,
      etcdHandlers,
      etcdHandlerLayer({ kubeConfig: kc, resolve }),
      {},
      namespace,
    );
  }, 120_000);

  afterAll(async () => {
    await controller?.stop();
    await sidecar?.stop();
  });

  it('tasks for "e005" and "e005/status" never run at once: the second is Rejected, naming the field', async () => {
    await Promise.all([create("plain", etcdName), create("via-status", `${etcdName}/status`)]);
    const [plain, viaStatus] = await Promise.all([terminal("plain"), terminal("via-status")]);
    expect(plain.state).toBe("Succeeded");
    expect(viaStatus.state).toBe("Rejected");
    expect(viaStatus.lastErrors?.[0]?.code).toBe("ERR_GET_ETCD");
    expect(viaStatus.lastErrors?.[0]?.description).toContain(
      'cause: spec.etcdName: "e005/status" is not a valid name: expected a DNS-1123 subdomain',
    );
    expect(sidecar.seen.maxInFlight).toBe(1);
    expect(sidecar.seen.posts).toBe(1);
  });

  it.each([
    ["dot-dot", "../etcds/e005"],
    ["trailing-dot", "e005."],
    ["upper-case", "E005"],
  ])("%s: %j is Rejected as an invalid name before any snapshot", async (name, etcd) => {
    const posts = sidecar.seen.posts;
    await create(name, etcd);
    const status = await terminal(name);
    expect(status.state).toBe("Rejected");
    expect(status.lastErrors?.[0]?.description).toContain(
      `cause: spec.etcdName: ${JSON.stringify(etcd)} is not a valid name`,
    );
    expect(sidecar.seen.posts).toBe(posts);
  });
});
