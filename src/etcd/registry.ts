/**
 * The handlers of opstask's EtcdOpsTask controller, by config member, and the services they run on.
 * A task whose member this build does not know is Rejected with ERR_UNSUPPORTED_TASK (and stays
 * deletable); every member it knows has a handler here, or the build fails.
 */
import * as Layer from "effect/Layer";
import type { GroupObjects, KubeAccess, RequestCounter } from "../advanced.ts";
import { type HandlerRegistry, memberHandlers } from "../index.ts";
import type { TaskConfig } from "./api/config/task-config.ts";
import type { EtcdOpsTask } from "./api/etcdopstask.ts";
import { nodeBackupRestoreHttpLayer } from "./backup-restore-http-node.ts";
import { type EtcdGateway, nodeEtcdGatewayLayer } from "./etcd-client.ts";
import { refuseExternallyManaged, refusingExternallyManaged } from "./externally-managed.ts";
import { cachedEtcdReader } from "./object-reader-cached.ts";
import { makeKubernetesObjectReader } from "./object-reader-kubernetes.ts";
import { onDemandMaintenanceHandler } from "./on-demand-maintenance/handler.ts";
import { onDemandSnapshotHandler } from "./on-demand-snapshot/handler.ts";
import {
  makeOnDemandSnapshotCompactionHandler,
  type OnDemandSnapshotCompactionHandlerOptions,
} from "./on-demand-snapshot-compaction/handler.ts";
import type { Jobs } from "./on-demand-snapshot-compaction/jobs.ts";
import { kubernetesJobsLayer } from "./on-demand-snapshot-compaction/jobs-kubernetes.ts";
import type { QuorumCluster } from "./recover-from-quorum-loss/cluster.ts";
import { kubernetesQuorumClusterLayer } from "./recover-from-quorum-loss/cluster-kubernetes.ts";
import { recoverFromQuorumLossHandler } from "./recover-from-quorum-loss/handler.ts";
import type { ResolveOverride } from "./resolve-override.ts";
import { type BackupRestoreHttp, ObjectReader } from "./services.ts";

export type EtcdHandlerServices = ObjectReader | BackupRestoreHttp | EtcdGateway | Jobs | QuorumCluster;

/** What the controller's operator configures about the handlers (the compaction images, …). */
export interface EtcdHandlerOptions {
  readonly compaction?: OnDemandSnapshotCompactionHandlerOptions;
}

const refuseExternalRecovery = refuseExternallyManaged(
  "recoverFromQuorumLoss",
  "recovery rebuilds etcd-druid's StatefulSet, volumes and member Leases, and these members have none of them",
  "recover the members where they run, from the backup store",
);

/**
 * One handler per member of the config union (a member without one does not compile), each given its
 * member's typed config (`memberHandlers`), configured: a task author cannot choose what the
 * configuration fixes.
 */
export const makeEtcdHandlers = (
  options: EtcdHandlerOptions = {},
): HandlerRegistry<EtcdOpsTask, EtcdHandlerServices> =>
  memberHandlers((task: EtcdOpsTask): TaskConfig => task.spec.config, {
    onDemandSnapshot: onDemandSnapshotHandler,
    onDemandMaintenance: onDemandMaintenanceHandler,
    onDemandSnapshotCompaction: makeOnDemandSnapshotCompactionHandler(options.compaction),
    recoverFromQuorumLoss: refusingExternallyManaged(recoverFromQuorumLossHandler, refuseExternalRecovery),
  });

/** The handlers with their defaults (the default compaction image, no other image allowed). */
export const etcdHandlers: HandlerRegistry<EtcdOpsTask, EtcdHandlerServices> = makeEtcdHandlers();

export interface EtcdHandlerLayerOptions {
  /** opstask's lean `KubeClient` (`loadKubeClient`) or a client-node `KubeConfig`. */
  readonly kubeConfig: KubeAccess;
  /** curl-style `--resolve` rules: where to dial backup-restore sidecars and etcd (verification unchanged). */
  readonly resolve?: ReadonlyArray<ResolveOverride>;
  readonly counter?: RequestCounter;
  /** The controller's Etcd cache (`makeEtcdCache`, also given to `runTaskController`): Etcds are read from it. */
  readonly etcds?: GroupObjects;
}

/** The services the etcd handlers need, on a real cluster. */
export const etcdHandlerLayer = (options: EtcdHandlerLayerOptions): Layer.Layer<EtcdHandlerServices> =>
  Layer.mergeAll(
    Layer.sync(ObjectReader, () => {
      const reader = makeKubernetesObjectReader({
        kubeConfig: options.kubeConfig,
        ...(options.counter === undefined ? {} : { counter: options.counter }),
      });
      return options.etcds === undefined ? reader : cachedEtcdReader(reader, options.etcds);
    }),
    nodeBackupRestoreHttpLayer({ resolve: options.resolve ?? [] }),
    nodeEtcdGatewayLayer({ resolve: options.resolve ?? [] }),
    kubernetesJobsLayer({
      kubeConfig: options.kubeConfig,
      ...(options.counter === undefined ? {} : { counter: options.counter }),
    }),
    kubernetesQuorumClusterLayer({
      kubeConfig: options.kubeConfig,
      ...(options.counter === undefined ? {} : { counter: options.counter }),
    }),
  );
