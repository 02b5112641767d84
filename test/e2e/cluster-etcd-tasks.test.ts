/**
 * On-demand snapshots as users meet them: the controller runs as two pods deployed from deploy/
 * (its image, its RBAC, leader election, its probes), and snapshots a 3-member etcd cluster whose
 * etcd-backup-restore sidecars run beside etcd in pods, laid out as etcd-druid lays them out. The
 * controller reaches the sidecars through cluster DNS (`<etcd>-client.<ns>`) and TLS verified with the
 * CA from the StatefulSet's `backup-restore-ca` volume: no --resolve. The etcd's store is the lab's
 * S3-compatible object store (a pod), and its namespace enforces the restricted Pod Security level.
 * Each snapshot must be in the store afterwards, and the store must restore (etcdbrctl restore) to a
 * database holding what was written before the delta snapshot.
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  AppsV1Api,
  BatchV1Api,
  CoreV1Api,
  CustomObjectsApi,
  RbacAuthorizationV1Api,
  type V1Pod,
  Watch,
} from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { resolveImageBinaries } from "../../src/devcluster/images/index.ts";
import { waitFor } from "../support/wait.ts";
import {
  createTask,
  EtcdName,
  isFinished,
  memberAddresses,
  readTaskStatus,
  runTask,
  type TaskState,
  useLab,
  waitForTask,
} from "./support/lab.ts";
import {
  ControllerDeployment,
  ControllerNamespace,
  controllerPods,
  leaderPod,
} from "./support/lab-controller.ts";
import { hostCredentialsDirectory, snapshotNames } from "./support/object-store.ts";
import { sidecarProcesses as sidecarsOf, unreadRequests } from "./support/sidecars.ts";

const lab = useLab();

const snapshotFiles = (): Promise<string[]> => snapshotNames(lab());

/** Writes `key=value` into the cluster through one member's client port (mutual TLS), from the node's network. */
const putKey = async (key: string, value: string): Promise<void> => {
  const { cluster, kubeConfig, etcd, dir } = lab();
  const pki = join(dir, "client-pki");
  mkdirSync(pki, { recursive: true });
  writeFileSync(join(pki, "ca.crt"), etcd.spec.pki.ca.certPem);
  writeFileSync(join(pki, "tls.crt"), etcd.spec.pki.etcdClient.certPem);
  writeFileSync(join(pki, "tls.key"), etcd.spec.pki.etcdClient.keyPem);
  const address = (await memberAddresses(kubeConfig, etcd.spec.namespace)).get(`${EtcdName}-0`) ?? "";
  const body = JSON.stringify({
    key: Buffer.from(key).toString("base64"),
    value: Buffer.from(value).toString("base64"),
  });
  const answer = await cluster.run("curl", [
    ...["--silent", "--show-error", "--fail", "--max-time", "10"],
    ...["--cacert", join(pki, "ca.crt"), "--cert", join(pki, "tls.crt"), "--key", join(pki, "tls.key")],
    ...["--resolve", `${EtcdName}-local:2379:${address}`, "--data", body],
    `https://${EtcdName}-local:2379/v3/kv/put`,
  ]);
  expect(answer).toContain('"revision"');
};

/** The line the sidecar holding the snapshotter logs once for each on-demand full snapshot POST (forwarded or not). */
const FullSnapshotTriggered = "Triggering out of schedule full snapshot";

/** How many on-demand full snapshot POSTs the backup-restore sidecars of all members have logged. */
const fullSnapshotPosts = async (): Promise<number> => {
  const { kubeConfig, etcd } = lab();
  const core = kubeConfig.makeApiClient(CoreV1Api);
  let count = 0;
  for (const name of (await memberAddresses(kubeConfig, etcd.spec.namespace)).keys()) {
    const log = await core.readNamespacedPodLog({
      namespace: etcd.spec.namespace,
      name,
      container: "backup-restore",
    });
    count += log.split("\n").filter((line) => line.includes(FullSnapshotTriggered)).length;
  }
  return count;
};

const sidecarProcesses = (): number[] => sidecarsOf(lab());

describe("on-demand snapshots of a 3-member etcd cluster in pods, by the controller in pods", () => {
  it("runs the controller as deploy/ says: two Ready replicas of the loaded image, one holding the Lease", async () => {
    const { kubeConfig, images, leaderPod } = lab();
    const deployment = await kubeConfig
      .makeApiClient(AppsV1Api)
      .readNamespacedDeployment({ namespace: ControllerNamespace, name: ControllerDeployment });
    expect(deployment.status?.readyReplicas).toBe(2);
    const pods = await controllerPods(kubeConfig);
    expect(pods.map((pod) => pod.spec?.containers[0]?.image)).toEqual([
      images.opstask.ref,
      images.opstask.ref,
    ]);
    expect(pods.map((pod) => pod.metadata?.name)).toContain(leaderPod);
  });

  it("answers /metrics through its Service to a token that may get /metrics, and refuses one that may not", async () => {
    const { cluster, kubeConfig, etcd } = lab();
    const namespace = etcd.spec.namespace;
    const core = kubeConfig.makeApiClient(CoreV1Api);
    const token = async (name: string): Promise<string> => {
      await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } });
      const request = await core.createNamespacedServiceAccountToken({
        namespace,
        name,
        body: { spec: { audiences: [], expirationSeconds: 600 } },
      });
      return request.status?.token ?? "";
    };
    const scraper = await token("scraper");
    const stranger = await token("stranger");
    await kubeConfig.makeApiClient(RbacAuthorizationV1Api).createClusterRoleBinding({
      body: {
        metadata: { name: `opstask-metrics-reader-${namespace}` },
        roleRef: {
          apiGroup: "rbac.authorization.k8s.io",
          kind: "ClusterRole",
          name: "opstask-metrics-reader",
        },
        subjects: [{ kind: "ServiceAccount", name: "scraper", namespace }],
      },
    });
    const service = await core.readNamespacedService({
      namespace: ControllerNamespace,
      name: "opstask-metrics",
    });
    const scrape = (bearer: string) =>
      cluster.run("curl", [
        ...[
          "--silent",
          "--show-error",
          "--insecure",
          "--max-time",
          "10",
          "--output",
          "/dev/null",
          "--write-out",
          "%{http_code}",
        ],
        ...["--header", `Authorization: Bearer ${bearer}`],
        `https://${service.spec?.clusterIP ?? ""}:8443/metrics`,
      ]);
    // kube-proxy programs a Service's rules on its own schedule after its pods are Ready, and a
    // connection before that fails at once (it did once, 159 ms after the lab was up). What is checked
    // here is who may read /metrics, so the first scrape waits for the Service to answer at all.
    const answered = (bearer: string) =>
      waitFor(
        "the metrics Service to answer",
        () =>
          scrape(bearer).catch((error: unknown) => {
            console.log(`metrics Service not answering yet: ${String(error).slice(-200)}`);
            return undefined;
          }),
        30_000,
        500,
      );
    // RBAC changes reach the apiserver's authorizer at once; the controller asks it on every scrape.
    expect(await answered(scraper)).toBe("200");
    expect(await scrape(stranger)).toBe("403");
  });

  it("takes a full snapshot through cluster DNS and TLS, and the snapshot is in the store", async () => {
    const { kubeConfig, etcd } = lab();
    await putKey("/lab/full", "before the full snapshot");
    const before = await snapshotFiles();
    const status = await runTask(kubeConfig, etcd.spec.namespace, "full", {
      onDemandSnapshot: { type: "full" },
    });
    expect(status.state, JSON.stringify(status)).toBe("Succeeded");
    const added = (await snapshotFiles()).filter((file) => !before.includes(file));
    expect(added.filter((file) => file.startsWith("Full-"))).toHaveLength(1);
  }, 240_000);

  it("takes a delta snapshot, and the store restores to a database holding the key written before it", async () => {
    const { cluster, kubeConfig, etcd, dir } = lab();
    const marker = `delta-${randomBytes(8).toString("hex")}`;
    await putKey("/lab/delta", marker);
    const before = await snapshotFiles();
    const status = await runTask(kubeConfig, etcd.spec.namespace, "delta", {
      onDemandSnapshot: { type: "delta" },
    });
    expect(status.state, JSON.stringify(status)).toBe("Succeeded");
    const added = (await snapshotFiles()).filter((file) => !before.includes(file));
    expect(added.filter((file) => file.startsWith("Incr-"))).toHaveLength(1);

    // Restore the store (latest full snapshot plus deltas) as a new member would, in the node's
    // network (the restore runs an embedded etcd on loopback ports).
    const restored = join(dir, "restored");
    // The binary the sidecar image was built from (scripts/testbin).
    const { etcdbrctl } = await resolveImageBinaries();
    // S3 from the host: the credentials as files, and no AWS_CA_BUNDLE from the caller's environment
    // (the SDK refuses a custom CA bundle with the plain http.Client etcd-backup-restore gives it).
    await cluster.run("env", [
      "-u",
      "AWS_CA_BUNDLE",
      `AWS_APPLICATION_CREDENTIALS=${hostCredentialsDirectory(lab(), join(dir, "s3-credentials"))}`,
      etcdbrctl,
      "restore",
      "--storage-provider=S3",
      `--store-container=${etcd.spec.storeContainer}`,
      `--store-prefix=${etcd.spec.storePrefix}`,
      `--data-dir=${join(restored, "data")}`,
      `--restoration-temp-snapshots-dir=${join(restored, "temp-snapshots")}`,
      `--snapstore-temp-directory=${join(restored, "temp")}`,
    ]);
    const database = readFileSync(join(restored, "data", "member", "snap", "db"));
    expect(database.includes(Buffer.from(marker))).toBe(true);
  }, 300_000);

  it("compacts and defragments all three members through their own client URLs", async () => {
    const { kubeConfig, etcd } = lab();
    for (let n = 0; n < 20; n++) await putKey("/lab/churn", `value ${n} ${"x".repeat(2048)}`);
    const status = await runTask(kubeConfig, etcd.spec.namespace, "maintenance", {
      onDemandMaintenance: { compaction: { physical: true }, defragmentation: {} },
    });
    expect(status.state, JSON.stringify(status)).toBe("Succeeded");
    const description = status.lastOperation?.description ?? "";
    const size = String.raw`[\d.]+ (?:B|KiB|MiB|GiB)`;
    const member = String.raw`(\S+) db size (${size}) → (${size})`;
    expect(description).toMatch(
      new RegExp(
        String.raw`^Compacted to revision \d+ \(physical\); defragmented 3 member\(s\): ${member}, ${member}, ${member}$`,
      ),
    );
    // Each member by name, with its own db size before and after.
    const members = [...description.matchAll(new RegExp(member, "g"))].map((match) => match[1]);
    expect(members.sort()).toEqual([0, 1, 2].map((ordinal) => `${EtcdName}-${ordinal}`));
    process.stderr.write(`maintenance: ${description}\n`);
  }, 240_000);

  it("compacts the store with a Job whose pod is admitted under the restricted Pod Security level, reads the real S3 store and Succeeds, and the task Succeeds from the Job's result", async () => {
    const { kubeConfig, etcd } = lab();
    const namespace = etcd.spec.namespace;
    const core = kubeConfig.makeApiClient(CoreV1Api);
    const labels = (await core.readNamespace({ name: namespace })).metadata?.labels ?? {};
    expect(labels["pod-security.kubernetes.io/enforce"]).toBe("restricted");
    // Every phase the Job's pod goes through: cleanup deletes the Job and its pod once the task ends.
    const phases = new Map<string, string[]>();
    const watching = await new Watch(kubeConfig).watch(
      `/api/v1/namespaces/${namespace}/pods`,
      { labelSelector: "batch.kubernetes.io/job-name=compaction-compact" },
      (_type: string, pod: V1Pod) => {
        const name = pod.metadata?.name ?? "";
        const seen = phases.get(name) ?? [];
        const phase = pod.status?.phase ?? "";
        if (seen.at(-1) !== phase) phases.set(name, [...seen, phase]);
      },
      () => undefined,
    );
    const before = await snapshotFiles();
    // The Job controller's events about the Job: one SuccessfulCreate per pod it created, a
    // FailedCreate with the admission's message for each pod refused (a Pod Security violation).
    const jobEvents = async (reason: string) =>
      (await core.listNamespacedEvent({ namespace })).items
        .filter((event) => event.involvedObject.name === "compaction-compact" && event.reason === reason)
        .map((event) => event.message ?? "");
    let outcome: { status: TaskState; refused: string[] };
    try {
      await createTask(kubeConfig, namespace, "compaction", {
        onDemandSnapshotCompaction: { timeoutSeconds: 600 },
      });
      // Until the task ends, or the first refusal (a refused pod would only end at the Job's deadline).
      outcome = await waitFor(
        "the compaction task's end or its Job's pod refused",
        async () => {
          const refused = await jobEvents("FailedCreate");
          const status = await readTaskStatus(kubeConfig, namespace, "compaction");
          return refused.length > 0 || isFinished(status) ? { status, refused } : undefined;
        },
        420_000,
        500,
      );
    } finally {
      watching.abort();
    }
    expect(outcome.refused).toEqual([]);
    expect(await jobEvents("SuccessfulCreate")).toHaveLength(1);
    expect(outcome.status.state, JSON.stringify(outcome.status)).toBe("Succeeded");
    expect(
      [...phases.values()].map((seen) => seen.at(-1)),
      JSON.stringify([...phases]),
    ).toEqual(["Succeeded"]);
    const added = (await snapshotFiles()).filter((file) => !before.includes(file));
    expect(added.filter((file) => file.startsWith("Full-"))).toHaveLength(1);
  }, 480_000);

  it("hands the Lease to the other replica when the leader pod is deleted mid-task, and the task still Succeeds", async () => {
    const { kubeConfig, etcd } = lab();
    const namespace = etcd.spec.namespace;
    const before = await leaderPod(kubeConfig);
    const beforeName = before?.metadata?.name ?? "";
    expect(beforeName).not.toBe("");
    await createTask(kubeConfig, namespace, "failover", {
      onDemandSnapshotCompaction: { timeoutSeconds: 600 },
    });
    // Mid-task: the Job exists, so Execute has begun and is waiting on it.
    const jobs = kubeConfig.makeApiClient(BatchV1Api);
    await waitFor(
      "the compaction Job of task failover",
      async () =>
        (await jobs.listNamespacedJob({ namespace })).items.find(
          (job) => job.metadata?.name === "failover-compact",
        ),
      120_000,
      250,
    );
    await kubeConfig
      .makeApiClient(CoreV1Api)
      .deleteNamespacedPod({ namespace: ControllerNamespace, name: beforeName });
    const status = await waitForTask(kubeConfig, namespace, "failover", 420_000);
    expect(status.state, JSON.stringify(status)).toBe("Succeeded");
    const after = await leaderPod(kubeConfig);
    expect(after?.metadata?.name).toBeDefined();
    expect(after?.metadata?.name).not.toBe(beforeName);
  }, 600_000);

  it("hands the Lease over when the leader pod is deleted while its full snapshot POST is in flight (held unanswered by frozen sidecars), and the task Succeeds with at most 2 POSTs", async () => {
    const { kubeConfig, etcd } = lab();
    const namespace = etcd.spec.namespace;
    const before = (await leaderPod(kubeConfig))?.metadata?.name ?? "";
    expect(before).not.toBe("");
    const postsBefore = await fullSnapshotPosts();
    const filesBefore = await snapshotFiles();
    // Freeze every sidecar (SIGSTOP): the kernel still accepts the controller's connection, so its
    // POST is in flight and unanswered until they are thawed, whenever the leader is deleted.
    const sidecars = sidecarProcesses();
    expect(sidecars).toHaveLength(3);
    for (const pid of sidecars) process.kill(pid, "SIGSTOP");
    let inFlight = 0;
    try {
      await createTask(kubeConfig, namespace, "snapshot-failover", { onDemandSnapshot: { type: "full" } });
      const tasks = kubeConfig.makeApiClient(CustomObjectsApi);
      await waitFor(
        "task snapshot-failover InProgress",
        async () => {
          const task = (await tasks.getNamespacedCustomObject({
            group: "druid.gardener.cloud",
            version: "v1alpha1",
            plural: "etcdopstasks",
            namespace,
            name: "snapshot-failover",
          })) as { status?: TaskState };
          return task.status?.state === "InProgress" ? true : undefined;
        },
        60_000,
        100,
      );
      await waitFor(
        "the leader's snapshot POST waiting unread at a frozen sidecar",
        async () => (unreadRequests(sidecars) > 0 ? true : undefined),
        60_000,
        100,
      );
      inFlight = unreadRequests(sidecars);
      await kubeConfig
        .makeApiClient(CoreV1Api)
        .deleteNamespacedPod({ namespace: ControllerNamespace, name: before });
      await waitFor(
        "the Lease held by the other replica",
        async () => {
          const holder = (await leaderPod(kubeConfig))?.metadata?.name;
          return holder !== undefined && holder !== before ? holder : undefined;
        },
        120_000,
        250,
      );
    } finally {
      for (const pid of sidecars) process.kill(pid, "SIGCONT");
    }
    const status = await waitForTask(kubeConfig, namespace, "snapshot-failover", 240_000);
    expect(status.state, JSON.stringify(status)).toBe("Succeeded");
    const posts = (await fullSnapshotPosts()) - postsBefore;
    const added = (await snapshotFiles()).filter(
      (file) => !filesBefore.includes(file) && file.startsWith("Full-"),
    );
    process.stderr.write(
      `snapshot failover: ${inFlight} request(s) unread at a sidecar at the deletion; ${posts} POST(s) logged, ${added.length} new Full- file(s)\n`,
    );
    expect(posts).toBeGreaterThanOrEqual(1);
    expect(posts).toBeLessThanOrEqual(2);
  }, 600_000);
});
