/**
 * Issue 26 on a real cluster: `recoverFromQuorumLoss` brings a 3-member etcd cluster back from a
 * permanent quorum loss while its controller is killed twice mid-recovery.
 *
 * The lab (src/devcluster/lab) runs the members under the lab's etcd-wrapper (etcd-wrapper-image.ts),
 * so their backup-restore sidecars initialize each data directory as under druid: a member whose
 * volume is new restores it from the store, a scale-up member joins as a learner and is promoted.
 * The members' data is on PVCs of the lab's provisioner (a deleted PVC's directory is deleted).
 *
 * The loss: keys written and a full snapshot taken; then a ResourceQuota of one pod in the etcd's
 * namespace keeps members 1 and 2 from coming back, and their PVCs and pods are deleted: their data
 * is gone and member 0 alone has no quorum. The quota is lifted once the recovery has scaled the
 * StatefulSet down (the operator's fix of whatever took the members away).
 *
 * etcd-druid is not deployed: `startDruidStandIn` (support/druid-stand-in.ts) stands in for druid's
 * Etcd controller and does only these of its duties: the Etcd's Ready/AllMembersReady conditions from
 * the members' readiness (druid reads member Leases), and on `druid.gardener.cloud/operation:
 * reconcile` without the suspend annotation, etcd.conf.yaml for the Etcd's replicas, the StatefulSet
 * scaled to them and the operation annotation removed.
 *
 * Crashes: the Lease-holding controller pod is deleted once DeletePVCs is recorded complete and once
 * while WaitPodReady waits (member 0 restoring), both read from the task's
 * `druid.gardener.cloud/quorum-recovery-last-completed-step` annotation.
 *
 * Asserted: the task Succeeds; one cluster of 3 voting members, each healthy; the keys written before
 * the snapshot read back through a member that was rebuilt; a StepCompleted Event for each of the
 * 13 steps exactly once; the Etcd's suspend and protection annotations gone.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  EventsV1Api,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyManifests, deployDir } from "../../src/devcluster/lab/apply-manifests.ts";
import { renderKustomization } from "../../src/devcluster/lab/kustomize.ts";
import { recoveryStepNames } from "../../src/etcd/recover-from-quorum-loss/handler.ts";
import { waitFor } from "../support/wait.ts";
import { startDruidStandIn } from "./support/druid-stand-in.ts";
import { createTask, runTask } from "./support/lab.ts";
import { leaderPod } from "./support/lab-controller.ts";
import { EtcdName, type Lab, type StartingLab, startLab } from "./support/start-lab.ts";

const tasks = { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcdopstasks" };
const etcds = { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcds" };
const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
const Progress = "druid.gardener.cloud/quorum-recovery-last-completed-step";
const Confirm = "druid.gardener.cloud/confirm-recovery";
const say = (line: string) => process.stderr.write(`${new Date().toISOString()} ${line}\n`);

let lab: Lab | undefined;
let starting: StartingLab | undefined;
const running = (): Lab => {
  if (lab === undefined) throw new Error("the lab did not start (see beforeAll's error)");
  return lab;
};

// The admin kubeconfig where the test can read it when the lab fails to start (memberLogs).
const kubeconfigDir = mkdtempSync(join(tmpdir(), "quorum-recovery-"));
const kubeconfigPath = join(kubeconfigDir, "kubeconfig");

/** The etcd pods' last log lines, for a lab whose members did not become Ready. */
const memberLogs = async (): Promise<string> => {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(kubeconfigPath);
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const lines: string[] = [];
  for (const namespace of (await core.listNamespace()).items.map((ns) => ns.metadata?.name ?? ""))
    for (const pod of (
      await core.listNamespacedPod({ namespace, labelSelector: `app.kubernetes.io/part-of=${EtcdName}` })
    ).items)
      for (const container of ["etcd", "backup-restore"]) {
        const log = await core
          .readNamespacedPodLog({ namespace, name: pod.metadata?.name ?? "", container, tailLines: 25 })
          .catch((error: unknown) => String(error));
        lines.push(`--- ${pod.metadata?.name} ${container}\n${log}`);
      }
  return lines.join("\n");
};

beforeAll(async () => {
  starting = startLab({ etcdWrapper: true, kubeconfigPath });
  lab = await starting.ready.catch(async (error: unknown) => {
    say(await memberLogs().catch((logError: unknown) => String(logError)));
    throw error;
  });
  say(`lab up (ms): ${JSON.stringify(lab.timings)}`);
}, 30 * 60_000);
afterAll(async () => {
  await starting?.stop();
  rmSync(kubeconfigDir, { recursive: true, force: true });
}, 180_000);

/** A call to a member's gRPC gateway (mutual TLS) from the node's network; answers the JSON. */
const gateway = async (pod: string, path: string, body: Record<string, unknown>): Promise<unknown> => {
  const { cluster, kubeConfig, etcd, dir } = running();
  const pki = join(dir, "client-pki");
  mkdirSync(pki, { recursive: true });
  writeFileSync(join(pki, "ca.crt"), etcd.spec.pki.ca.certPem);
  writeFileSync(join(pki, "tls.crt"), etcd.spec.pki.etcdClient.certPem);
  writeFileSync(join(pki, "tls.key"), etcd.spec.pki.etcdClient.keyPem);
  const read = await kubeConfig
    .makeApiClient(CoreV1Api)
    .readNamespacedPod({ namespace: etcd.spec.namespace, name: pod });
  const address = read.status?.podIP ?? "";
  const answer = await cluster.run("curl", [
    ...["--silent", "--show-error", "--fail", "--max-time", "10"],
    ...["--cacert", join(pki, "ca.crt"), "--cert", join(pki, "tls.crt"), "--key", join(pki, "tls.key")],
    ...["--resolve", `${EtcdName}-local:2379:${address}`, "--data", JSON.stringify(body)],
    `https://${EtcdName}-local:2379${path}`,
  ]);
  return JSON.parse(answer);
};

const b64 = (text: string) => Buffer.from(text).toString("base64");

const putKey = async (key: string, value: string) => {
  const answer = (await gateway(`${EtcdName}-0`, "/v3/kv/put", { key: b64(key), value: b64(value) })) as {
    header?: { revision?: string };
  };
  expect(answer.header?.revision).toBeDefined();
};

const getKey = async (pod: string, key: string): Promise<string | undefined> => {
  const answer = (await gateway(pod, "/v3/kv/range", { key: b64(key) })) as {
    kvs?: ReadonlyArray<{ value?: string }>;
  };
  const value = answer.kvs?.[0]?.value;
  return value === undefined ? undefined : Buffer.from(value, "base64").toString();
};

interface Member {
  readonly name?: string;
  readonly isLearner?: boolean;
}
const memberList = async (pod: string): Promise<ReadonlyArray<Member>> =>
  ((await gateway(pod, "/v3/cluster/member/list", {})) as { members?: Member[] }).members ?? [];

/** etcd's /health on the plain metrics listener of a member (what the readiness probe asks). */
const memberHealth = async (pod: string): Promise<string> => {
  const { cluster, kubeConfig, etcd } = running();
  const read = await kubeConfig
    .makeApiClient(CoreV1Api)
    .readNamespacedPod({ namespace: etcd.spec.namespace, name: pod });
  return cluster.run("curl", [
    ...["--silent", "--show-error", "--max-time", "10"],
    `http://${read.status?.podIP ?? ""}:2381/health`,
  ]);
};

interface TaskView {
  readonly metadata?: { readonly annotations?: Record<string, string>; readonly uid?: string };
  readonly status?: {
    readonly state?: string;
    readonly lastOperation?: { description?: string };
    readonly lastErrors?: unknown;
  };
}

const readTask = async (kubeConfig: KubeConfig, namespace: string, name: string): Promise<TaskView> =>
  (await kubeConfig
    .makeApiClient(CustomObjectsApi)
    .getNamespacedCustomObject({ ...tasks, namespace, name })) as TaskView;

/** Deletes the Lease holder's pod; answers its name once another pod holds the Lease. */
const killLeader = async (kubeConfig: KubeConfig): Promise<string> => {
  const leader = await waitFor(
    "a controller pod holding the Lease",
    () => leaderPod(kubeConfig),
    120_000,
    250,
  );
  const name = leader.metadata?.name ?? "";
  await kubeConfig
    .makeApiClient(CoreV1Api)
    .deleteNamespacedPod({ namespace: leader.metadata?.namespace ?? "", name });
  await waitFor(
    `the Lease held by another pod than ${name}`,
    async () => {
      const next = await leaderPod(kubeConfig);
      return next !== undefined && next.metadata?.name !== name ? true : undefined;
    },
    120_000,
    250,
  );
  return name;
};

describe("recoverFromQuorumLoss on the lab's 3-member etcd cluster", () => {
  it(
    "recovers from the loss of two members' data with the controller killed twice",
    async () => {
      const started = Date.now();
      const { kubeConfig, etcd } = running();
      const namespace = etcd.spec.namespace;
      const core = kubeConfig.makeApiClient(CoreV1Api);
      const custom = kubeConfig.makeApiClient(CustomObjectsApi);
      const druid = startDruidStandIn(kubeConfig, etcd.spec, say);
      try {
        // The recovery's RBAC is bound per namespace (deploy/quorum-recovery/rolebindings.yaml): bound
        // here in the lab's Etcd namespace, as its README says to add one.
        const recoveryRbac = renderKustomization(join(deployDir, "quorum-recovery"));
        const binding = recoveryRbac.find((object) => object.kind === "RoleBinding");
        if (binding === undefined) throw new Error("deploy/quorum-recovery/ has no RoleBinding");
        await applyManifests(kubeConfig, [
          ...recoveryRbac.filter((object) => object.kind !== "RoleBinding"),
          { ...binding, metadata: { ...binding.metadata, namespace } },
        ]);

        // Data, and a full snapshot of it in the store.
        const keys = Array.from({ length: 5 }, (_, i) => [
          `/lab/recovery/${i}`,
          `value ${i} before the loss`,
        ]);
        for (const [key, value] of keys) await putKey(key ?? "", value ?? "");
        const snapshot = await runTask(kubeConfig, namespace, "full-before-loss", {
          onDemandSnapshot: { type: "full" },
        });
        expect(snapshot.state, JSON.stringify(snapshot)).toBe("Succeeded");

        // The loss: members 1 and 2 kept away, their volumes deleted.
        await core.createNamespacedResourceQuota({
          namespace,
          body: { metadata: { name: "members-kept-away" }, spec: { hard: { pods: "1" } } },
        });
        const lost = [`${EtcdName}-1`, `${EtcdName}-2`];
        for (const pod of lost) {
          await core.deleteNamespacedPersistentVolumeClaim({ namespace, name: `${EtcdName}-${pod}` });
          await core.deleteNamespacedPod({ namespace, name: pod, gracePeriodSeconds: 0 });
        }
        await waitFor(
          "members 1 and 2 gone",
          async () => {
            const pods = await core.listNamespacedPod({
              namespace,
              labelSelector: `app.kubernetes.io/part-of=${EtcdName}`,
            });
            return pods.items.some((pod) => lost.includes(pod.metadata?.name ?? "")) ? undefined : true;
          },
          120_000,
          500,
        );
        await waitFor(
          "the Etcd to report QuorumLost",
          async () => {
            const read = (await custom.getNamespacedCustomObject({
              ...etcds,
              namespace,
              name: EtcdName,
            })) as {
              status?: { conditions?: Array<{ type?: string; status?: string; reason?: string }> };
            };
            return read.status?.conditions?.some(
              (c) => c.type === "Ready" && c.status === "False" && c.reason === "QuorumLost",
            )
              ? true
              : undefined;
          },
          120_000,
          500,
        );
        say(`quorum lost after ${Date.now() - started} ms`);

        // The recovery, confirmed once it waits for the confirmation.
        const name = "recover";
        // druid's default waits (podReadyTimeout 180s, etcdReadyTimeout 300s); here member 0 was Ready
        // in ~17 s and all three in ~90 s.
        await createTask(kubeConfig, namespace, name, { recoverFromQuorumLoss: {} });
        await waitFor(
          "the task to wait for its confirmation",
          async () => {
            const task = await readTask(kubeConfig, namespace, name);
            if (task.status?.state === "Failed" || task.status?.state === "Rejected")
              throw new Error(`the recovery ended before its confirmation: ${JSON.stringify(task.status)}`);
            return task.status?.lastOperation?.description?.includes("Awaiting user confirmation")
              ? true
              : undefined;
          },
          120_000,
          500,
        );
        await custom.patchNamespacedCustomObject(
          { ...tasks, namespace, name, body: { metadata: { annotations: { [Confirm]: "true" } } } },
          mergePatch,
        );

        // Follow the progress; kill the controller at two steps, lift the quota after the scale-down.
        const seen: string[] = [];
        const killed: string[] = [];
        const crashes: string[] = [];
        let quotaLifted = false;
        const final = await waitFor(
          "the recovery to finish",
          async () => {
            const task = await readTask(kubeConfig, namespace, name);
            const last = task.metadata?.annotations?.[Progress];
            if (last !== undefined && seen.at(-1) !== last) {
              seen.push(last);
              say(`recovery: ${last} completed (${task.status?.lastOperation?.description ?? ""})`);
            }
            if (!quotaLifted && last !== undefined && recoveryStepNames.indexOf(last) >= 4) {
              await core.deleteNamespacedResourceQuota({ namespace, name: "members-kept-away" });
              quotaLifted = true;
            }
            // Crash 1 once ScaleDown is recorded (the destructive steps ahead), crash 2 once ScaleUp is
            // (member 0 restoring): at the first progress read at or past each.
            const state = task.status?.state;
            if (state === "Succeeded" || state === "Failed" || state === "Rejected") return task;
            const crashAfter = ["ScaleDown", "ScaleUp"][killed.length];
            const reached = last === undefined ? -1 : recoveryStepNames.indexOf(last);
            if (crashAfter !== undefined && reached >= recoveryStepNames.indexOf(crashAfter)) {
              killed.push(await killLeader(kubeConfig));
              crashes.push(last ?? "");
              say(`recovery: controller pod ${killed.at(-1)} deleted with ${last} the last completed step`);
            }
            return undefined;
          },
          600_000,
          250,
        );
        expect(final.status?.state, JSON.stringify(final.status)).toBe("Succeeded");
        // Both crashes while the task was InProgress.
        expect(crashes).toHaveLength(2);
        // The progress only moved forward.
        const order = seen.map((step) => recoveryStepNames.indexOf(step));
        expect(order).toEqual([...order].sort((a, b) => a - b));
        say(`recovery succeeded ${Date.now() - started} ms after the start; steps seen: ${seen.join(", ")}`);

        // Each step completed once: one StepCompleted Event per step.
        const events = await kubeConfig.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace });
        const completed = events.items
          .filter((event) => event.regarding?.name === name && event.reason === "StepCompleted")
          .map((event) => / ([A-Za-z]+) completed$/.exec(event.note ?? "")?.[1] ?? event.note ?? "");
        expect([...completed].sort()).toEqual([...recoveryStepNames].sort());

        // One cluster of 3 voting members, each healthy, holding the data of the snapshot.
        const members = await waitFor(
          "3 voting members",
          async () => {
            const list = await memberList(`${EtcdName}-0`).catch(() => []);
            return list.length === 3 && list.every((member) => member.isLearner !== true) ? list : undefined;
          },
          180_000,
          1000,
        );
        expect(members.map((member) => member.name).sort()).toEqual([0, 1, 2].map((i) => `${EtcdName}-${i}`));
        for (const pod of [0, 1, 2].map((i) => `${EtcdName}-${i}`)) {
          expect((await memberList(pod)).length, pod).toBe(3);
          expect(await memberHealth(pod), pod).toContain('"health":"true"');
        }
        for (const [key, value] of keys) expect(await getKey(`${EtcdName}-2`, key ?? "")).toBe(value);

        const sts = await kubeConfig
          .makeApiClient(AppsV1Api)
          .readNamespacedStatefulSet({ namespace, name: EtcdName });
        expect(sts.spec?.replicas).toBe(3);
        const annotations =
          (
            (await custom.getNamespacedCustomObject({ ...etcds, namespace, name: EtcdName })) as {
              metadata?: { annotations?: Record<string, string> };
            }
          ).metadata?.annotations ?? {};
        expect(annotations["druid.gardener.cloud/suspend-etcd-spec-reconcile"]).toBeUndefined();
        expect(annotations["druid.gardener.cloud/disable-etcd-component-protection"]).toBeUndefined();
        expect(druid.reconciles()).toBe(1);
        say(`test body ${Date.now() - started} ms`);
      } finally {
        await druid.stop();
      }
    },
    20 * 60_000,
  );
});
