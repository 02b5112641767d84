/**
 * docs/contract.md §16 on a real kube-apiserver with etcd-druid's CRDs: a presync snapshot as etcd-druid
 * v0.38.1 creates it (`presync-snapshot-hibernation-0`, owned by its Etcd as controller), created while
 * a scheduled snapshot runs and another task waits, is admitted next under both duplicate policies:
 * never Rejected, ahead of the older queued task.
 *
 * The controller runs with its real handlers and services; the backup-restore sidecar is a stand-in
 * HTTP server on 127.0.0.1 that holds every snapshot POST until the test releases it, so which task is
 * running is the test's to decide.
 */
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { CustomObjectsApi, type KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TaskStatus } from "../../src/api/status.ts";
import { createReadyEtcd } from "../../src/devcluster/ready-etcd.ts";
import { etcdHandlerLayer, etcdHandlers } from "../../src/etcd/registry.ts";
import type { DuplicatePolicy } from "../../src/machine/types.ts";
import { createTestNamespace, druidCrds, useControlPlane } from "../support/cluster.ts";
import { type RunningController, startControllerWith } from "../support/controller.ts";
import { waitFor } from "../support/wait.ts";

const cluster = useControlPlane({ crds: druidCrds });
const tasks = { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcdopstasks" };
const etcdName = "etcd-main";
const presyncName = "presync-snapshot-hibernation-0";

/** A backup-restore stand-in that answers each snapshot POST only when the test releases it. */
const startSidecar = async () => {
  const held: ServerResponse[] = [];
  let posts = 0;
  const server = createServer((request, response) => {
    request.resume();
    posts += 1;
    held.push(response);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    posts: () => posts,
    held: () => held.length,
    /** Answers the oldest held POST with 200. */
    release: () => held.shift()?.writeHead(200, { "content-type": "application/json" }).end("{}"),
    stop: () =>
      new Promise<void>((resolve) => {
        for (const response of held.splice(0)) response.destroy();
        server.close(() => resolve());
      }),
  };
};

describe.each<DuplicatePolicy>(["reject", "queue"])(
  "etcd-druid's presync snapshot beside a running task, --duplicate-policy %s (contract §16)",
  (policy) => {
    let kc: KubeConfig;
    let api: CustomObjectsApi;
    let namespace: string;
    let etcdUid: string;
    let sidecar: Awaited<ReturnType<typeof startSidecar>>;
    let controller: RunningController;

    const create = (name: string, ownerReferences?: ReadonlyArray<Record<string, unknown>>) =>
      api.createNamespacedCustomObject({
        ...tasks,
        namespace,
        body: {
          apiVersion: "druid.gardener.cloud/v1alpha1",
          kind: "EtcdOpsTask",
          metadata: { name, namespace, ...(ownerReferences === undefined ? {} : { ownerReferences }) },
          spec: { etcdName, config: { onDemandSnapshot: { type: "full" } } },
        },
      });

    const status = async (name: string): Promise<TaskStatus> => {
      const task = (await api.getNamespacedCustomObject({ ...tasks, namespace, name })) as {
        status?: TaskStatus;
      };
      return task.status ?? {};
    };

    const stateOf = (name: string, state: TaskStatus["state"]) =>
      waitFor(`${name} ${state}`, async () => {
        const now = await status(name);
        return now.state === state ? now : undefined;
      });

    beforeAll(async () => {
      kc = cluster().makeKubeConfig();
      api = kc.makeApiClient(CustomObjectsApi);
      namespace = await createTestNamespace(kc, `presync-${policy}`);
      sidecar = await startSidecar();
      await createReadyEtcd(kc, { name: etcdName, namespace, backupPort: sidecar.port });
      const etcd = (await api.getNamespacedCustomObject({
        group: "druid.gardener.cloud",
        version: "v1alpha1",
        plural: "etcds",
        namespace,
        name: etcdName,
      })) as { metadata: { uid: string } };
      etcdUid = etcd.metadata.uid;
      // The rule for the short name routes the .svc host the snapshot dials (contract §9).
      const resolve = [{ host: `${etcdName}-client.${namespace}`, port: "*" as const, address: "127.0.0.1" }];
      controller = await startControllerWith(
        kc,
        etcdHandlers,
        etcdHandlerLayer({ kubeConfig: kc, resolve }),
        { duplicatePolicy: policy },
        namespace,
      );
    }, 120_000);

    afterAll(async () => {
      await controller?.stop();
      await sidecar?.stop();
    });

    it("is admitted next: never Rejected, ahead of the older queued task", async () => {
      await create("scheduled");
      await stateOf("scheduled", "InProgress");
      await waitFor("the scheduled snapshot's POST", () => (sidecar.held() === 1 ? true : undefined));

      const queued = (await create("queued")) as { metadata: { creationTimestamp: string } };
      await stateOf("queued", policy === "reject" ? "Rejected" : "Pending");
      // Older by creationTimestamp (whole seconds), not only by name, which would put the presync first.
      const queuedAt = Date.parse(queued.metadata.creationTimestamp);
      await waitFor("the next second", () => (Date.now() >= queuedAt + 1_000 ? true : undefined));

      // As etcd-druid's createPreSyncTask writes it: druidv1alpha1.GetAsOwnerReference(etcd.ObjectMeta).
      await create(presyncName, [
        {
          apiVersion: "druid.gardener.cloud/v1alpha1",
          kind: "Etcd",
          name: etcdName,
          uid: etcdUid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ]);
      const waiting = await waitFor("the presync task waiting for the scheduled one", async () => {
        const now = await status(presyncName);
        return now.lastOperation?.description ===
          "Waiting for EtcdOpsTask scheduled on the same etcd to finish"
          ? now
          : undefined;
      });
      expect(waiting.state).toBe("Pending");
      expect(waiting.lastErrors ?? []).toEqual([]);

      sidecar.release();
      await stateOf("scheduled", "Succeeded");
      await stateOf(presyncName, "InProgress");
      await waitFor("the presync snapshot's POST", () => (sidecar.posts() === 2 ? true : undefined));
      if (policy === "queue") {
        const queued = await status("queued");
        expect(queued.state).toBe("Pending");
        expect(queued.lastOperation?.description).toBe(
          `Waiting for EtcdOpsTask ${presyncName} on the same etcd to finish`,
        );
      }

      sidecar.release();
      expect((await stateOf(presyncName, "Succeeded")).lastErrors ?? []).toEqual([]);
      if (policy === "queue") {
        await stateOf("queued", "InProgress");
        await waitFor("the queued snapshot's POST", () => (sidecar.posts() === 3 ? true : undefined));
        sidecar.release();
        await stateOf("queued", "Succeeded");
      }
    }, 120_000);
  },
);
