/**
 * deploy/ on a real API server (kube-apiserver with RBAC and Pod Security admission):
 *
 * - the kustomization lists every manifest, and every manifest applies (server-side apply);
 * - the Deployment's pod meets the "restricted" Pod Security Standard its namespace enforces, and its
 *   arguments are options the controller accepts, serving on the ports the probes and the Service use;
 * - RBAC is sufficient: the real controller, authenticated as the deployed ServiceAccount (a
 *   TokenRequest token), runs a real full snapshot through a real etcd-backup-restore to Succeeded,
 *   records Events and deletes the task after its TTL; a TLS task reads the Etcd's StatefulSet and CA
 *   Secret; the real leader elector takes, renews, hands over and releases its Lease; the controller
 *   command with the Deployment's own arguments leads and runs a task — and no request is forbidden;
 * - and nothing more: SelfSubjectRulesReview lists exactly the expected rules, SelfSubjectAccessReview
 *   denies what the controller must not do, and no rule holds a `*`.
 *
 * Secrets: the ServiceAccount may `get` any Secret (no list, no watch). The CA bundle's Secret is named
 * by the Etcd's StatefulSet, so resourceNames cannot narrow it (see deploy/clusterrole.yaml).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import {
  ApiException,
  AppsV1Api,
  AuthorizationV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  EventsV1Api,
  type KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  loadYaml,
  PatchStrategy,
  type V1ClusterRole,
  type V1Deployment,
  type V1PodSpec,
  type V1PolicyRule,
  type V1Role,
  type V1Service,
  Watch,
} from "@kubernetes/client-node";
import { Effect, Exit, Scope } from "effect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments, parse as parseYaml } from "yaml";
import type { TaskStatus } from "../../src/api/status.ts";
import { serveController } from "../../src/cli/controller-command.ts";
import { readControllerOptions } from "../../src/cli/options.ts";
import { type BackupRestore, startBackupRestore } from "../../src/devcluster/backup-restore.ts";
import { etcdHandlerLayer, etcdHandlers } from "../../src/etcd/registry.ts";
import { RequestCounter } from "../../src/kube/request-metrics.ts";
import { type LeaderElection, runLeaderElection } from "../../src/runtime/leader-election.ts";
import { createTestNamespace, repoRoot, useControlPlane } from "../support/cluster.ts";
import { type RunningController, startControllerWith } from "../support/controller.ts";
import { waitFor } from "../support/wait.ts";

const deployDir = join(repoRoot, "deploy");
const crdFiles = readdirSync(join(deployDir, "crds"))
  .filter((file) => file.endsWith(".yaml"))
  .map((file) => join(deployDir, "crds", file));

const cluster = useControlPlane({ crds: crdFiles });

const systemNamespace = "opstask-system";
const serviceAccount = "opstask";
const leaseName = "opstask-controller";
const leaseRole = "opstask-leader-election";
const fieldManager = "opstask-deploy-test";
const tasks = { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcdopstasks" };
const etcds = { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcds" };

// ---- the manifests ---------------------------------------------------------------------------------

interface Manifest {
  readonly file: string;
  readonly object: KubernetesObject & { readonly apiVersion: string; readonly kind: string };
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const kustomizationResources = (): string[] => {
  const kustomization: unknown = parseYaml(readFileSync(join(deployDir, "kustomization.yaml"), "utf8"));
  if (!isRecord(kustomization) || !Array.isArray(kustomization.resources))
    throw new Error("deploy/kustomization.yaml has no resources list");
  return kustomization.resources.map(String);
};

const loadManifests = (): Manifest[] =>
  kustomizationResources().flatMap((file) =>
    parseAllDocuments(readFileSync(join(deployDir, file), "utf8"))
      .map((document): unknown => document.toJS())
      .filter(isRecord)
      .map((object) => {
        if (typeof object.apiVersion !== "string" || typeof object.kind !== "string")
          throw new Error(`${file}: a document without apiVersion and kind`);
        // client-node serialises bodies through its models, which drop wire names such as
        // `x-kubernetes-int-or-string` from plain objects: load each document into its model first.
        return { file, object: loadYaml<Manifest["object"]>(JSON.stringify(object)) };
      }),
  );

const manifests = loadManifests();

const only = <T>(kind: string, name?: string): T => {
  const found = manifests.filter(
    (m) => m.object.kind === kind && (name === undefined || m.object.metadata?.name === name),
  );
  if (found.length !== 1)
    throw new Error(`expected one ${kind} ${name ?? ""} in deploy/, found ${found.length}`);
  return found[0]?.object as T;
};

const deployment = only<V1Deployment>("Deployment");
const podSpec = (): V1PodSpec => {
  const spec = deployment.spec?.template.spec;
  if (spec === undefined) throw new Error("the Deployment has no pod spec");
  return spec;
};
const container = () => {
  const found = podSpec().containers[0];
  if (found === undefined) throw new Error("the Deployment has no container");
  return found;
};

/** Server-side apply of every manifest, once per file run (later tests need the RBAC objects). */
let applied: Promise<void> | undefined;
const applyAll = (kc: KubeConfig): Promise<void> => {
  applied ??= (async () => {
    const client = KubernetesObjectApi.makeApiClient(kc);
    for (const { file, object } of manifests) {
      try {
        await client.patch(object, undefined, undefined, fieldManager, true, PatchStrategy.ServerSideApply);
      } catch (error) {
        throw new Error(
          `${file}: ${object.kind} ${object.metadata?.name} did not apply: ${error instanceof ApiException ? error.body : String(error)}`,
        );
      }
    }
  })();
  return applied;
};

// ---- RBAC as rule tuples ----------------------------------------------------------------------------

/** `verb group/resource[/name]`, group "core" for the core group. */
const tuples = (
  rules: ReadonlyArray<Pick<V1PolicyRule, "verbs" | "apiGroups" | "resources" | "resourceNames">>,
) =>
  rules.flatMap((rule) =>
    rule.verbs.flatMap((verb) =>
      (rule.apiGroups ?? [""]).flatMap((group) =>
        (rule.resources ?? []).flatMap((resource) => {
          const names = rule.resourceNames ?? [];
          const base = `${verb} ${group === "" ? "core" : group}/${resource}`;
          return names.length === 0 ? [base] : names.map((name) => `${base}/${name}`);
        }),
      ),
    ),
  );

/** What the controller does in every namespace it watches. */
const expectedClusterRules = [
  "list druid.gardener.cloud/etcdopstasks",
  "watch druid.gardener.cloud/etcdopstasks",
  "create druid.gardener.cloud/etcdopstasks",
  "patch druid.gardener.cloud/etcdopstasks",
  "delete druid.gardener.cloud/etcdopstasks",
  "patch druid.gardener.cloud/etcdopstasks/status",
  "list opstask.gardener.cloud/taskschedules",
  "watch opstask.gardener.cloud/taskschedules",
  "patch opstask.gardener.cloud/taskschedules/status",
  "get druid.gardener.cloud/etcds",
  "list druid.gardener.cloud/etcds",
  "watch druid.gardener.cloud/etcds",
  "get apps/statefulsets",
  "get core/secrets",
  "create events.k8s.io/events",
  "create core/configmaps",
  "get core/configmaps/opstask-history-etcdopstasks",
  "list core/configmaps/opstask-history-etcdopstasks",
  "update core/configmaps/opstask-history-etcdopstasks",
  "create batch/jobs",
  "get batch/jobs",
  "delete batch/jobs",
];
/** What it does in its own namespace only: leader election. */
const expectedLeaseRules = [
  "create coordination.k8s.io/leases",
  `get coordination.k8s.io/leases/${leaseName}`,
  `patch coordination.k8s.io/leases/${leaseName}`,
];
/** In its own namespace too: one ConfigMap per task holding resumable steps' progress (src/runtime/own-record-kube.ts). */
const expectedRecordRules = [
  "create core/configmaps",
  "get core/configmaps",
  "patch core/configmaps",
  "delete core/configmaps",
];
/** Secure metrics: who is this scraper, and may it read /metrics (cluster-wide, in both installs). */
const expectedMetricsAuthRules = [
  "create authentication.k8s.io/tokenreviews",
  "create authorization.k8s.io/subjectaccessreviews",
];
/** Granted to every authenticated user by the bootstrap role system:basic-user. */
const basicUserRules = [
  "create authorization.k8s.io/selfsubjectaccessreviews",
  "create authorization.k8s.io/selfsubjectrulesreviews",
  "create authentication.k8s.io/selfsubjectreviews",
];

const sorted = (values: Iterable<string>): string[] => [...new Set(values)].sort();

// ---- tasks, observed through a watch ------------------------------------------------------------------

interface Observed {
  readonly states: string[];
  status?: TaskStatus;
  deleted: boolean;
}

/** Every state each task of `namespace` passes through, from a watch that starts before any task. */
const watchTasks = async (kc: KubeConfig, namespace: string) => {
  const api = kc.makeApiClient(CustomObjectsApi);
  const list: unknown = await api.listNamespacedCustomObject({ ...tasks, namespace });
  const resourceVersion =
    isRecord(list) && isRecord(list.metadata) ? String(list.metadata.resourceVersion ?? "") : "";
  const seen = new Map<string, Observed>();
  let failure: unknown;
  const controller = await new Watch(kc).watch(
    `/apis/${tasks.group}/${tasks.version}/namespaces/${namespace}/${tasks.plural}`,
    { resourceVersion, allowWatchBookmarks: false },
    (type: string, object: unknown) => {
      if (!isRecord(object) || !isRecord(object.metadata)) return;
      const name = String(object.metadata.name);
      const entry = seen.get(name) ?? { states: [], deleted: false };
      seen.set(name, entry);
      const status = object.status as TaskStatus | undefined;
      if (status !== undefined) entry.status = status;
      const state = status?.state;
      if (state !== undefined && entry.states.at(-1) !== state) entry.states.push(state);
      if (type === "DELETED") entry.deleted = true;
    },
    (error: unknown) => {
      if (error !== null && error !== undefined) failure = error;
    },
  );
  const until = async (name: string, done: (entry: Observed) => boolean, what: string): Promise<Observed> => {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const entry = seen.get(name);
      if (entry !== undefined && done(entry)) return entry;
      if (failure !== undefined) throw new Error(`watch of ${namespace} ended: ${String(failure)}`);
      if (Date.now() > deadline)
        throw new Error(`${name}: not ${what} after 30 s; seen ${JSON.stringify(entry)}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  return { until, stop: () => controller.abort() };
};

const forbidden = (counter: RequestCounter) =>
  counter.snapshot().filter((entry) => entry.code === 401 || entry.code === 403);

// ---- the tests ----------------------------------------------------------------------------------------

describe("deploy/ manifests", () => {
  it("the kustomization lists every manifest in deploy/, and each one applies", async () => {
    const listed = new Set(kustomizationResources());
    const files = [
      ...readdirSync(deployDir).filter((f) => f.endsWith(".yaml") && f !== "kustomization.yaml"),
      ...readdirSync(join(deployDir, "crds"))
        .filter((f) => f.endsWith(".yaml"))
        .map((f) => `crds/${f}`),
    ];
    expect(sorted(listed)).toEqual(sorted(files));

    const kc = cluster().makeKubeConfig();
    await applyAll(kc);
    const client = KubernetesObjectApi.makeApiClient(kc);
    for (const { object } of manifests) {
      const live = await client.read({
        apiVersion: object.apiVersion,
        kind: object.kind,
        metadata: {
          name: object.metadata?.name ?? "",
          ...(object.metadata?.namespace === undefined ? {} : { namespace: object.metadata.namespace }),
        },
      });
      expect(live.metadata?.uid, `${object.kind} ${object.metadata?.name}`).toBeTruthy();
    }
    // Applying again changes nothing (the manifests are what the server stores, defaults aside).
    const dryRun = KubernetesObjectApi.makeApiClient(kc);
    for (const { object } of manifests) {
      await dryRun.patch(object, undefined, "All", fieldManager, true, PatchStrategy.ServerSideApply);
    }
  });

  it("the controller pod meets the restricted Pod Security Standard its namespace enforces", async () => {
    const kc = cluster().makeKubeConfig();
    await applyAll(kc);
    const core = kc.makeApiClient(CoreV1Api);
    const pod = (spec: V1PodSpec) => ({
      namespace: systemNamespace,
      dryRun: "All",
      body: { metadata: { name: "opstask-pss-check", namespace: systemNamespace }, spec },
    });
    await core.createNamespacedPod(pod(podSpec()));

    // The check has teeth: the same pod with privilege escalation allowed is refused.
    const loosened: V1PodSpec = {
      ...podSpec(),
      containers: [{ ...container(), securityContext: { allowPrivilegeEscalation: true } }],
    };
    const refused = await core.createNamespacedPod(pod(loosened)).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(ApiException);
    expect((refused as ApiException<string>).code).toBe(403);
    expect(String((refused as ApiException<string>).body)).toContain("PodSecurity");
  });

  it("the Deployment passes options the controller accepts, on the ports its probes and Service use", () => {
    const args = container().args ?? [];
    expect(args[0]).toBe("controller");
    const options = readControllerOptions(args.slice(1), {});
    const port = (address: string) => Number(address.slice(address.lastIndexOf(":") + 1));
    const ports = new Map((container().ports ?? []).map((p) => [p.name, p.containerPort]));

    expect(options.leaderElect).toBe(true);
    expect(options.leaderElectionNamespace).toBe(systemNamespace);
    expect(options.leaderElectionId).toBe(leaseName);
    expect(options.metricsSecure).toBe(true);
    expect(ports.get("metrics")).toBe(8443);
    expect(port(options.metricsAddress)).toBe(8443);
    expect(ports.get("probes")).toBe(8081);
    expect(port(options.probeAddress)).toBe(8081);
    expect(container().livenessProbe?.httpGet).toMatchObject({ path: "/healthz", port: "probes" });
    expect(container().readinessProbe?.httpGet).toMatchObject({ path: "/readyz", port: "probes" });

    const service = only<V1Service>("Service");
    expect(service.spec?.ports?.[0]?.targetPort).toBe("metrics");
    expect(service.spec?.selector).toEqual(deployment.spec?.selector.matchLabels);

    expect(deployment.spec?.replicas).toBe(1);
    expect(podSpec().serviceAccountName).toBe(serviceAccount);
    expect(container().securityContext).toMatchObject({
      runAsNonRoot: true,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ["ALL"] },
      seccompProfile: { type: "RuntimeDefault" },
    });
    expect(container().resources?.requests).toBeDefined();
    expect(container().resources?.limits).toBeDefined();
  });

  it("the ClusterRole and the Role hold exactly the expected rules, without wildcards", () => {
    const clusterRole = only<V1ClusterRole>("ClusterRole", "opstask");
    const role = only<V1Role>("Role", leaseRole);
    for (const rule of [...(clusterRole.rules ?? []), ...(role.rules ?? [])]) {
      const words = [
        ...rule.verbs,
        ...(rule.apiGroups ?? []),
        ...(rule.resources ?? []),
        ...(rule.resourceNames ?? []),
      ];
      expect(
        words.filter((word) => word.includes("*")),
        JSON.stringify(rule),
      ).toEqual([]);
      expect(rule.nonResourceURLs).toBeUndefined();
    }
    expect(sorted(tuples(clusterRole.rules ?? []))).toEqual(sorted(expectedClusterRules));
    expect(sorted(tuples(role.rules ?? []))).toEqual(sorted(expectedLeaseRules));
    expect(role.metadata?.namespace).toBe(systemNamespace);
    const records = only<V1Role>("Role", "opstask-task-records");
    expect(sorted(tuples(records.rules ?? []))).toEqual(sorted(expectedRecordRules));
    expect(records.metadata?.namespace).toBe(systemNamespace);
    const metricsAuth = only<V1ClusterRole>("ClusterRole", "opstask-metrics-auth");
    expect(sorted(tuples(metricsAuth.rules ?? []))).toEqual(sorted(expectedMetricsAuthRules));
  });
});

describe("the opstask ServiceAccount", () => {
  const etcdName = "etcd-deploy";
  const tlsEtcdName = "etcd-deploy-tls";
  const caSecretName = "etcd-deploy-tls-ca";
  let admin: KubeConfig;
  let asController: KubeConfig;
  let namespace: string;
  let backupRestore: BackupRestore | undefined;
  let controller: RunningController | undefined;
  let watcher: Awaited<ReturnType<typeof watchTasks>> | undefined;
  const handlerRequests = new RequestCounter();

  const createEtcd = async (name: string, backup: Record<string, unknown>): Promise<string> => {
    const api = admin.makeApiClient(CustomObjectsApi);
    const created: unknown = await api.createNamespacedCustomObject({
      ...etcds,
      namespace,
      body: {
        apiVersion: "druid.gardener.cloud/v1alpha1",
        kind: "Etcd",
        metadata: { name, namespace },
        spec: { replicas: 1, labels: { app: name }, etcd: {}, backup },
      },
    });
    const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
    await api.patchNamespacedCustomObjectStatus({
      ...etcds,
      namespace,
      name,
      body: [
        {
          op: "add",
          path: "/status",
          value: {
            conditions: [
              {
                type: "Ready",
                status: "True",
                reason: "Quorate",
                message: "deploy test",
                lastTransitionTime: now,
                lastUpdateTime: now,
              },
            ],
          },
        },
      ],
    });
    if (!isRecord(created) || !isRecord(created.metadata)) throw new Error("Etcd create returned no object");
    return String(created.metadata.uid);
  };

  const createTask = (name: string, etcd: string) =>
    admin.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
      ...tasks,
      namespace,
      body: {
        apiVersion: "druid.gardener.cloud/v1alpha1",
        kind: "EtcdOpsTask",
        metadata: { name, namespace },
        spec: { etcdName: etcd, ttlSecondsAfterFinished: 1, config: { onDemandSnapshot: { type: "full" } } },
      },
    });

  beforeAll(async () => {
    const plane = cluster();
    admin = plane.makeKubeConfig();
    await applyAll(admin);
    const token = await plane.serviceAccountToken(systemNamespace, serviceAccount, {
      create: false,
      expirationSeconds: 3600,
    });
    asController = plane.kubeConfigForToken(
      token,
      `system:serviceaccount:${systemNamespace}:${serviceAccount}`,
    );
    namespace = await createTestNamespace(admin, "deploy");
    backupRestore = await startBackupRestore({ deltaSnapshotPeriod: "1h" });

    // A plain-HTTP Etcd whose backup-restore is real.
    await createEtcd(etcdName, { port: backupRestore.port, store: { prefix: "deploy" } });

    // A TLS Etcd: its StatefulSet names the CA Secret, whose bundle holds no certificate. The task
    // fails with ERR_APPEND_CA_CERTS only after both reads succeeded (a forbidden read is retried).
    const tlsUid = await createEtcd(tlsEtcdName, {
      port: backupRestore.port,
      store: { prefix: "deploy-tls" },
      tls: {
        serverTLSSecretRef: { name: "etcd-deploy-tls-server" },
        tlsCASecretRef: { name: caSecretName, dataKey: "bundle.crt" },
      },
    });
    await admin.makeApiClient(CoreV1Api).createNamespacedSecret({
      namespace,
      body: {
        metadata: { name: caSecretName, namespace },
        stringData: { "bundle.crt": "not a certificate" },
      },
    });
    await admin.makeApiClient(AppsV1Api).createNamespacedStatefulSet({
      namespace,
      body: {
        metadata: {
          name: tlsEtcdName,
          namespace,
          ownerReferences: [
            {
              apiVersion: "druid.gardener.cloud/v1alpha1",
              kind: "Etcd",
              name: tlsEtcdName,
              uid: tlsUid,
              controller: true,
            },
          ],
        },
        spec: {
          serviceName: tlsEtcdName,
          selector: { matchLabels: { app: tlsEtcdName } },
          template: {
            metadata: { labels: { app: tlsEtcdName } },
            spec: {
              containers: [{ name: "etcd", image: "etcd" }],
              volumes: [{ name: "backup-restore-ca", secret: { secretName: caSecretName } }],
            },
          },
        },
      },
    });

    watcher = await watchTasks(admin, namespace);
    const resolve = [{ host: `${etcdName}-client.${namespace}`, port: "*" as const, address: "127.0.0.1" }];
    // All namespaces, as the Deployment runs it; every request as the ServiceAccount.
    controller = await startControllerWith(
      asController,
      etcdHandlers,
      etcdHandlerLayer({ kubeConfig: asController, resolve, counter: handlerRequests }),
      { requeueIntervalMs: 2_000, backoffCapMs: 2_000 },
    );
  }, 120_000);

  afterAll(async () => {
    watcher?.stop();
    await controller?.stop();
    await backupRestore?.stop();
  }, 60_000);

  it("runs a full snapshot to Succeeded, records Events, and deletes the task after its 1 s TTL", async () => {
    if (watcher === undefined || backupRestore === undefined) throw new Error("setup failed");
    await backupRestore.putKeys(3); // a full snapshot of unchanged data may add no file
    const before = await backupRestore.listSnapshots();
    await createTask("full", etcdName);
    const entry = await watcher.until("full", (e) => e.deleted, "deleted");
    expect(entry.states).toContain("Succeeded");
    expect(entry.states).not.toContain("Failed");
    expect(entry.status?.lastOperation?.description).toBe("Snapshot created successfully");
    const added = (await backupRestore.listSnapshots()).filter((file) => !before.includes(file));
    expect(added.some((file) => /Full-.*\.gz$/.test(file))).toBe(true);

    const events = await admin.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace });
    const reasons = events.items.filter((e) => e.regarding?.name === "full").map((e) => e.reason);
    expect(reasons).toContain("Succeeded");
    expect(forbidden(controller?.counter ?? new RequestCounter())).toEqual([]);
    expect(forbidden(handlerRequests)).toEqual([]);
  });

  it("reads the Etcd's StatefulSet and its CA Secret for a TLS backup-restore", async () => {
    if (watcher === undefined) throw new Error("setup failed");
    await createTask("tls", tlsEtcdName);
    const entry = await watcher.until("tls", (e) => e.deleted, "deleted");
    expect(entry.states).toContain("Failed");
    expect(entry.status?.lastErrors?.map((e) => e.code)).toContain("ERR_APPEND_CA_CERTS");
    expect(handlerRequests.count("get", 200)).toBeGreaterThanOrEqual(4); // Etcd ×2, StatefulSet, Secret
    expect(forbidden(handlerRequests)).toEqual([]);
    expect(forbidden(controller?.counter ?? new RequestCounter())).toEqual([]);
  });

  it("takes, renews, hands over and releases the leader-election Lease", async () => {
    const counter = new RequestCounter();
    const elect = async (identity: string) => {
      const scope = Scope.makeUnsafe();
      const election: LeaderElection = await Effect.runPromise(
        runLeaderElection({
          kubeConfig: asController,
          namespace: systemNamespace,
          name: leaseName,
          identity,
          leaseDuration: "3 seconds",
          renewDeadline: "2 seconds",
          retryPeriod: "250 millis",
          counter,
        }).pipe(Scope.provide(scope)),
      );
      let stopped: Promise<void> | undefined;
      const stop = (): Promise<void> => {
        stopped ??= Effect.runPromise(Scope.close(scope, Exit.void));
        return stopped;
      };
      return { election, stop };
    };
    const until = async (what: string, done: () => boolean) => {
      const deadline = Date.now() + 10_000;
      while (!done()) {
        if (Date.now() > deadline)
          throw new Error(`not ${what} after 10 s: ${JSON.stringify(counter.snapshot())}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    const holder = async () =>
      (
        await admin
          .makeApiClient(CoordinationV1Api)
          .readNamespacedLease({ namespace: systemNamespace, name: leaseName })
      ).spec?.holderIdentity;

    const first = await elect("deploy-test-a");
    let second: Awaited<ReturnType<typeof elect>> | undefined;
    try {
      await until("leading", () => first.election.isLeader());
      expect(await holder()).toBe("deploy-test-a");
      second = await elect("deploy-test-b");
      const standby = second;
      await until("seeing the holder", () => standby.election.status().holder === "deploy-test-a");
      await new Promise((resolve) => setTimeout(resolve, 1_000)); // a few renewals
      expect(first.election.isLeader()).toBe(true);
      expect(standby.election.isLeader()).toBe(false);
      await first.stop(); // releases
      await until("handed over", () => standby.election.isLeader());
      expect(await holder()).toBe("deploy-test-b");
    } finally {
      await first.stop();
      await second?.stop();
    }
    expect(await holder()).toBe("");
    expect(counter.count("create")).toBeGreaterThanOrEqual(1);
    expect(counter.count("get")).toBeGreaterThanOrEqual(1);
    expect(counter.count("patch", 200)).toBeGreaterThanOrEqual(3);
    expect(forbidden(counter)).toEqual([]);
  });

  it("runs the controller command with the Deployment's arguments: it leads, runs a task, releases", async () => {
    if (watcher === undefined) throw new Error("setup failed");
    await controller?.stop(); // one controller at a time
    controller = undefined;
    const args = [
      ...(container().args ?? []).slice(1),
      // The test's own: a backup-restore on localhost, no listeners on the shared ports, quiet logs.
      `--resolve=${etcdName}-client.${namespace}:*:127.0.0.1`,
      "--metrics-address=0",
      "--probe-address=0",
      "--log-level=error",
    ];
    const stop = new AbortController();
    const served = serveController(asController, readControllerOptions(args, {}), stop.signal);
    try {
      await createTask("full-command", etcdName);
      const entry = await watcher.until("full-command", (e) => e.deleted, "deleted");
      expect(entry.states).toContain("Succeeded");
      // Its outcome outlives it, in the history ConfigMap the ServiceAccount may write (by name only).
      const history = await waitFor("the task's outcome in the history ConfigMap", async () => {
        const found = await admin
          .makeApiClient(CoreV1Api)
          .readNamespacedConfigMap({ namespace, name: "opstask-history-etcdopstasks" })
          .catch(() => undefined);
        return found?.data?.["entries.json"]?.includes(`"target": "${etcdName}"`) === true
          ? found
          : undefined;
      });
      expect(history.metadata?.managedFields?.map((field) => field.manager)).toEqual(["opstask"]);
      const lease = await admin
        .makeApiClient(CoordinationV1Api)
        .readNamespacedLease({ namespace: systemNamespace, name: leaseName });
      expect(lease.spec?.holderIdentity).toMatch(/_\d+$/);
    } finally {
      stop.abort();
      expect(await served).toBe("stopped");
    }
    const released = await admin
      .makeApiClient(CoordinationV1Api)
      .readNamespacedLease({ namespace: systemNamespace, name: leaseName });
    expect(released.spec?.holderIdentity ?? "").toBe("");
  });

  it("holds exactly the expected rules (SelfSubjectRulesReview)", async () => {
    const authz = asController.makeApiClient(AuthorizationV1Api);
    const rulesIn = async (ns: string) => {
      const review = await authz.createSelfSubjectRulesReview({ body: { spec: { namespace: ns } } });
      expect(review.status?.incomplete).toBe(false);
      return sorted(tuples(review.status?.resourceRules ?? []));
    };
    expect(await rulesIn(namespace)).toEqual(
      sorted([...expectedClusterRules, ...expectedMetricsAuthRules, ...basicUserRules]),
    );
    expect(await rulesIn(systemNamespace)).toEqual(
      sorted([
        ...expectedClusterRules,
        ...expectedMetricsAuthRules,
        ...expectedLeaseRules,
        ...expectedRecordRules,
        ...basicUserRules,
      ]),
    );
  });

  it("may do what the controller does, and is denied what it must not do (SelfSubjectAccessReview)", async () => {
    const authz = asController.makeApiClient(AuthorizationV1Api);
    const allowed = async (
      verb: string,
      group: string,
      resource: string,
      ns: string,
      extra: { subresource?: string; name?: string } = {},
    ): Promise<boolean> => {
      const review = await authz.createSelfSubjectAccessReview({
        body: { spec: { resourceAttributes: { verb, group, resource, namespace: ns, ...extra } } },
      });
      return review.status?.allowed === true;
    };
    const druid = "druid.gardener.cloud";

    const must: Array<[string, string, string, string, { subresource?: string; name?: string }?]> = [
      ["list", druid, "etcdopstasks", ""],
      ["watch", druid, "etcdopstasks", ""],
      ["patch", druid, "etcdopstasks", namespace],
      ["delete", druid, "etcdopstasks", namespace],
      ["patch", druid, "etcdopstasks", namespace, { subresource: "status" }],
      // a TaskSchedule's runs (docs/schedules.md)
      ["create", druid, "etcdopstasks", namespace],
      ["list", "opstask.gardener.cloud", "taskschedules", ""],
      ["watch", "opstask.gardener.cloud", "taskschedules", ""],
      ["patch", "opstask.gardener.cloud", "taskschedules", namespace, { subresource: "status" }],
      ["list", druid, "etcds", ""],
      ["watch", druid, "etcds", ""],
      ["get", druid, "etcds", namespace],
      ["get", "apps", "statefulsets", namespace],
      ["get", "", "secrets", namespace, { name: caSecretName }],
      ["create", "events.k8s.io", "events", namespace],
      ["create", "batch", "jobs", namespace],
      ["get", "batch", "jobs", namespace],
      ["delete", "batch", "jobs", namespace],
      ["get", "", "configmaps", namespace, { name: "opstask-history-etcdopstasks" }],
      ["update", "", "configmaps", namespace, { name: "opstask-history-etcdopstasks" }],
      ["create", "", "configmaps", namespace],
      // the takeover read: one LIST across namespaces by name (fieldSelector metadata.name)
      ["list", "", "configmaps", "", { name: "opstask-history-etcdopstasks" }],
      ["create", "coordination.k8s.io", "leases", systemNamespace],
      ["get", "coordination.k8s.io", "leases", systemNamespace, { name: leaseName }],
      ["patch", "coordination.k8s.io", "leases", systemNamespace, { name: leaseName }],
      // the controller's records of its tasks, in its own namespace
      ["get", "", "configmaps", systemNamespace],
      ["patch", "", "configmaps", systemNamespace],
      ["delete", "", "configmaps", systemNamespace],
    ];
    const mustNot: Array<[string, string, string, string, { subresource?: string; name?: string }?]> = [
      // tasks are created by users (and by schedules); the controller never replaces them
      ["update", druid, "etcdopstasks", namespace],
      // a schedule is its user's: the controller writes its status only
      ["create", "opstask.gardener.cloud", "taskschedules", namespace],
      ["patch", "opstask.gardener.cloud", "taskschedules", namespace],
      ["delete", "opstask.gardener.cloud", "taskschedules", namespace],
      ["update", druid, "etcdopstasks", namespace],
      ["update", druid, "etcdopstasks", namespace, { subresource: "status" }],
      // Etcds are read only
      ["create", druid, "etcds", namespace],
      ["update", druid, "etcds", namespace],
      ["patch", druid, "etcds", namespace],
      ["delete", druid, "etcds", namespace],
      ["patch", druid, "etcds", namespace, { subresource: "status" }],
      // Secrets: a named get only, never enumerated or written
      ["list", "", "secrets", namespace],
      ["list", "", "secrets", ""],
      ["watch", "", "secrets", ""],
      ["create", "", "secrets", namespace],
      ["update", "", "secrets", namespace],
      ["delete", "", "secrets", namespace],
      // workloads
      ["list", "apps", "statefulsets", namespace],
      ["update", "apps", "statefulsets", namespace],
      ["patch", "apps", "statefulsets", namespace],
      ["create", "", "pods", namespace],
      ["delete", "", "pods", namespace],
      ["create", "", "pods", namespace, { subresource: "exec" }],
      ["list", "batch", "jobs", namespace],
      ["update", "batch", "jobs", namespace],
      ["patch", "batch", "jobs", namespace],
      // ConfigMaps: only the history's, by name
      ["get", "", "configmaps", namespace],
      ["list", "", "configmaps", namespace],
      ["update", "", "configmaps", namespace, { name: "some-other-config" }],
      ["delete", "", "configmaps", namespace, { name: "opstask-history-etcdopstasks" }],
      ["create", "", "serviceaccounts", namespace, { subresource: "token" }],
      // events: created, never rewritten or read; core/v1 events are not used
      ["list", "events.k8s.io", "events", namespace],
      ["patch", "events.k8s.io", "events", namespace],
      ["create", "", "events", namespace],
      // Leases: one, in its own namespace
      ["create", "coordination.k8s.io", "leases", namespace],
      ["get", "coordination.k8s.io", "leases", namespace, { name: leaseName }],
      ["get", "coordination.k8s.io", "leases", systemNamespace, { name: "someone-else" }],
      ["patch", "coordination.k8s.io", "leases", systemNamespace, { name: "someone-else" }],
      ["update", "coordination.k8s.io", "leases", systemNamespace, { name: leaseName }],
      ["delete", "coordination.k8s.io", "leases", systemNamespace, { name: leaseName }],
      ["list", "coordination.k8s.io", "leases", systemNamespace],
      // no way up
      ["escalate", "rbac.authorization.k8s.io", "clusterroles", ""],
      ["bind", "rbac.authorization.k8s.io", "clusterroles", ""],
      ["create", "rbac.authorization.k8s.io", "rolebindings", namespace],
      ["impersonate", "", "users", ""],
      ["create", "apiextensions.k8s.io", "customresourcedefinitions", ""],
    ];
    const check = async (list: typeof must) =>
      Promise.all(
        list.map(async ([verb, group, resource, ns, extra]) => ({
          request: `${verb} ${group || "core"}/${resource}${extra?.subresource ? `/${extra.subresource}` : ""}${extra?.name ? ` ${extra.name}` : ""} in ${ns || "all namespaces"}`,
          allowed: await allowed(verb, group, resource, ns, extra),
        })),
      );
    expect((await check(must)).filter((r) => !r.allowed).map((r) => r.request)).toEqual([]);
    expect((await check(mustNot)).filter((r) => r.allowed).map((r) => r.request)).toEqual([]);
  });
});
