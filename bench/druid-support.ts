/**
 * Helpers of bench/druid-side-by-side.ts: Etcds both controllers accept, clearing a namespace between
 * runs (no controller-manager finalizes namespaces here), and the two controllers behind one shape.
 */
import {
  CustomObjectsApi,
  type KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  PatchStrategy,
  setHeaderOptions,
} from "@kubernetes/client-node";
import type { ControlPlane } from "../src/devcluster/control-plane.ts";
import { createReadyEtcd } from "../src/devcluster/ready-etcd.ts";
import { microTime } from "../src/kube/micro-time.ts";
import type { AuditLog } from "../test/support/audit-log.ts";
import type { DruidPeer } from "../test/support/druid-peer.ts";
import {
  type DruidSettings,
  druidEtcdAnnotations,
  druidUser,
  startDruid,
} from "../test/support/druid-process.ts";
import { opstaskUser, startOpstask } from "../test/support/opstask-process.ts";
import { procSample } from "../test/support/proc-stats.ts";
import { sleep, taskResource } from "./cluster-support.ts";

const etcdResource = { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcds" };

/** Runs `work` over `items` with at most `inFlight` at once. */
export const parallel = async <A>(
  items: readonly A[],
  inFlight: number,
  work: (item: A) => Promise<void>,
) => {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.max(1, inFlight) }, async () => {
      for (;;) {
        const item = items[next];
        next += 1;
        if (item === undefined) return;
        await work(item);
      }
    }),
  );
};

/**
 * The Lease a member's sidecar renews (`<etcd>-0` for a one-member Etcd; holder `<member id>:Leader`),
 * renewed once, now: druid's status check (≥ v0.38 it runs on every Etcd) counts the member ready from
 * it, and so writes the Etcd's Ready condition True, while it is younger than druid's
 * `memberUnknownThreshold` (`standInDruidSettings`).
 */
export const memberLease = (namespace: string, etcdName: string): KubernetesObject => ({
  apiVersion: "coordination.k8s.io/v1",
  kind: "Lease",
  metadata: { name: `${etcdName}-0`, namespace },
  ...{ spec: { holderIdentity: "1:Leader", leaseDurationSeconds: 3600, renewTime: microTime(Date.now()) } },
});

/**
 * Ready Etcds with backup enabled whose sidecar is `port` on the stand-in, annotated so that druid's
 * Etcd controller does not reconcile their spec (druid-process.ts), each with its member's Lease so
 * that druid's status check finds them Ready too.
 */
export const createEtcds = async (
  kc: KubeConfig,
  namespace: string,
  names: readonly string[],
  port: number,
  inFlight: number,
): Promise<void> => {
  const objects = KubernetesObjectApi.makeApiClient(kc);
  await parallel(names, inFlight, async (name) => {
    await objects.create(memberLease(namespace, name));
    await createReadyEtcd(kc, {
      name,
      namespace,
      backupPort: port,
      message: "stand-in",
      annotations: druidEtcdAnnotations,
    });
  });
};

const namesIn = async (kc: KubeConfig, resource: typeof etcdResource, namespace: string) => {
  const api = kc.makeApiClient(CustomObjectsApi);
  const names: { name: string; finalizers: number }[] = [];
  let continueToken: string | undefined;
  do {
    const page = (await api.listNamespacedCustomObject({
      ...resource,
      namespace,
      limit: 500,
      ...(continueToken === undefined ? {} : { _continue: continueToken }),
    })) as {
      items?: { metadata?: { name?: string; finalizers?: string[] } }[];
      metadata?: { continue?: string };
    };
    for (const item of page.items ?? [])
      if (item.metadata?.name !== undefined)
        names.push({ name: item.metadata.name, finalizers: item.metadata.finalizers?.length ?? 0 });
    continueToken = page.metadata?.continue || undefined;
  } while (continueToken !== undefined);
  return names;
};

/** Removes every task and Etcd of a namespace (finalizers stripped: no controller runs meanwhile). */
export const clearNamespace = async (kc: KubeConfig, namespace: string, inFlight: number): Promise<void> => {
  const api = kc.makeApiClient(CustomObjectsApi);
  for (const resource of [taskResource, etcdResource]) {
    const items = await namesIn(kc, resource, namespace);
    await parallel(
      items.filter((item) => item.finalizers > 0),
      inFlight,
      async ({ name }) => {
        await api
          .patchNamespacedCustomObject(
            { ...resource, namespace, name, body: { metadata: { finalizers: null } } },
            setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
          )
          .catch(() => undefined);
      },
    );
    await api.deleteCollectionNamespacedCustomObject({ ...resource, namespace });
  }
};

/**
 * druid beside stand-in Etcds (`createEtcds`): their sidecar is the stand-in, and druid's Etcd
 * controller does its one status pass over them when it starts (its watch lists them) and none after:
 * - it re-reconciles every Etcd each `etcdStatusSyncPeriod`: the chart's 15 s would put ~70 status
 *   checks and patches a second on 1,000 Etcds into the task figures; an hour is longer than a run;
 * - a member Lease nobody renews counts ready for `memberUnknownThreshold`: a day, so that the one
 *   pass finds every stand-in Etcd Ready however long ago it was created.
 */
export const standInDruidSettings = (standInPort: number): DruidSettings => ({
  etcdStatusSyncPeriod: "1h",
  memberUnknownThreshold: "24h",
  sidecarProxy: `127.0.0.1:${standInPort}`,
});

export type Which = "druid" | "opstask";

export interface RunningController {
  readonly which: Which;
  readonly pid: number;
  readonly lines: () => ReadonlyArray<string>;
  stop(): Promise<void>;
}

export interface StartOptions {
  readonly namespace: string;
  /** Etcd names of the namespace (opstask dials the stand-in for each through --resolve). */
  readonly etcds: readonly string[];
  readonly standInPort: number;
  readonly druidQps: number;
  /** Node flags for opstask (profiling). */
  readonly nodeArgs?: readonly string[];
  /** opstask's NODE_OPTIONS instead of the Deployment's. */
  readonly nodeOptions?: string;
  /** Another bundled opstask CLI than this checkout's. */
  readonly opstaskCli?: string;
}

export const userOf = (which: Which): string => (which === "druid" ? druidUser : opstaskUser);

export const startController = async (
  which: Which,
  plane: ControlPlane,
  peer: DruidPeer | undefined,
  options: StartOptions,
): Promise<RunningController> => {
  if (which === "druid") {
    if (peer === undefined) throw new Error("druid not given");
    const druid = await startDruid(plane, peer, {
      ...standInDruidSettings(options.standInPort),
      qps: options.druidQps,
      burst: options.druidQps * 2,
    });
    return { which, pid: druid.pid, lines: druid.lines, stop: druid.stop };
  }
  const opstask = await startOpstask(plane, {
    namespaces: [options.namespace],
    resolve: options.etcds.map((etcd) => `${etcd}-client.${options.namespace}:*:127.0.0.1`),
    ...(options.nodeArgs === undefined ? {} : { nodeArgs: options.nodeArgs }),
    ...(options.nodeOptions === undefined ? {} : { nodeOptions: options.nodeOptions }),
    ...(options.opstaskCli === undefined ? {} : { cli: options.opstaskCli }),
  });
  return { which, pid: opstask.pid, lines: opstask.lines, stop: opstask.stop };
};

/** The CPU of `pid` in each second from now until `stop()`, ms: what a controller does while "idle". */
export const traceCpu = (pid: number): { stop(): number[] } => {
  const perSecond: number[] = [];
  let previous = procSample(pid)?.cpuMs ?? Number.NaN;
  const timer = setInterval(() => {
    const now = procSample(pid)?.cpuMs ?? Number.NaN;
    perSecond.push(now - previous);
    previous = now;
  }, 1_000);
  return {
    stop: () => {
      clearInterval(timer);
      return perSecond;
    },
  };
};

/** 2 %; raised while profiling (`setQuietCpuShare`). */
let quietCpuShare = 0.02;
export const setQuietCpuShare = (share: number): void => {
  quietCpuShare = share;
};

/**
 * Waits until the controller made no request (audit log) and used under 2 % of a CPU for `quietMs`;
 * false when `timeoutMs` passed first.
 */
export const waitQuiet = async (
  audit: AuditLog,
  user: string,
  pid: number,
  quietMs = 3_000,
  timeoutMs = 120_000,
  /** CPU share below which the controller counts as quiet (a profiler's sampling costs ~3 %). */
  cpuShare = quietCpuShare,
): Promise<boolean> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const mark = audit.mark();
    const before = procSample(pid)?.cpuMs ?? 0;
    await sleep(quietMs);
    const after = procSample(pid)?.cpuMs ?? 0;
    const requests = audit.since(mark).filter((request) => request.user === user).length;
    if (requests === 0 && after - before < quietMs * cpuShare) return true;
    if (Date.now() > deadline) return false;
  }
};
