/**
 * A stand-in for etcd-druid's Etcd controller in the lab, where druid is not deployed. It does these
 * of druid's duties for one Etcd and nothing else:
 *
 * - status (druid's health check): `Ready` (`Quorate` while a majority of the Etcd's replicas are
 *   Ready, else `False`/`QuorumLost`) and `AllMembersReady`, from the member pods' readiness — druid
 *   derives them from the member Leases the sidecars renew, and lease renewal is off in the lab;
 *   `BackupReady` stays `True` as the lab wrote it;
 * - reconcile on request (druid's `druid.gardener.cloud/operation: reconcile`, honoured only without
 *   `druid.gardener.cloud/suspend-etcd-spec-reconcile`): `<etcd>-config`'s etcd.conf.yaml written for
 *   the Etcd's replicas (druid's configmap component, the text the lab created it with), the
 *   StatefulSet scaled to the Etcd's `spec.replicas` (druid's statefulset component), and the
 *   operation annotation removed, as druid removes it once it has reconciled.
 *
 * It polls (every 500 ms); `stop()` ends the loop.
 */
import {
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from "@kubernetes/client-node";
import { type EtcdClusterSpec, etcdConfigYaml } from "../../../src/devcluster/etcd-cluster/manifests.ts";

const etcds = { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcds" };
export const OperationAnnotation = "druid.gardener.cloud/operation";
export const SuspendAnnotation = "druid.gardener.cloud/suspend-etcd-spec-reconcile";

interface EtcdView {
  readonly metadata?: { readonly annotations?: Record<string, string> };
  readonly spec?: { readonly replicas?: number };
  readonly status?: {
    readonly conditions?: ReadonlyArray<{ type?: string; status?: string; reason?: string }>;
  };
}

export interface DruidStandIn {
  /** Reconciles done on request (each: ConfigMap, scale, annotation removed). */
  readonly reconciles: () => number;
  stop(): Promise<void>;
}

const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

export const startDruidStandIn = (
  kubeConfig: KubeConfig,
  spec: EtcdClusterSpec,
  log: (line: string) => void = () => {},
): DruidStandIn => {
  const custom = kubeConfig.makeApiClient(CustomObjectsApi);
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const apps = kubeConfig.makeApiClient(AppsV1Api);
  const { namespace, name } = spec;
  let reconciles = 0;

  const readyMembers = async (): Promise<number> => {
    const pods = await core.listNamespacedPod({
      namespace,
      labelSelector: `app.kubernetes.io/part-of=${name}`,
    });
    return pods.items.filter(
      (pod) =>
        pod.metadata?.deletionTimestamp === undefined &&
        (pod.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True"),
    ).length;
  };

  const writeStatus = async (etcd: EtcdView) => {
    const replicas = etcd.spec?.replicas ?? spec.replicas;
    const ready = await readyMembers();
    const quorate = ready >= Math.floor(replicas / 2) + 1;
    const wanted = {
      Ready: quorate
        ? { status: "True", reason: "Quorate", message: "The majority of ETCD members is ready" }
        : { status: "False", reason: "QuorumLost", message: "The majority of ETCD members is not ready" },
      AllMembersReady:
        ready === replicas
          ? { status: "True", reason: "AllMembersReady", message: "All members are ready" }
          : {
              status: "False",
              reason: "NotAllMembersReady",
              message: `${ready}/${replicas} members are ready`,
            },
    };
    const current = etcd.status?.conditions ?? [];
    const unchanged = Object.entries(wanted).every(([type, want]) =>
      current.some((c) => c.type === type && c.status === want.status && c.reason === want.reason),
    );
    if (unchanged) return;
    const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
    const conditions = [
      ...Object.entries(wanted).map(([type, want]) => ({
        type,
        ...want,
        lastTransitionTime: now,
        lastUpdateTime: now,
      })),
      ...current.filter((c) => c.type !== "Ready" && c.type !== "AllMembersReady"),
    ];
    await custom.patchNamespacedCustomObjectStatus(
      {
        ...etcds,
        namespace,
        name,
        body: { status: { conditions, ready: quorate, readyReplicas: ready, replicas } },
      },
      mergePatch,
    );
    log(
      `druid stand-in: Ready=${wanted.Ready.status} (${wanted.Ready.reason}), ${ready}/${replicas} members ready`,
    );
  };

  const reconcile = async (etcd: EtcdView) => {
    const annotations = etcd.metadata?.annotations ?? {};
    if (annotations[OperationAnnotation] !== "reconcile" || annotations[SuspendAnnotation] !== undefined)
      return;
    const replicas = etcd.spec?.replicas ?? spec.replicas;
    await core.patchNamespacedConfigMap(
      {
        namespace,
        name: `${name}-config`,
        body: { data: { "etcd.conf.yaml": etcdConfigYaml({ ...spec, replicas }) } },
      },
      mergePatch,
    );
    await apps.patchNamespacedStatefulSetScale({ namespace, name, body: { spec: { replicas } } }, mergePatch);
    await custom.patchNamespacedCustomObject(
      { ...etcds, namespace, name, body: { metadata: { annotations: { [OperationAnnotation]: null } } } },
      mergePatch,
    );
    reconciles += 1;
    log(
      `druid stand-in: reconciled (etcd.conf.yaml for ${replicas} members, StatefulSet scaled to ${replicas})`,
    );
  };

  let running = true;
  const loop = (async () => {
    while (running) {
      try {
        const etcd = (await custom.getNamespacedCustomObject({ ...etcds, namespace, name })) as EtcdView;
        await reconcile(etcd);
        await writeStatus(etcd);
      } catch (error) {
        log(`druid stand-in: pass failed: ${String(error)}`);
      }
      if (running) await new Promise((resolve) => setTimeout(resolve, 500));
    }
  })();

  return {
    reconciles: () => reconciles,
    stop: async () => {
      running = false;
      await loop;
    },
  };
};
