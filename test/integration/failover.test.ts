/**
 * Leader election with two controller processes (the real `opstask controller` command as deployed:
 * bundled as the image bundles it, scripts/bundle.ts, with the Deployment's NODE_OPTIONS and env, so
 * the shipped artifact and settings run a real snapshot here): the leader is
 * killed with SIGKILL while a snapshot request is in flight; the standby takes the Lease after it
 * expires (15 s lease, client-go's timings) and finishes the task. The snapshot request is repeated at
 * most once: the killed leader never persisted its result (the at-least-once rule).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { CoordinationV1Api, CustomObjectsApi, type KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundle } from "../../scripts/bundle.ts";
import type { TaskStatus } from "../../src/api/status.ts";
import { createReadyEtcd } from "../../src/devcluster/ready-etcd.ts";
import { createTestNamespace, repoRoot, useControlPlane } from "../support/cluster.ts";
import { deployedEnv } from "../support/deployed-env.ts";
import { waitFor } from "../support/wait.ts";

const crds = ["druid.gardener.cloud_etcdopstasks.yaml", "druid.gardener.cloud_etcds.yaml"].map((file) =>
  join(repoRoot, "deploy", "crds", file),
);
const cluster = useControlPlane({ crds });
const druid = { group: "druid.gardener.cloud", version: "v1alpha1" };
const leaseName = "opstask-failover-test";

describe("leader election: failover while a task executes", () => {
  let kc: KubeConfig;
  let namespace: string;
  let standIn: Server;
  const posts: number[] = [];
  const controllers = new Map<number, ChildProcess>();
  let binary = "";

  const startControllerProcess = (port: number): ChildProcess => {
    const child = spawn(
      process.execPath,
      [
        binary,
        "controller",
        `--kubeconfig=${cluster().kubeconfigPath}`,
        `--namespace=${namespace}`,
        "--leader-elect",
        `--leader-election-namespace=${namespace}`,
        `--leader-election-id=${leaseName}`,
        `--resolve=etcd-fo-client.${namespace}:${port}:127.0.0.1`,
        "--metrics-address=0",
        "--probe-address=0",
        "--log-level=warn",
      ],
      { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, ...deployedEnv() } },
    );
    if (child.pid !== undefined) controllers.set(child.pid, child);
    return child;
  };

  const holder = async (): Promise<string | undefined> => {
    try {
      const lease = await kc
        .makeApiClient(CoordinationV1Api)
        .readNamespacedLease({ name: leaseName, namespace });
      return lease.spec?.holderIdentity || undefined;
    } catch {
      return undefined;
    }
  };

  beforeAll(async () => {
    binary = await bundle("src/cli/main.ts", ".build/test-failover");
    kc = cluster().makeKubeConfig();
    namespace = await createTestNamespace(kc, "failover");
    // The backup-restore stand-in answers a snapshot after 4 s, so that the leader dies mid-request.
    standIn = createServer((request, response) => {
      if (request.method === "POST" && request.url?.startsWith("/snapshot/full")) posts.push(Date.now());
      setTimeout(() => response.writeHead(200, { "content-type": "application/json" }).end("{}"), 4_000);
    });
    await new Promise<void>((resolve) => standIn.listen(0, "127.0.0.1", () => resolve()));
    const port = (standIn.address() as AddressInfo).port;
    await createReadyEtcd(kc, {
      name: "etcd-fo",
      namespace,
      backupPort: port,
      storePrefix: "fo",
      message: "failover test",
    });
    startControllerProcess(port);
    startControllerProcess(port);
  }, 60_000);

  afterAll(async () => {
    for (const child of controllers.values()) child.kill("SIGKILL");
    await new Promise<void>((resolve) => standIn?.close(() => resolve()));
  });

  it("the standby finishes the task after the leader is killed", async () => {
    const first = await waitFor("a leader", holder, 20_000);
    const leaderPid = Number(first.split("_").at(-1));
    expect(controllers.has(leaderPid)).toBe(true);

    const api = kc.makeApiClient(CustomObjectsApi);
    await api.createNamespacedCustomObject({
      ...druid,
      plural: "etcdopstasks",
      namespace,
      body: {
        apiVersion: "druid.gardener.cloud/v1alpha1",
        kind: "EtcdOpsTask",
        metadata: { name: "snap", namespace },
        spec: {
          etcdName: "etcd-fo",
          ttlSecondsAfterFinished: 3600,
          config: { onDemandSnapshot: { type: "full" } },
        },
      },
    });
    await waitFor("the leader's snapshot request", () => (posts.length > 0 ? true : undefined), 20_000);
    controllers.get(leaderPid)?.kill("SIGKILL");

    const next = await waitFor(
      "a new leader",
      async () => {
        const current = await holder();
        return current !== undefined && current !== first ? current : undefined;
      },
      40_000,
    );
    expect(Number(next.split("_").at(-1))).not.toBe(leaderPid);

    const status = await waitFor(
      "the task to succeed",
      async () => {
        const task = (await api.getNamespacedCustomObject({
          ...druid,
          plural: "etcdopstasks",
          namespace,
          name: "snap",
        })) as { status?: TaskStatus };
        return task.status?.state === "Succeeded" ? task.status : undefined;
      },
      30_000,
    );
    expect(status.lastOperation?.description).toBe("Snapshot created successfully");
    // Once by the killed leader (result never persisted), once by the new one: at least once, at most twice.
    expect(posts.length).toBe(2);
  }, 120_000);
});
