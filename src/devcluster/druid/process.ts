/**
 * The real etcd-druid as a process on a local control plane, set up as its Helm chart sets it up:
 * the chart's ClusterRole bound to ServiceAccount `etcd-druid` in `druid-system` (a TokenRequest token
 * in a kubeconfig of its own, so RBAC applies), and the chart's default operator configuration with
 * what a process outside a cluster needs: leader election and webhooks off, metrics on 127.0.0.1.
 *
 * Reaching a stand-in sidecar: druid builds `http://<etcd>-client.<namespace>:<backup port>/snapshot/…`
 * and posts it with Go's default transport, which honours HTTP_PROXY (and never proxies loopback, so
 * the apiserver at 127.0.0.1 is reached directly). Pointing HTTP_PROXY at the stand-in makes every
 * sidecar call arrive there as a proxy request (absolute URL, Host header `<etcd>-client.<ns>:<port>`),
 * with no DNS and no /etc/hosts edit. Plain HTTP only (an Etcd without `spec.backup.tls`).
 *
 * What the Etcd controller (always on in druid) does to the Etcds a test creates is kept small by
 * druid's own annotation (`druidEtcdAnnotations`): spec reconciliation suspended (no StatefulSet,
 * Services, …). Its status checks still run on every Etcd (druid ≥ v0.38 has no annotation that stops
 * them): they write the Ready condition from the member Leases, which a stand-in Etcd therefore has
 * (bench/druid-support.ts `createEtcds`), and they run again every `etcdStatusSyncPeriod`.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  ApiException,
  CoreV1Api,
  type KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  PatchStrategy,
} from "@kubernetes/client-node";
import { parse as parseYaml, stringify } from "yaml";
import type { ControlPlane } from "../control-plane.ts";
import { writeKubeconfig } from "../kubeconfig.ts";
import { freePort } from "../ports.ts";
import { type ManagedProcess, startProcess } from "../process.ts";
import type { DruidPeer } from "./peer.ts";

export const druidNamespace = "druid-system";
export const druidServiceAccount = "etcd-druid";
export const druidUser = `system:serviceaccount:${druidNamespace}:${druidServiceAccount}`;

/** Put on every Etcd a test creates while druid may run (see the module comment). */
export const druidEtcdAnnotations: Readonly<Record<string, string>> = {
  "druid.gardener.cloud/suspend-etcd-spec-reconcile": "true",
};

/** druid's own CRDs (EtcdOpsTask, Etcd and EtcdCopyBackupsTask: druid's informers need all three). */
export const druidCrdFiles = (peer: DruidPeer): string[] =>
  [
    "druid.gardener.cloud_etcdopstasks.yaml",
    "druid.gardener.cloud_etcds.yaml",
    "druid.gardener.cloud_etcdcopybackupstasks.yaml",
  ].map((file) => join(peer.sourceDir, "charts", "crds", file));

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const fieldManager = "opstask-druid-peer";

/** Server-side applies objects (idempotent). */
export const applyObjects = async (kc: KubeConfig, objects: ReadonlyArray<KubernetesObject>) => {
  const client = KubernetesObjectApi.makeApiClient(kc);
  for (const object of objects)
    await client.patch(object, undefined, undefined, fieldManager, true, PatchStrategy.ServerSideApply);
};

/** The chart's ClusterRole and its binding to druid's ServiceAccount (templating: only the namespace). */
const chartRbac = (peer: DruidPeer): KubernetesObject[] => {
  const text = readFileSync(join(peer.sourceDir, "charts", "templates", "clusterrole.yaml"), "utf8");
  const role: unknown = parseYaml(text.replaceAll("{{ .Release.Namespace }}", druidNamespace));
  if (!isRecord(role) || !isRecord(role.metadata) || !Array.isArray(role.rules))
    throw new Error("druid chart: templates/clusterrole.yaml is not a ClusterRole");
  const name = String(role.metadata.name);
  return [
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name },
      ...{ rules: role.rules },
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name },
      ...{
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name },
        subjects: [{ kind: "ServiceAccount", name: druidServiceAccount, namespace: druidNamespace }],
      },
    } as KubernetesObject,
  ];
};

/** The chart's default `operatorConfig` values (charts/values.yaml). */
const chartOperatorConfig = (peer: DruidPeer): Record<string, unknown> => {
  const values: unknown = parseYaml(readFileSync(join(peer.sourceDir, "charts", "values.yaml"), "utf8"));
  const config = isRecord(values) ? values.operatorConfig : undefined;
  if (!isRecord(config)) throw new Error("druid chart: values.yaml has no operatorConfig");
  return config;
};

export interface DruidSettings {
  /**
   * Client QPS and burst. The chart's 100/150 throttles druid's own requests (one run fell to half its
   * throughput); the benchmark lifts it so that druid is measured at its best.
   */
  readonly qps?: number;
  readonly burst?: number;
  /** The Etcd controller's periodic re-reconcile (chart: 15s). */
  readonly etcdStatusSyncPeriod?: string;
  /**
   * How long after its Lease's last renewal a member still counts ready (chart: 1m): a stand-in
   * sidecar renews no Lease, so a stand-in Etcd's stays as it was created.
   */
  readonly memberUnknownThreshold?: string;
  /** EtcdOpsTask workers (chart: 3). */
  readonly concurrentSyncs?: number;
  readonly requeueInterval?: string;
  /** Where HTTP_PROXY points: the stand-in sidecar (`127.0.0.1:<port>`). */
  readonly sidecarProxy?: string;
  readonly logLevel?: "info" | "debug";
  /**
   * An image vector override (druid reads the file IMAGEVECTOR_OVERWRITE names, merged by image name
   * over its built-in internal/images/images.yaml): where the StatefulSets' images come from.
   */
  readonly imageVectorFile?: string;
  readonly onLine?: (line: string) => void;
}

/** The operator configuration druid reads (`--config`), as the chart renders it, with the settings. */
export const operatorConfiguration = (
  peer: DruidPeer,
  metricsPort: number,
  settings: DruidSettings,
): Record<string, unknown> => {
  const chart = chartOperatorConfig(peer);
  const pick = (path: string[]): unknown =>
    path.reduce<unknown>((value, key) => (isRecord(value) ? value[key] : undefined), chart);
  const controllers = isRecord(chart.controllers) ? chart.controllers : {};
  const etcd = isRecord(controllers.etcd) ? controllers.etcd : {};
  const opsTask = isRecord(controllers.etcdOpsTask) ? controllers.etcdOpsTask : {};
  return {
    apiVersion: "config.druid.gardener.cloud/v1alpha1",
    kind: "OperatorConfiguration",
    clientConnection: {
      qps: settings.qps ?? pick(["clientConnection", "qps"]),
      burst: settings.burst ?? pick(["clientConnection", "burst"]),
    },
    leaderElection: { ...(isRecord(chart.leaderElection) ? chart.leaderElection : {}), enabled: false },
    server: {
      webhooks: { port: 0 },
      metrics: { bindAddress: "127.0.0.1", port: metricsPort },
    },
    controllers: {
      ...controllers,
      etcd: {
        ...etcd,
        ...(settings.etcdStatusSyncPeriod === undefined
          ? {}
          : { etcdStatusSyncPeriod: settings.etcdStatusSyncPeriod }),
        ...(settings.memberUnknownThreshold === undefined
          ? {}
          : {
              etcdMember: {
                ...(isRecord(etcd.etcdMember) ? etcd.etcdMember : {}),
                unknownThreshold: settings.memberUnknownThreshold,
              },
            }),
      },
      etcdOpsTask: {
        ...opsTask,
        ...(settings.concurrentSyncs === undefined ? {} : { concurrentSyncs: settings.concurrentSyncs }),
        ...(settings.requeueInterval === undefined ? {} : { requeueInterval: settings.requeueInterval }),
      },
    },
    webhooks: { etcdComponentProtection: { enabled: false } },
    featureGates: pick(["featureGates"]) ?? {},
    logging: { logLevel: settings.logLevel ?? "info", logFormat: "json" },
  };
};

/** Installs what druid needs beside its CRDs: namespace, ServiceAccount, the chart's RBAC. Idempotent. */
export const installDruid = async (plane: ControlPlane, peer: DruidPeer): Promise<KubeConfig> => {
  const kc = plane.makeKubeConfig();
  try {
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: druidNamespace } } });
  } catch (error) {
    if (!(error instanceof ApiException) || error.code !== 409) throw error;
  }
  await applyObjects(kc, chartRbac(peer));
  return kc;
};

export interface RunningDruid {
  readonly process: ManagedProcess;
  readonly pid: number;
  readonly metricsUrl: string;
  /** Lines druid logged (JSON), most recent last, bounded. */
  readonly lines: () => ReadonlyArray<string>;
  stop(): Promise<void>;
}

/**
 * Starts druid (after `installDruid`) and resolves once its EtcdOpsTask controller runs its workers.
 * druid waits 10 s before it registers its controllers (internal/manager), so this takes ≥ 10 s.
 */
export const startDruid = async (
  plane: ControlPlane,
  peer: DruidPeer,
  settings: DruidSettings = {},
): Promise<RunningDruid> => {
  const token = await plane.serviceAccountToken(druidNamespace, druidServiceAccount, {
    expirationSeconds: 24 * 3600,
  });
  const kubeconfig = join(plane.dir, `druid-kubeconfig-${process.pid}`);
  writeKubeconfig(kubeconfig, {
    server: plane.server,
    caPem: plane.caPem,
    token,
    userName: druidServiceAccount,
  });
  const metricsPort = await freePort();
  const configFile = join(plane.dir, `druid-config-${metricsPort}.yaml`);
  writeFileSync(configFile, stringify(operatorConfiguration(peer, metricsPort, settings)));
  const lines: string[] = [];
  let workersStarted = false;
  const proxy = settings.sidecarProxy === undefined ? {} : { HTTP_PROXY: `http://${settings.sidecarProxy}` };
  const child = startProcess({
    name: "etcd-druid",
    command: peer.binary,
    args: [`--config=${configFile}`],
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: process.env.HOME ?? "/tmp",
      KUBECONFIG: kubeconfig,
      NO_PROXY: "127.0.0.1,localhost",
      ...proxy,
      ...(settings.imageVectorFile === undefined ? {} : { IMAGEVECTOR_OVERWRITE: settings.imageVectorFile }),
    },
    scratchDir: plane.dir,
    tailLines: 200,
    onLine: (line) => {
      lines.push(line);
      if (lines.length > 2_000) lines.shift();
      if (line.includes('"Starting workers"') && line.includes("etcdopstask")) workersStarted = true;
      settings.onLine?.(line);
    },
  });
  const deadline = Date.now() + 90_000;
  while (!workersStarted) {
    const exited = child.exited();
    if (exited !== undefined)
      throw new Error(
        `etcd-druid exited (${exited.code ?? exited.signal}) while starting:\n${child.tail(40)}`,
      );
    if (Date.now() > deadline) {
      await child.stop(5_000);
      throw new Error(`etcd-druid did not start its EtcdOpsTask workers within 90 s:\n${child.tail(40)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return {
    process: child,
    pid: child.pid,
    metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
    lines: () => lines,
    stop: async () => {
      await child.stop(15_000);
    },
  };
};
