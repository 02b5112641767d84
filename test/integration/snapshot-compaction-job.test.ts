/**
 * The snapshot compaction handler against a real kube-apiserver + etcd, through client-node (the real
 * `ObjectReader` and `Jobs`), as a user that holds exactly the RBAC the handler needs: `batch/jobs`
 * create, get, delete and `etcds` get. No kubelet and no controller-manager run, so the Job never
 * starts: the test plays the Job controller and writes the Job's status through the status
 * subresource. The tasks are real objects (opstask's CRD, which knows the compaction member), so the
 * owner references name real UIDs.
 */
import { join } from "node:path";
import {
  ApiException,
  BatchV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  RbacAuthorizationV1Api,
  type V1Job,
  type V1JobStatus,
} from "@kubernetes/client-node";
import { Effect, Layer, Result } from "effect";
import { beforeAll, describe, expect, it } from "vitest";
import { decodeEtcdOpsTask, type EtcdOpsTask } from "../../src/etcd/api/etcdopstask.ts";
import { kubernetesObjectReaderLayer } from "../../src/etcd/object-reader-kubernetes.ts";
import {
  makeOnDemandSnapshotCompactionHandler,
  type OnDemandSnapshotCompactionHandler,
} from "../../src/etcd/on-demand-snapshot-compaction/handler.ts";
import { compactionJobName } from "../../src/etcd/on-demand-snapshot-compaction/job-spec.ts";
import { kubernetesJobsLayer } from "../../src/etcd/on-demand-snapshot-compaction/jobs-kubernetes.ts";
import type { PhaseOutcome } from "../../src/machine/types.ts";
import { memberContext } from "../etcd/support/member-context.ts";
import { createTestNamespace, repoRoot, useControlPlane } from "../support/cluster.ts";

/** druid's Etcd CRD and opstask's EtcdOpsTask CRD (druid's plus the extra config members). */
const crds = ["druid.gardener.cloud_etcdopstasks.yaml", "druid.gardener.cloud_etcds.yaml"].map((file) =>
  join(repoRoot, "deploy", "crds", file),
);
const controllerUser = "compaction-controller";
const cluster = useControlPlane({ crds, users: [{ name: controllerUser, groups: [] }] });

const druid = { group: "druid.gardener.cloud", version: "v1alpha1" } as const;
const etcdName = "etcd-main";
const image = "registry.example/gardener/etcdbrctl:v0.43.0";

const isNotFound = (error: unknown): boolean => error instanceof ApiException && error.code === 404;

describe("snapshot compaction Job on a real API server", () => {
  let admin: KubeConfig;
  let batch: BatchV1Api;
  let custom: CustomObjectsApi;
  let namespace: string;
  let handler: OnDemandSnapshotCompactionHandler;
  let run: (phase: "admit" | "execute" | "cleanup", task: EtcdOpsTask) => Promise<PhaseOutcome>;

  const createTask = async (name: string): Promise<EtcdOpsTask> => {
    const created: unknown = await custom.createNamespacedCustomObject({
      ...druid,
      plural: "etcdopstasks",
      namespace,
      body: {
        apiVersion: "druid.gardener.cloud/v1alpha1",
        kind: "EtcdOpsTask",
        metadata: { name, namespace },
        spec: { etcdName, config: { onDemandSnapshotCompaction: { image, timeoutSeconds: 600 } } },
      },
    });
    const decoded = decodeEtcdOpsTask(created);
    if (Result.isFailure(decoded)) throw new Error(decoded.failure.message);
    return decoded.success;
  };

  const readJob = (task: EtcdOpsTask): Promise<V1Job> =>
    batch.readNamespacedJob({ namespace, name: compactionJobName(task.metadata.name) });

  const jobsOf = async (task: EtcdOpsTask): Promise<ReadonlyArray<V1Job>> =>
    (
      await batch.listNamespacedJob({
        namespace,
        labelSelector: `opstask.gardener.cloud/task-name=${task.metadata.name}`,
      })
    ).items;

  /** Plays the Job controller: replaces the Job's status through the status subresource. */
  const setJobStatus = async (task: EtcdOpsTask, status: V1JobStatus): Promise<void> => {
    const job = await readJob(task);
    job.status = status;
    await batch.replaceNamespacedJobStatus({
      namespace,
      name: compactionJobName(task.metadata.name),
      body: job,
    });
  };

  const seconds = (date: Date): Date => new Date(Math.floor(date.getTime() / 1000) * 1000);

  beforeAll(async () => {
    admin = cluster().makeKubeConfig();
    batch = admin.makeApiClient(BatchV1Api);
    custom = admin.makeApiClient(CustomObjectsApi);
    namespace = await createTestNamespace(admin, "compaction");

    // Exactly the rights the handler needs (the controller's RBAC for this task type).
    const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({
      namespace,
      body: {
        metadata: { name: "compaction-handler", namespace },
        rules: [
          { apiGroups: ["batch"], resources: ["jobs"], verbs: ["create", "get", "delete"] },
          { apiGroups: ["druid.gardener.cloud"], resources: ["etcds"], verbs: ["get"] },
        ],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name: "compaction-handler", namespace },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "compaction-handler" },
        subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: controllerUser }],
      },
    });

    await custom.createNamespacedCustomObject({
      ...druid,
      plural: "etcds",
      namespace,
      body: {
        apiVersion: "druid.gardener.cloud/v1alpha1",
        kind: "Etcd",
        metadata: { name: etcdName, namespace },
        spec: {
          replicas: 3,
          labels: { app: etcdName },
          etcd: {},
          backup: {
            store: {
              provider: "aws",
              prefix: "shoot--dev--x/etcd-main",
              container: "backup-bucket",
              secretRef: { name: "etcd-backup" },
            },
          },
        },
      },
    });

    const user = cluster().makeKubeConfig(controllerUser);
    // The image is the controller's configuration; the tasks name that same image, which is allowed.
    handler = makeOnDemandSnapshotCompactionHandler({ pollIntervalMs: 5000, defaultImage: image });
    const layer = Layer.mergeAll(
      kubernetesObjectReaderLayer({ kubeConfig: user }),
      kubernetesJobsLayer({ kubeConfig: user }),
    );
    run = (phase, task) =>
      Effect.runPromise(
        handler[phase](task, memberContext("onDemandSnapshotCompaction", task, { phase })).pipe(
          Effect.provide(layer),
        ),
      );

    // The RBAC authorizer reads roles from a cache: wait until the binding is in effect.
    const userBatch = user.makeApiClient(BatchV1Api);
    const deadline = Date.now() + 10_000;
    for (;;) {
      try {
        await userBatch.readNamespacedJob({ namespace, name: "rbac-probe" });
      } catch (error) {
        if (isNotFound(error)) break;
        if (Date.now() > deadline) throw error;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }, 60_000);

  it("Admit passes for an Etcd with a backup store (Ready or not)", async () => {
    const task = await createTask("compact-admit");
    expect(await run("admit", task)).toEqual({ kind: "completed", description: "Admit check passed" });
  });

  it("Execute creates the Job: etcdbrctl compact against the Etcd's store, deadline, labels, owner", async () => {
    const task = await createTask("compact-ok");
    const name = compactionJobName(task.metadata.name);
    expect(await run("execute", task)).toEqual({
      kind: "retry",
      description: `Compaction job ${name} is running`,
      afterMs: 5000,
    });
    const job = await readJob(task);
    expect(job.metadata?.labels).toMatchObject({
      "app.kubernetes.io/managed-by": "opstask",
      "app.kubernetes.io/component": "etcd-snapshot-compaction",
      "opstask.gardener.cloud/task-name": "compact-ok",
      "opstask.gardener.cloud/task-uid": task.metadata.uid,
      "opstask.gardener.cloud/etcd-name": etcdName,
    });
    expect(job.metadata?.ownerReferences).toEqual([
      {
        apiVersion: "druid.gardener.cloud/v1alpha1",
        kind: "EtcdOpsTask",
        name: "compact-ok",
        uid: task.metadata.uid,
        controller: true,
      },
    ]);
    expect(job.spec?.activeDeadlineSeconds).toBe(600);
    expect(job.spec?.backoffLimit).toBe(0);
    expect(job.spec?.ttlSecondsAfterFinished).toBeUndefined();
    expect(job.spec?.podFailurePolicy?.rules).toEqual([
      { action: "Ignore", onPodConditions: [{ type: "DisruptionTarget", status: "True" }] },
    ]);
    const pod = job.spec?.template.spec;
    expect(pod?.restartPolicy).toBe("Never");
    expect(pod?.containers).toHaveLength(1);
    expect(pod?.containers[0]).toMatchObject({
      name: "compact-backup",
      image,
      args: [
        "compact",
        "--data-dir=/var/etcd/data/compaction.etcd",
        "--restoration-temp-snapshots-dir=/var/etcd/data/compaction.restoration.temp",
        "--snapstore-temp-directory=/var/etcd/data/tmp",
        "--enable-snapshot-lease-renewal=false",
        "--storage-provider=S3",
        "--store-prefix=shoot--dev--x/etcd-main",
        "--store-container=backup-bucket",
      ],
      env: [{ name: "AWS_APPLICATION_CREDENTIALS", value: "/var/etcd-backup" }],
    });
    expect(pod?.volumes?.find((volume) => volume.name === "etcd-backup-secret")?.secret?.secretName).toBe(
      "etcd-backup",
    );
    // The apiserver adds the Job controller's selector and pod labels; ours are kept beside them.
    expect(job.spec?.template.metadata?.labels?.["opstask.gardener.cloud/task-uid"]).toBe(task.metadata.uid);

    // Execute again (a poll, or another incarnation): the same Job, still running.
    expect(await run("execute", task)).toMatchObject({ kind: "retry", afterMs: 5000 });
    const all = await jobsOf(task);
    expect(all.map((item) => item.metadata?.uid)).toEqual([job.metadata?.uid]);

    // The Job controller's part: the pod succeeded.
    const start = seconds(new Date(Date.now() - 60_000));
    const end = seconds(new Date());
    const done = {
      status: "True",
      reason: "CompletionsReached",
      message: "Reached expected number of succeeded pods",
    };
    await setJobStatus(task, {
      startTime: start,
      completionTime: end,
      succeeded: 1,
      conditions: [
        { type: "SuccessCriteriaMet", ...done, lastProbeTime: end, lastTransitionTime: end },
        { type: "Complete", ...done, lastProbeTime: end, lastTransitionTime: end },
      ],
    });
    expect(await run("execute", task)).toEqual({
      kind: "completed",
      description: `Snapshot compaction job ${name} succeeded`,
    });

    // Cleanup deletes it; a repeated Cleanup finds nothing to delete.
    expect(await run("cleanup", task)).toEqual({
      kind: "completed",
      description: `Cleanup completed: job ${name} deleted`,
    });
    await expect(readJob(task)).rejects.toSatisfy(isNotFound);
    expect(await run("cleanup", task)).toEqual({
      kind: "completed",
      description: `Cleanup completed: job ${name} not found, nothing to delete`,
    });
  });

  it("a Job that failed → failed with ERR_COMPACTION_JOB_FAILED and the condition's reason", async () => {
    const task = await createTask("compact-bad");
    const name = compactionJobName(task.metadata.name);
    await run("execute", task);
    const start = seconds(new Date(Date.now() - 600_000));
    const end = seconds(new Date());
    const deadline = {
      status: "True",
      reason: "DeadlineExceeded",
      message: "Job was active longer than specified deadline",
      lastProbeTime: end,
      lastTransitionTime: end,
    };
    await setJobStatus(task, {
      startTime: start,
      failed: 1,
      conditions: [
        { type: "FailureTarget", ...deadline },
        { type: "Failed", ...deadline },
      ],
    });
    expect(await run("execute", task)).toEqual({
      kind: "failed",
      description: `Snapshot compaction job ${name} failed`,
      error: {
        code: "ERR_COMPACTION_JOB_FAILED",
        message: "snapshot compaction job failed",
        cause: "DeadlineExceeded: Job was active longer than specified deadline",
      },
    });
    expect(await run("cleanup", task)).toMatchObject({ kind: "completed" });
    expect(await jobsOf(task)).toEqual([]);
  });

  it("a task re-created under the same name replaces the Job of its predecessor", async () => {
    const first = await createTask("compact-again");
    await run("execute", first);
    const old = await readJob(first);
    await custom.deleteNamespacedCustomObject({
      ...druid,
      plural: "etcdopstasks",
      namespace,
      name: "compact-again",
    });
    const second = await createTask("compact-again");
    expect(second.metadata.uid).not.toBe(first.metadata.uid);

    expect(await run("execute", second)).toMatchObject({ kind: "retry", afterMs: 5000 });
    const replaced = await readJob(second);
    expect(replaced.metadata?.uid).not.toBe(old.metadata?.uid);
    expect(replaced.metadata?.labels?.["opstask.gardener.cloud/task-uid"]).toBe(second.metadata.uid);
    expect(replaced.metadata?.ownerReferences?.[0]?.uid).toBe(second.metadata.uid);
    expect(await jobsOf(second)).toHaveLength(1);
    expect(await run("cleanup", second)).toMatchObject({ kind: "completed" });
  });

  it("the Job's pod is admitted where the restricted Pod Security level is enforced (finding 9)", async () => {
    const task = await createTask("compact-restricted");
    await run("execute", task);
    const template = (await readJob(task)).spec?.template;
    if (template?.spec === undefined) throw new Error("no pod template");
    const core = admin.makeApiClient(CoreV1Api);
    const restricted = await createTestNamespace(admin, "restricted");
    await core.patchNamespace({
      name: restricted,
      body: [
        {
          op: "add",
          path: "/metadata/labels/pod-security.kubernetes.io~1enforce",
          value: "restricted",
        },
      ],
    });
    // What the Job controller would create, checked by the apiserver's PodSecurity admission.
    const pod = await core.createNamespacedPod({
      namespace: restricted,
      dryRun: "All",
      body: {
        metadata: { name: "compact-restricted-pod", namespace: restricted },
        spec: template.spec,
      },
    });
    expect(pod.spec?.securityContext?.runAsNonRoot).toBe(true);
    expect(await run("cleanup", task)).toMatchObject({ kind: "completed" });
  });
});
