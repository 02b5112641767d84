/**
 * Quorum-loss recovery under simulation: an EtcdOpsTask controller with only the
 * `recoverFromQuorumLoss` handler, over an in-memory Etcd (etcd's ObjectReader) and an in-memory
 * StatefulSet, PVCs, Leases and ConfigMap (MemoryQuorumCluster). `druidRestoresReadiness` plays
 * druid's Etcd controller: once reconciliation is re-enabled it reports AllMembersReady.
 */
import * as Layer from "effect/Layer";
import type { EtcdOpsTask } from "../../../src/etcd/api/etcdopstask.ts";
import { etcdOpsTaskKind } from "../../../src/etcd/api/etcdopstask-kind.ts";
import { MemoryObjects, memoryObjectReaderLayer } from "../../../src/etcd/object-reader-memory.ts";
import {
  MemoryQuorumCluster,
  memoryQuorumClusterLayer,
} from "../../../src/etcd/recover-from-quorum-loss/cluster-memory.ts";
import {
  type RecoveryServices,
  recoverFromQuorumLossHandler,
} from "../../../src/etcd/recover-from-quorum-loss/handler.ts";
import { Resources } from "../../../src/etcd/services.ts";
import type { TaskHandler } from "../../../src/handlers/handler.ts";
import type { HandlerContext, OwnRecord } from "../../../src/handlers/handler-context.ts";
import { type Simulation, simulate } from "../../../src/testing.ts";

export const namespace = "default";
export const etcdName = "etcd-main";

type Condition = { readonly type: string; readonly status: string; readonly reason: string };

export const etcdObject = (options: {
  readonly replicas?: number;
  readonly backup?: boolean;
  readonly conditions?: ReadonlyArray<Condition>;
}) => ({
  apiVersion: "druid.gardener.cloud/v1alpha1",
  kind: "Etcd",
  metadata: { name: etcdName, namespace, uid: "etcd-uid" },
  spec: {
    replicas: options.replicas ?? 3,
    labels: { app: etcdName },
    etcd: {},
    backup: options.backup === false ? {} : { store: { prefix: "main" } },
  },
  status: {
    conditions: (
      options.conditions ?? [
        { type: "Ready", status: "False", reason: "QuorumLost" },
        { type: "BackupReady", status: "True", reason: "BackupSucceeded" },
      ]
    ).map((condition) => ({
      ...condition,
      message: "test",
      lastTransitionTime: "2026-01-01T00:00:00Z",
      lastUpdateTime: "2026-01-01T00:00:00Z",
    })),
  },
});

export const etcdConfig = [
  "name: etcd-main",
  "data-dir: /var/etcd/data/new.etcd",
  "initial-cluster: etcd-main-0=https://etcd-main-0.etcd-main-peer.default.svc:2380,etcd-main-1=https://etcd-main-1.etcd-main-peer.default.svc:2380,etcd-main-2=https://etcd-main-2.etcd-main-peer.default.svc:2380",
  "initial-cluster-state: existing",
  "advertise-client-urls:",
  "  etcd-main-0:",
  "  - https://etcd-main-0.etcd-main-peer.default.svc:2379",
  "  etcd-main-1:",
  "  - https://etcd-main-1.etcd-main-peer.default.svc:2379",
  "",
].join("\n");

export interface Fault {
  readonly at: number;
  readonly mode: "before" | "after";
}

export interface RecoveryWorld {
  readonly sim: Simulation<EtcdOpsTask>;
  readonly objects: MemoryObjects;
  readonly cluster: MemoryQuorumCluster;
  /** Progress writes to the controller's record attempted, in order (their fields). */
  readonly progressWrites: Array<Readonly<Record<string, string | null>>>;
  fault: Fault | undefined;
  druidRestoresReadiness: boolean;
}

export const makeRecoveryWorld = (
  options: { readonly etcd?: Parameters<typeof etcdObject>[0] } = {},
): RecoveryWorld => {
  const objects = new MemoryObjects();
  objects.put(Resources.etcd, etcdObject(options.etcd ?? {}));
  const cluster = new MemoryQuorumCluster(etcdName, options.etcd?.replicas ?? 3);
  cluster.configMaps.set(`${etcdName}-config`, etcdConfig);
  for (let ordinal = 0; ordinal < 3; ordinal++) cluster.leases.add(`${etcdName}-${ordinal}`);
  const world = {
    objects,
    cluster,
    progressWrites: [],
    fault: undefined,
    druidRestoresReadiness: true,
  } as unknown as RecoveryWorld;
  const ownRecord = (own: OwnRecord): OwnRecord => ({
    ...own,
    write: async (fields) => {
      const index = world.progressWrites.length;
      world.progressWrites.push(fields);
      const fault = world.fault;
      if (fault !== undefined && fault.at === index) {
        world.fault = undefined;
        world.sim.controller.crashAfter(0);
        if (fault.mode === "before") throw new Error("the controller died before the progress write");
      }
      return own.write(fields);
    },
  });
  const context = (ctx: HandlerContext): HandlerContext =>
    ctx.ownRecord === undefined ? ctx : { ...ctx, ownRecord: ownRecord(ctx.ownRecord) };
  const handler: TaskHandler<EtcdOpsTask, RecoveryServices> = {
    admit: (task, ctx) => recoverFromQuorumLossHandler.admit(task, ctx),
    execute: (task, ctx) => recoverFromQuorumLossHandler.execute(task, context(ctx)),
    cleanup: (task, ctx) => recoverFromQuorumLossHandler.cleanup(task, context(ctx)),
  };
  const sim = simulate<EtcdOpsTask, RecoveryServices>({
    kind: etcdOpsTaskKind,
    handlers: { recoverFromQuorumLoss: handler },
    services: Layer.mergeAll(memoryObjectReaderLayer(objects), memoryQuorumClusterLayer(cluster)),
  });
  Object.assign(world, { sim });
  return world;
};

export const recoveryTask = (
  name: string,
  options: { readonly confirmed?: boolean; readonly config?: object } = {},
) => ({
  metadata: {
    name,
    ...(options.confirmed === false
      ? {}
      : { annotations: { "druid.gardener.cloud/confirm-recovery": "true" } }),
  },
  spec: { etcdName, ttlSecondsAfterFinished: 3600, config: { recoverFromQuorumLoss: options.config ?? {} } },
});

const finished = new Set(["Succeeded", "Failed", "Rejected"]);

/** Plays druid's Etcd controller: after `operation: reconcile`, the cluster reports all members ready. */
const playDruid = (world: RecoveryWorld) => {
  if (!world.druidRestoresReadiness) return;
  if (world.cluster.etcdAnnotations.get("druid.gardener.cloud/operation") !== "reconcile") return;
  world.objects.put(
    Resources.etcd,
    etcdObject({
      conditions: [
        { type: "Ready", status: "True", reason: "Quorate" },
        { type: "AllMembersReady", status: "True", reason: "AllMembersReady" },
        { type: "BackupReady", status: "True", reason: "BackupSucceeded" },
      ],
    }),
  );
};

export const drive = async (world: RecoveryWorld, name: string, stop?: () => boolean): Promise<void> => {
  const { sim } = world;
  for (let round = 0; round < 1000; round++) {
    sim.run();
    await sim.settle();
    playDruid(world);
    if (stop?.()) return;
    const state = sim.state(name);
    if (((state !== undefined && finished.has(state)) || !sim.exists(name)) && sim.hanging().length === 0)
      return;
    const next = sim.nextTimer();
    if (next === undefined) return;
    sim.advance(Math.max(0, next - sim.now()));
  }
  throw new Error(`${name} did not finish in 1000 rounds`);
};

/** The descriptions the task showed, in order, without repeats. */
export const descriptions = (world: RecoveryWorld, name: string): string[] => {
  const seen: string[] = [];
  for (const event of world.sim.history(name)) {
    const status = (event.object as { status?: { lastOperation?: { description?: string } } }).status;
    const text = status?.lastOperation?.description;
    if (text !== undefined && seen.at(-1) !== text) seen.push(text);
  }
  return seen;
};
