/**
 * `QuorumCluster` in memory: one etcd's StatefulSet, PVCs, member Leases, ConfigMap and pods, with a
 * StatefulSet controller reduced to what recovery observes. `converge()` plays that controller: the
 * status follows `spec.replicas`, a scale-up creates the missing members' PVCs (`data-<pod>`) and
 * starts their pods, ready unless `podsNeverReady`. With `autoConverge` (the default) every read of
 * the StatefulSet converges first. Every call is recorded, so a test can tell whether a destructive
 * action ran twice.
 */
import * as Effect from "effect/Effect";
import * as Layer from "effect/Layer";
import { KubeError } from "../../advanced.ts";
import { podName, QuorumCluster, type QuorumClusterShape, type StatefulSetScale } from "./cluster.ts";

export interface QuorumClusterCall {
  readonly op: keyof QuorumClusterShape;
  readonly args: ReadonlyArray<unknown>;
}

export class MemoryQuorumCluster {
  readonly etcdAnnotations = new Map<string, string>();
  statefulSet:
    | {
        desired: number;
        current: number;
        ready: number;
        controller?: NonNullable<StatefulSetScale["controller"]>;
      }
    | undefined;
  readonly pvcs = new Set<string>();
  readonly leases = new Set<string>();
  readonly configMaps = new Map<string, string>();
  readonly readyPods = new Set<string>();
  readonly calls: QuorumClusterCall[] = [];
  autoConverge = true;
  podsNeverReady = false;
  /** The next call of this operation fails once with a transient error. */
  failNext: keyof QuorumClusterShape | undefined;
  /** Calls of these operations are forbidden (403), as without deploy/quorum-recovery/'s RBAC. */
  readonly forbidden = new Set<keyof QuorumClusterShape>();

  readonly etcd: string;

  /** `etcdUid`: the Etcd that controls the StatefulSet, as druid's ownerReference names it. */
  constructor(etcd: string, replicas: number, etcdUid = "etcd-uid") {
    this.etcd = etcd;
    this.statefulSet = {
      desired: replicas,
      current: replicas,
      ready: 0,
      controller: { kind: "Etcd", name: etcd, uid: etcdUid },
    };
    for (let ordinal = 0; ordinal < replicas; ordinal++) this.pvcs.add(`data-${podName(etcd, ordinal)}`);
  }

  converge(): void {
    const sts = this.statefulSet;
    if (sts === undefined) return;
    sts.current = sts.desired;
    for (let ordinal = 0; ordinal < sts.desired; ordinal++) {
      const pod = podName(this.etcd, ordinal);
      this.pvcs.add(`data-${pod}`);
      if (!this.podsNeverReady) this.readyPods.add(pod);
    }
    for (const pod of [...this.readyPods])
      if (Number(pod.slice(this.etcd.length + 1)) >= sts.desired) this.readyPods.delete(pod);
    sts.ready = [...this.readyPods].length;
  }

  /** How often `op` was called. */
  count(op: keyof QuorumClusterShape): number {
    return this.calls.filter((call) => call.op === op).length;
  }
}

export const makeMemoryQuorumCluster = (cluster: MemoryQuorumCluster): QuorumClusterShape => {
  const call = <A>(op: keyof QuorumClusterShape, args: ReadonlyArray<unknown>, act: () => A) =>
    Effect.suspend(() => {
      cluster.calls.push({ op, args });
      if (cluster.forbidden.has(op))
        return Effect.fail(new KubeError({ reason: "Forbidden", code: 403, message: `${op}: forbidden` }));
      if (cluster.failNext === op) {
        cluster.failNext = undefined;
        return Effect.fail(
          new KubeError({ reason: "Transient", code: 503, message: `${op}: service unavailable` }),
        );
      }
      return Effect.succeed(act());
    });
  return QuorumCluster.of({
    annotateEtcd: (_namespace, _name, annotations) =>
      call("annotateEtcd", [annotations], () => {
        for (const [key, value] of Object.entries(annotations))
          if (value === null) cluster.etcdAnnotations.delete(key);
          else cluster.etcdAnnotations.set(key, value);
      }),
    statefulSet: () =>
      call("statefulSet", [], (): StatefulSetScale | undefined => {
        if (cluster.autoConverge) cluster.converge();
        return cluster.statefulSet === undefined ? undefined : { ...cluster.statefulSet };
      }),
    scale: (_namespace, _name, replicas) =>
      call("scale", [replicas], () => {
        if (cluster.statefulSet !== undefined) cluster.statefulSet.desired = replicas;
      }),
    pvcNames: () => call("pvcNames", [], () => [...cluster.pvcs].sort()),
    deletePvcs: () =>
      call("deletePvcs", [], () => {
        const deleted = cluster.pvcs.size;
        cluster.pvcs.clear();
        return deleted;
      }),
    deleteLeases: () =>
      call("deleteLeases", [], () => {
        const deleted = cluster.leases.size;
        cluster.leases.clear();
        return deleted;
      }),
    configData: (_namespace, name) => call("configData", [name], () => cluster.configMaps.get(name)),
    writeConfigData: (_namespace, name, _key, text) =>
      call("writeConfigData", [name], () => {
        cluster.configMaps.set(name, text);
      }),
    podReady: (_namespace, name) =>
      call("podReady", [name], () => {
        if (cluster.autoConverge) cluster.converge();
        return cluster.readyPods.has(name);
      }),
  });
};

export const memoryQuorumClusterLayer = (cluster: MemoryQuorumCluster): Layer.Layer<QuorumCluster> =>
  Layer.sync(QuorumCluster, () => makeMemoryQuorumCluster(cluster));
