/**
 * Whether quorum-loss recovery may start (etcd-druid's pull request #1358, its last revision): a
 * multi-member Etcd, a backup to restore from (or `allowDataLoss`), and a lost quorum as the Etcd's
 * status reports it: `Ready=False` with reason `QuorumLost`, which druid's health check publishes from
 * the member Leases. Anything else (Ready=True, another reason, Unknown, no condition) is refused:
 * "not ready" is not "quorum lost" (a rolling update, a new cluster), and recovery deletes every
 * member's volume. The check is repeated before every destructive step (handler.ts), since the task
 * may have waited for confirmation meanwhile.
 *
 * Admit also checks what the later steps will need, so that a cluster they cannot recover is refused
 * before anything is changed (not found out at step 8, with the volumes gone): a StatefulSet
 * controlled by this Etcd, member volumes with druid's labels and only members' names, and an
 * etcd.conf.yaml that can be rewritten for member 0.
 */
import * as Effect from "effect/Effect";
import type { FailedOutcome, KubeError } from "../../advanced.ts";
import type { PhaseOutcome } from "../../index.ts";
import { completed, failed, retry } from "../../index.ts";
import type { RecoverFromQuorumLossConfig } from "../api/config/recover-from-quorum-loss.ts";
import type { Etcd } from "../api/etcd.ts";
import type { EtcdOpsTask } from "../api/etcdopstask.ts";
import { taskEtcd } from "../on-demand-snapshot/admission.ts";
import { outcomeOf } from "../on-demand-snapshot/step-failure.ts";
import type { ObjectReader } from "../services.ts";
import { configMapName, EtcdConfigKey, podName, QuorumCluster, volumeLabels } from "./cluster.ts";
import { singleMemberConfig } from "./single-member-config.ts";

export const RecoveryErrorCodes = {
  admit: "ERR_ADMIT_RECOVER_FROM_QUORUM_LOSS",
  execute: "ERR_EXECUTE_RECOVER_FROM_QUORUM_LOSS",
} as const;

export const QuorumLostReason = "QuorumLost";

const condition = (etcd: Etcd, type: string) => (etcd.status?.conditions ?? []).find((c) => c.type === type);

const refuse = (description: string, message: string, cause: string): FailedOutcome =>
  failed(description, { code: RecoveryErrorCodes.admit, message, cause });

/** Undefined when the Etcd's status says its quorum is lost; else why recovery must not run. */
export const quorumProblem = (etcd: Etcd): FailedOutcome | undefined => {
  const ready = condition(etcd, "Ready");
  const id = `etcd ${etcd.metadata.namespace}/${etcd.metadata.name}`;
  const reason = ready?.reason ?? "";
  if (ready?.status === "True")
    return refuse(
      `The etcd cluster has not lost quorum (Ready=True, reason=${reason}). RecoverFromQuorumLoss is only applicable when quorum has been lost (Ready=False with reason QuorumLost).`,
      "etcd cluster has not lost quorum",
      `${id} has Ready=True (reason=${reason})`,
    );
  if (ready?.status === "False" && reason === QuorumLostReason) return undefined;
  if (ready?.status === "False")
    return refuse(
      `The etcd cluster has not lost quorum (Ready=False, reason=${reason}; the canonical QuorumLost signal has not been observed).`,
      "etcd cluster has not lost quorum",
      `${id} has Ready=False with reason "${reason}"; QuorumLost signal not observed`,
    );
  return refuse(
    ready === undefined
      ? "Cannot determine whether the etcd cluster has lost quorum: no Ready condition is published."
      : `Cannot determine whether the etcd cluster has lost quorum: Ready condition is Unknown (reason="${reason}").`,
    "cannot determine quorum-loss status",
    ready === undefined
      ? `${id} has no Ready condition; cannot confirm quorum loss`
      : `${id} has Ready=Unknown`,
  );
};

/** Undefined when recovery may start; else the Rejection. */
export const admissionProblem = (
  etcd: Etcd,
  config: RecoverFromQuorumLossConfig,
): PhaseOutcome | undefined => {
  const id = `etcd ${etcd.metadata.namespace}/${etcd.metadata.name}`;
  if (etcd.spec.replicas <= 1)
    return refuse(
      "Task is not applicable for a single-member etcd cluster. The backup-restore sidecar handles automatic recovery for single-member clusters.",
      "single-member cluster does not require quorum loss recovery",
      `${id} has only ${etcd.spec.replicas} replica(s); this task requires a multi-member cluster`,
    );
  const allowDataLoss = config.allowDataLoss === true;
  if (etcd.spec.backup.store === undefined && !allowDataLoss)
    return refuse(
      "Task requires a configured backup store. Recovery restores etcd data from the latest snapshot; without a backup store there is nothing to restore from.",
      "backup store is required for quorum loss recovery",
      `${id} has no backup store configured`,
    );
  const backupReady = condition(etcd, "BackupReady");
  if (etcd.spec.backup.store !== undefined && backupReady?.status !== "True" && !allowDataLoss)
    return refuse(
      "Task requires the etcd backup to be in a Ready state. Set config.recoverFromQuorumLoss.allowDataLoss=true to acknowledge potential data loss and proceed.",
      "etcd backup is not Ready",
      `${id} BackupReady condition is ${backupReady?.status ?? "Missing"}`,
    );
  return quorumProblem(etcd);
};

/** Undefined when the cluster holds what every step will need; else the Rejection. */
export const clusterProblem = (
  etcd: Etcd,
): Effect.Effect<PhaseOutcome | undefined, KubeError, QuorumCluster> =>
  Effect.gen(function* () {
    const cluster = yield* QuorumCluster;
    const { namespace, name, uid } = etcd.metadata;
    const id = `etcd ${namespace}/${name}`;
    const sts = yield* cluster.statefulSet(namespace, name);
    if (sts === undefined)
      return refuse(
        `No StatefulSet ${namespace}/${name}: the recovery scales the Etcd's StatefulSet, which druid creates for it.`,
        "the etcd's StatefulSet is missing",
        `statefulset ${namespace}/${name} not found; wait for druid to create it`,
      );
    const owner = sts.controller;
    if (owner?.kind !== "Etcd" || owner.name !== name || owner.uid !== uid)
      return refuse(
        `StatefulSet ${namespace}/${name} is not controlled by ${id}; the recovery changes only the Etcd's own StatefulSet.`,
        "the StatefulSet is not the etcd's",
        owner === undefined
          ? `statefulset ${namespace}/${name} has no controller ownerReference`
          : `statefulset ${namespace}/${name} is controlled by ${owner.kind} ${owner.name} (uid ${owner.uid}), not Etcd ${name} (uid ${uid})`,
      );
    const volumes = yield* cluster.pvcNames(namespace, volumeLabels(name));
    const members = Array.from({ length: etcd.spec.replicas }, (_, ordinal) => podName(name, ordinal));
    const strangers = volumes.filter((pvc) => !members.some((member) => pvc.endsWith(`-${member}`)));
    if (volumes.length === 0 || strangers.length > 0)
      return refuse(
        volumes.length === 0
          ? `No member volumes of ${id} found (PVCs labelled ${selectorText(volumeLabels(name))}); the recovery would keep the old data.`
          : `PVCs labelled as ${id}'s volumes belong to no member: ${strangers.join(", ")}; the recovery deletes every volume with these labels.`,
        "the member volumes are not as druid makes them",
        volumes.length === 0
          ? `no persistentvolumeclaims in ${namespace} match ${selectorText(volumeLabels(name))}`
          : `remove the labels ${selectorText(volumeLabels(name))} from ${strangers.join(", ")}`,
      );
    const text = yield* cluster.configData(namespace, configMapName(name), EtcdConfigKey);
    const rewritten =
      text === undefined
        ? {
            ok: false as const,
            problem: `ConfigMap ${namespace}/${configMapName(name)} has no ${EtcdConfigKey}`,
          }
        : yield* Effect.promise(() => singleMemberConfig(text, podName(name, 0)));
    if (!rewritten.ok)
      return refuse(
        "The etcd configuration cannot be rewritten for a single member; the recovery would stop at PatchConfigMap with the volumes gone.",
        "etcd.conf.yaml cannot be rewritten for member 0",
        rewritten.problem,
      );
    return undefined;
  });

const selectorText = (labels: Readonly<Record<string, string>>) =>
  Object.entries(labels)
    .map(([key, value]) => `${key}=${value}`)
    .join(",");

export const admitRecovery = (
  task: EtcdOpsTask,
  config: RecoverFromQuorumLossConfig,
): Effect.Effect<PhaseOutcome, never, ObjectReader | QuorumCluster> =>
  taskEtcd(task).pipe(
    Effect.matchEffect({
      onFailure: (failure) => Effect.succeed(outcomeOf(failure)),
      onSuccess: (etcd) => {
        const problem = admissionProblem(etcd, config);
        if (problem !== undefined) return Effect.succeed(problem);
        return clusterProblem(etcd).pipe(
          Effect.map((found) => found ?? completed("Admit check passed")),
          Effect.catch((error) =>
            Effect.succeed(
              error.reason === "Forbidden"
                ? refuse(
                    "Not allowed to read the etcd's StatefulSet, volumes or configuration",
                    "forbidden; apply deploy/quorum-recovery/ to grant the controller recovery's RBAC",
                    error.message,
                  )
                : stepCallFailed("read the etcd's StatefulSet, volumes and configuration", error.message),
            ),
          ),
        );
      },
    }),
  );

/** A Kubernetes call of a step that failed: retried with backoff, druid's execution code. */
export const stepCallFailed = (what: string, cause: string): PhaseOutcome =>
  retry(`Failed to ${what}`, {
    error: { code: RecoveryErrorCodes.execute, message: `failed to ${what}`, cause },
  });
