/**
 * The Job a compaction task creates: its deterministic name, its labels and owner, and the pod that
 * runs `etcdbrctl compact` against the Etcd's backup store, per provider.
 */
import type { V1Container, V1Job } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import type { StoreSpec } from "../../../src/etcd/api/etcd.ts";
import {
  compactionJobName,
  DefaultCompactionImage,
  labelValue,
} from "../../../src/etcd/on-demand-snapshot-compaction/job-spec.ts";
import {
  type StorageProvider,
  storageProvider,
} from "../../../src/etcd/on-demand-snapshot-compaction/store.ts";
import { secretObject } from "../support/fixtures.ts";
import {
  compactionTask,
  etcdWithStore,
  jobName,
  MemoryJobs,
  namespace,
  run,
  type StoreOptions,
  s3Store,
  taskName,
  taskUid,
  world,
} from "./fixtures.ts";

const dnsLabel = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Runs Execute once and returns the Job it created. */
const createdJob = async (
  store: StoreOptions,
  options: {
    readonly image?: string;
    readonly timeoutSeconds?: number;
    readonly defaultImage?: string;
    readonly allowedImages?: ReadonlyArray<string>;
  } = {},
  secrets: ReadonlyArray<Record<string, unknown>> = [],
): Promise<V1Job> => {
  const jobs = new MemoryJobs();
  const { defaultImage, allowedImages, ...taskOptions } = options;
  const outcome = await run(
    "execute",
    compactionTask(taskOptions),
    world(etcdWithStore(store), ...secrets),
    jobs,
    {
      ...(defaultImage === undefined ? {} : { defaultImage }),
      ...(allowedImages === undefined ? {} : { allowedImages }),
    },
  );
  expect(outcome.kind).toBe("retry");
  const job = jobs.job(namespace, jobName);
  if (job === undefined) throw new Error("no job created");
  return job;
};

const containerOf = (job: V1Job): V1Container => {
  const container = job.spec?.template.spec?.containers[0];
  if (container === undefined) throw new Error("no container");
  return container;
};

describe("Job name", () => {
  it("is <task>-compact when that fits 63 characters", () => {
    expect(compactionJobName("compact-1")).toBe("compact-1-compact");
    const longest = "a".repeat(55);
    expect(compactionJobName(longest)).toBe(`${longest}-compact`);
  });

  it("is shortened with a hash of the whole task name beyond that: ≤ 63, deterministic, distinct", () => {
    const a = `${"x".repeat(60)}-a`;
    const b = `${"x".repeat(60)}-b`;
    const nameA = compactionJobName(a);
    expect(nameA.length).toBeLessThanOrEqual(63);
    expect(nameA).toMatch(/^x{46}-[0-9a-f]{8}-compact$/);
    expect(compactionJobName(a)).toBe(nameA);
    expect(compactionJobName(b)).not.toBe(nameA);
  });

  it.each(["-", "."])("stays a valid DNS name when the cut falls on a '%s'", (separator) => {
    const job = compactionJobName(`${"a".repeat(45)}${separator}${"b".repeat(40)}`);
    expect(job).toMatch(/^a{45}-[0-9a-f]{8}-compact$/);
    expect(job).toMatch(dnsLabel);
  });

  it("label values of long names are shortened the same way", () => {
    expect(labelValue("short")).toBe("short");
    const long = "t".repeat(100);
    expect(labelValue(long)).toMatch(/^t{54}-[0-9a-f]{8}$/);
  });
});

describe("storage provider (druid's infrastructure → store mapping)", () => {
  it.each([
    ["aws", "S3"],
    ["S3", "S3"],
    ["stackit", "S3"],
    ["azure", "ABS"],
    ["gcp", "GCS"],
    ["alicloud", "OSS"],
    ["openstack", "Swift"],
    ["dell", "ECS"],
    ["openshift", "OCS"],
    ["Local", "Local"],
    ["local", "Local"],
    [undefined, "Local"],
    ["toString", undefined],
    ["LOCAL", undefined],
  ] as const)("%s → %s", (provider, expected: StorageProvider | undefined) => {
    const store: StoreSpec = { prefix: "p", ...(provider === undefined ? {} : { provider }) };
    expect(storageProvider(store)).toBe(expected);
  });
});

describe("Job spec", () => {
  it("S3 with a secret: etcdbrctl compact with druid's directories, the store flags and the secret mounted", async () => {
    const job = await createdJob(s3Store, { timeoutSeconds: 600 });
    expect(job.metadata).toMatchObject({
      name: jobName,
      namespace,
      labels: {
        "app.kubernetes.io/managed-by": "opstask",
        "app.kubernetes.io/component": "etcd-snapshot-compaction",
        "opstask.gardener.cloud/task-name": taskName,
        "opstask.gardener.cloud/task-uid": taskUid,
        "opstask.gardener.cloud/etcd-name": "test-etcd",
        "networking.gardener.cloud/to-dns": "allowed",
      },
      ownerReferences: [
        {
          apiVersion: "druid.gardener.cloud/v1alpha1",
          kind: "EtcdOpsTask",
          name: taskName,
          uid: taskUid,
          controller: true,
        },
      ],
    });
    expect(job.spec).toMatchObject({
      completions: 1,
      parallelism: 1,
      backoffLimit: 0,
      activeDeadlineSeconds: 600,
      podFailurePolicy: {
        rules: [{ action: "Ignore", onPodConditions: [{ type: "DisruptionTarget", status: "True" }] }],
      },
    });
    expect(job.spec?.ttlSecondsAfterFinished).toBeUndefined();
    const pod = job.spec?.template.spec;
    expect(pod).toMatchObject({ restartPolicy: "Never", automountServiceAccountToken: false });
    expect(job.spec?.template.metadata?.labels?.["opstask.gardener.cloud/task-uid"]).toBe(taskUid);
    expect(pod?.containers).toHaveLength(1);
    const container = containerOf(job);
    expect(container).toMatchObject({
      name: "compact-backup",
      image: DefaultCompactionImage,
      imagePullPolicy: "IfNotPresent",
      securityContext: { allowPrivilegeEscalation: false },
    });
    expect(container.resources?.limits?.memory).toBeDefined();
    expect(container.command).toBeUndefined(); // the image's entrypoint is etcdbrctl
    expect(container.args).toEqual([
      "compact",
      "--data-dir=/var/etcd/data/compaction.etcd",
      "--restoration-temp-snapshots-dir=/var/etcd/data/compaction.restoration.temp",
      "--snapstore-temp-directory=/var/etcd/data/tmp",
      "--enable-snapshot-lease-renewal=false",
      "--storage-provider=S3",
      "--store-prefix=shoot--dev--x/etcd-main",
      "--store-container=backup-bucket",
    ]);
    expect(container.env).toEqual([{ name: "AWS_APPLICATION_CREDENTIALS", value: "/var/etcd-backup" }]);
    expect(container.volumeMounts).toEqual([
      { name: "etcd-workspace-dir", mountPath: "/var/etcd/data" },
      { name: "tmp", mountPath: "/tmp" },
      { name: "etcd-backup-secret", mountPath: "/var/etcd-backup", readOnly: true },
    ]);
    expect(pod?.volumes).toEqual([
      { name: "etcd-workspace-dir", emptyDir: {} },
      { name: "tmp", emptyDir: {} },
      { name: "etcd-backup-secret", secret: { secretName: "etcd-backup" } },
    ]);
  });

  it("timeoutSeconds defaults to 1800 (activeDeadlineSeconds)", async () => {
    expect((await createdJob(s3Store)).spec?.activeDeadlineSeconds).toBe(1800);
  });

  it("image: config.image when the controller allows it, else the controller's default, else DefaultCompactionImage", async () => {
    expect(containerOf(await createdJob(s3Store)).image).toBe(DefaultCompactionImage);
    expect(
      containerOf(
        await createdJob(s3Store, {
          image: "registry.example/etcdbrctl:v1",
          allowedImages: ["registry.example/etcdbrctl:v1"],
        }),
      ).image,
    ).toBe("registry.example/etcdbrctl:v1");
    expect(containerOf(await createdJob(s3Store, { defaultImage: "registry.example/br:v2" })).image).toBe(
      "registry.example/br:v2",
    );
    expect(
      containerOf(
        await createdJob(s3Store, {
          image: "registry.example/etcdbrctl:v1",
          defaultImage: "registry.example/br:v2",
          allowedImages: ["registry.example/etcdbrctl:v1"],
        }),
      ).image,
    ).toBe("registry.example/etcdbrctl:v1");
  });

  it("GCS: the secret at /var/.gcp/ and GOOGLE_APPLICATION_CREDENTIALS at its serviceaccount.json", async () => {
    const container = containerOf(
      await createdJob({ provider: "gcp", secretRef: "gcs-secret", container: "b" }),
    );
    expect(container.args).toContain("--storage-provider=GCS");
    expect(container.env).toEqual([
      { name: "GOOGLE_APPLICATION_CREDENTIALS", value: "/var/.gcp/serviceaccount.json" },
    ]);
    expect(container.volumeMounts).toContainEqual({
      name: "etcd-backup-secret",
      mountPath: "/var/.gcp/",
      readOnly: true,
    });
  });

  it.each([
    ["azure", "ABS", "AZURE_APPLICATION_CREDENTIALS"],
    ["openstack", "Swift", "OPENSTACK_APPLICATION_CREDENTIALS"],
    ["alicloud", "OSS", "ALICLOUD_APPLICATION_CREDENTIALS"],
    ["openshift", "OCS", "OPENSHIFT_APPLICATION_CREDENTIALS"],
  ])("%s: --storage-provider=%s and %s at the mounted secret", async (provider, flag, variable) => {
    const container = containerOf(await createdJob({ provider, secretRef: "s" }));
    expect(container.args).toContain(`--storage-provider=${flag}`);
    expect(container.env).toEqual([{ name: variable, value: "/var/etcd-backup" }]);
  });

  it("ECS: credentials from the secret's keys, nothing mounted", async () => {
    const job = await createdJob({ provider: "dell", secretRef: "ecs" });
    const container = containerOf(job);
    expect(container.env).toEqual(
      [
        ["ECS_ENDPOINT", "endpoint"],
        ["ECS_ACCESS_KEY_ID", "accessKeyID"],
        ["ECS_SECRET_ACCESS_KEY", "secretAccessKey"],
      ].map(([name, key]) => ({ name, valueFrom: { secretKeyRef: { name: "ecs", key, optional: false } } })),
    );
    expect(job.spec?.template.spec?.volumes).toEqual([
      { name: "etcd-workspace-dir", emptyDir: {} },
      { name: "tmp", emptyDir: {} },
    ]);
  });

  it("a cloud store without secretRef: nothing mounted, no credentials variable (the pod's identity)", async () => {
    const job = await createdJob({ provider: "aws", container: "bucket" });
    expect(containerOf(job).env).toEqual([]);
    expect(job.spec?.template.spec?.volumes).toEqual([
      { name: "etcd-workspace-dir", emptyDir: {} },
      { name: "tmp", emptyDir: {} },
    ]);
  });

  it("endpointOverride → --store-endpoint-override; an empty prefix is not passed", async () => {
    const container = containerOf(
      await createdJob({ provider: "S3", prefix: "", endpointOverride: "https://s3.example:9000" }),
    );
    expect(container.args?.slice(5)).toEqual([
      "--storage-provider=S3",
      "--store-endpoint-override=https://s3.example:9000",
    ]);
  });

  it("Local without secret: druid's default host path plus the container, mounted at $HOME/<container>", async () => {
    const job = await createdJob({ provider: "Local", container: "default.bkp" });
    const container = containerOf(job);
    expect(container.args?.slice(5)).toEqual([
      "--storage-provider=Local",
      "--store-prefix=test-prefix",
      "--store-container=default.bkp",
    ]);
    expect(container.env).toEqual([{ name: "HOME", value: "/home/nonroot" }]); // $HOME/<container>/<prefix>
    expect(container.volumeMounts).toContainEqual({
      name: "host-storage",
      mountPath: "/home/nonroot/default.bkp",
    });
    expect(job.spec?.template.spec?.volumes).toContainEqual({
      name: "host-storage",
      hostPath: { path: "/etc/gardener/local-backupbuckets/default.bkp", type: "DirectoryOrCreate" },
    });
  });

  it("no provider (Local) and no container: $HOME itself is the mount; etcdbrctl adds default.bkp", async () => {
    const job = await createdJob({});
    expect(containerOf(job).args).toContain("--storage-provider=Local");
    expect(containerOf(job).args?.some((arg) => arg.startsWith("--store-container"))).toBe(false);
    expect(containerOf(job).volumeMounts).toContainEqual({
      name: "host-storage",
      mountPath: "/home/nonroot",
    });
    expect(job.spec?.template.spec?.volumes).toContainEqual({
      name: "host-storage",
      hostPath: { path: "/etc/gardener/local-backupbuckets", type: "DirectoryOrCreate" },
    });
  });

  it("Local with a secret: its hostPath key names the host directory", async () => {
    const job = await createdJob({ container: "c1", secretRef: "local-backup" }, {}, [
      secretObject("local-backup", { hostPath: "/var/buckets/" }),
    ]);
    expect(job.spec?.template.spec?.volumes).toContainEqual({
      name: "host-storage",
      hostPath: { path: "/var/buckets/c1", type: "DirectoryOrCreate" },
    });
  });
});
