/**
 * The compaction Job a task creates. Its name is a function of the task's name alone, so every
 * Execute attempt (and every controller incarnation) finds the Job an earlier one created; its labels
 * say which task it belongs to, by name and UID, so a Job left by an earlier task of the same name is
 * recognised as such.
 *
 * The container runs `etcdbrctl compact` (the image's entrypoint is etcdbrctl, as in druid's own
 * compaction Job) with druid's work directories and store flags. Snapshot-lease renewal is off: the
 * leases belong to the etcd's backup-restore sidecar, and renewing them would need a service account
 * with lease RBAC in the Job's pod; the sidecar's next full snapshot updates them anyway.
 */
import { createHash } from "node:crypto";
import type { V1Job, V1PodSecurityContext, V1SecurityContext } from "@kubernetes/client-node";
import { ApiVersion, type EtcdOpsTask, Kind } from "../api/etcdopstask.ts";
import type { CompactionTarget } from "./admission.ts";
import type { JobInfo } from "./jobs.ts";
import { type StorePodParts, WorkspaceDir, WorkspaceVolume } from "./store.ts";

/** The image when neither the task nor the controller names one. */
export const DefaultCompactionImage =
  "europe-docker.pkg.dev/gardener-project/releases/gardener/etcdbrctl:v0.43.0";

export const JobNameSuffix = "-compact";
/** Job names must fit a label value: the Job controller labels its pods with them. */
export const MaxJobNameLength = 63;
const MaxLabelValueLength = 63;
export const ContainerName = "compact-backup";

export const JobLabels = {
  managedBy: "app.kubernetes.io/managed-by",
  component: "app.kubernetes.io/component",
  taskName: "opstask.gardener.cloud/task-name",
  taskUid: "opstask.gardener.cloud/task-uid",
  etcdName: "opstask.gardener.cloud/etcd-name",
} as const;
export const ManagedBy = "opstask";
export const Component = "etcd-snapshot-compaction";

/** What Gardener's network policies need to let the pod reach DNS and the object store (as in druid). */
const NetworkLabels = {
  "networking.gardener.cloud/to-dns": "allowed",
  "networking.gardener.cloud/to-private-networks": "allowed",
  "networking.gardener.cloud/to-public-networks": "allowed",
} as const;

/**
 * The pod meets the "restricted" Pod Security Standard (a namespace that enforces it admits the pod),
 * except for a Local store's hostPath volume, which no level above "privileged" allows. The user is
 * druid's non-root user of etcd pods (65532), so files it leaves in a Local store belong to the same
 * user as the backup-restore sidecar's.
 */
export const NonRootUser = 65532;
const podSecurityContext = (): V1PodSecurityContext => ({
  runAsNonRoot: true,
  runAsUser: NonRootUser,
  runAsGroup: NonRootUser,
  fsGroup: NonRootUser,
  seccompProfile: { type: "RuntimeDefault" },
});
const containerSecurityContext = (): V1SecurityContext => ({
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  runAsNonRoot: true,
  capabilities: { drop: ["ALL"] },
});

/**
 * Requests as druid's compaction Job (600m, 3Gi); the memory limit bounds what one compaction may
 * take from its node: etcd's recommended largest database (8 GiB) restored in a temporary etcd.
 */
export const CompactionResources = {
  requests: { cpu: "600m", memory: "3Gi" },
  limits: { memory: "8Gi" },
} as const;

/** The longest `activeDeadlineSeconds` the Job gets, whatever the task asks: one day. */
export const MaxJobDeadlineSeconds = 86_400;

/** etcdbrctl and the libraries it uses may write temporary files outside the workspace. */
const TmpVolume = "tmp";

const hashOf = (value: string): string => createHash("sha256").update(value).digest("hex").slice(0, 8);

/**
 * `value` when it has at most `max` characters; else its start, a dash and 8 hex digits of a hash of
 * the whole, `max` characters at most. Trailing dashes and dots of the start are dropped, so the result
 * stays a valid DNS name or label value when `value` is one.
 */
export const shortened = (value: string, max: number): string =>
  value.length <= max ? value : `${value.slice(0, max - 9).replace(/[-.]+$/, "")}-${hashOf(value)}`;

/** `<task>-compact`, or `<start of task>-<hash>-compact` when that would exceed 63 characters. */
export const compactionJobName = (taskName: string): string =>
  `${shortened(taskName, MaxJobNameLength - JobNameSuffix.length)}${JobNameSuffix}`;

/** A name as a label value (at most 63 characters). */
export const labelValue = (name: string): string => shortened(name, MaxLabelValueLength);

/** A compaction Job made by opstask for a task of this name (this task's or an earlier namesake's). */
export const isCompactionJobFor = (job: JobInfo, taskName: string): boolean =>
  job.labels[JobLabels.managedBy] === ManagedBy &&
  job.labels[JobLabels.component] === Component &&
  job.labels[JobLabels.taskName] === labelValue(taskName);

/** The Job this very task created (same name and UID). */
export const isJobOf = (job: JobInfo, task: EtcdOpsTask): boolean =>
  isCompactionJobFor(job, task.metadata.name) && job.labels[JobLabels.taskUid] === task.metadata.uid;

/** The work directories of druid's compaction Job, then lease renewal off. */
export const compactArgs = (store: ReadonlyArray<string>): string[] => [
  "compact",
  `--data-dir=${WorkspaceDir}/compaction.etcd`,
  `--restoration-temp-snapshots-dir=${WorkspaceDir}/compaction.restoration.temp`,
  `--snapstore-temp-directory=${WorkspaceDir}/tmp`,
  "--enable-snapshot-lease-renewal=false",
  ...store,
];

export interface CompactionJobParams {
  readonly task: EtcdOpsTask;
  readonly target: CompactionTarget;
  readonly store: StorePodParts;
  readonly image: string;
  /** `activeDeadlineSeconds`: the Job fails with `DeadlineExceeded` after this long. */
  readonly timeoutSeconds: number;
}

export const compactionJob = ({ task, target, store, image, timeoutSeconds }: CompactionJobParams): V1Job => {
  const labels: Record<string, string> = {
    [JobLabels.managedBy]: ManagedBy,
    [JobLabels.component]: Component,
    [JobLabels.taskName]: labelValue(task.metadata.name),
    [JobLabels.taskUid]: task.metadata.uid,
    [JobLabels.etcdName]: labelValue(target.etcd.metadata.name),
    ...NetworkLabels,
  };
  return {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: {
      name: compactionJobName(task.metadata.name),
      namespace: task.metadata.namespace,
      labels,
      // Garbage collection removes the Job with its task even if Cleanup never ran. No
      // blockOwnerDeletion: setting it needs update rights on the task's finalizers.
      ownerReferences: [
        {
          apiVersion: ApiVersion,
          kind: Kind,
          name: task.metadata.name,
          uid: task.metadata.uid,
          controller: true,
        },
      ],
    },
    spec: {
      completions: 1,
      parallelism: 1,
      // A compaction that fails once fails again; an evicted or preempted pod is not its fault.
      backoffLimit: 0,
      podFailurePolicy: {
        rules: [{ action: "Ignore", onPodConditions: [{ type: "DisruptionTarget", status: "True" }] }],
      },
      activeDeadlineSeconds: Math.min(timeoutSeconds, MaxJobDeadlineSeconds),
      template: {
        metadata: { labels },
        spec: {
          restartPolicy: "Never",
          // etcdbrctl compact talks to the store only, never to the apiserver.
          automountServiceAccountToken: false,
          securityContext: podSecurityContext(),
          containers: [
            {
              name: ContainerName,
              image,
              imagePullPolicy: "IfNotPresent",
              args: compactArgs(store.args),
              env: [...store.env],
              volumeMounts: [
                { name: WorkspaceVolume, mountPath: WorkspaceDir },
                { name: TmpVolume, mountPath: "/tmp" },
                ...store.volumeMounts,
              ],
              resources: {
                requests: { ...CompactionResources.requests },
                limits: { ...CompactionResources.limits },
              },
              securityContext: containerSecurityContext(),
            },
          ],
          volumes: [
            { name: WorkspaceVolume, emptyDir: {} },
            { name: TmpVolume, emptyDir: {} },
            ...store.volumes,
          ],
        },
      },
    },
  };
};
