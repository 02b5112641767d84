/**
 * EtcdOpsTask for the task CLI: the flagship's instance of `CliKind`. Its admission group is the etcd
 * (the ETCD column), and describe summarises the config member in words.
 */
import type { TaskConfig } from "../../etcd/api/config/task-config.ts";
import { etcdOpsTaskKind } from "../../etcd/api/etcdopstask-kind.ts";
import { cliKindOf } from "./cli-kind.ts";

/** What the task does, in a few words: `onDemandSnapshot: full snapshot (final), timeout 900s`. */
export const configSummary = (config: TaskConfig): string => {
  switch (config.kind) {
    case "onDemandSnapshot":
      return `${config.kind}: ${config.type} snapshot${config.isFinal === true ? " (final)" : ""}, timeout ${
        config.type === "full" ? config.timeoutSecondsFull : config.timeoutSecondsDelta
      }s`;
    case "onDemandMaintenance": {
      const steps = [
        ...(config.compaction === undefined
          ? []
          : [`compaction${config.compaction.physical === true ? " (physical)" : ""}`]),
        ...(config.defragmentation === undefined ? [] : ["defragmentation"]),
      ];
      return `${config.kind}: ${steps.join(" + ")}, timeout ${config.timeoutSeconds}s per call`;
    }
    case "onDemandSnapshotCompaction":
      return `${config.kind}: image ${config.image ?? "(controller default)"}, timeout ${config.timeoutSeconds}s`;
    case "recoverFromQuorumLoss":
      return `${config.kind}: scale down ${config.scaleDownTimeout ?? "60s"}, pod ready ${
        config.podReadyTimeout ?? "180s"
      }, etcd ready ${config.etcdReadyTimeout ?? "300s"}${config.allowDataLoss === true ? ", data loss allowed" : ""}`;
    case "unsupported":
      return `${config.member} (a task type this opstask does not support)`;
  }
};

export const etcdCliKind = cliKindOf(etcdOpsTaskKind, {
  // The CRD's shortName.
  aliases: ["eot"],
  groupHeader: "ETCD",
  summary: (task) => configSummary(task.spec.config),
});
