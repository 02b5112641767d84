/**
 * Whether quorum-loss recovery may start (etcd-druid's pull request #1358, its last revision): a
 * multi-member Etcd, a backup to restore from (or `allowDataLoss`), and a lost quorum as the Etcd's
 * status reports it: `Ready=False` with reason `QuorumLost`, which druid's health check publishes from
 * the member Leases. Anything else (Ready=True, another reason, Unknown, no condition) is refused:
 * "not ready" is not "quorum lost" (a rolling update, a new cluster), and recovery deletes every
 * member's volume. The check is repeated before the first destructive step (ScaleDown), since the
 * task may have waited for confirmation meanwhile.
 */
import * as Effect from "effect/Effect";
import type { PhaseOutcome } from "../../index.ts";
import { completed, failed, retry } from "../../index.ts";
import type { RecoverFromQuorumLossConfig } from "../api/config/recover-from-quorum-loss.ts";
import type { Etcd } from "../api/etcd.ts";
import type { EtcdOpsTask } from "../api/etcdopstask.ts";
import { taskEtcd } from "../on-demand-snapshot/admission.ts";
import { outcomeOf } from "../on-demand-snapshot/step-failure.ts";
import type { ObjectReader } from "../services.ts";

export const RecoveryErrorCodes = {
  admit: "ERR_ADMIT_RECOVER_FROM_QUORUM_LOSS",
  execute: "ERR_EXECUTE_RECOVER_FROM_QUORUM_LOSS",
} as const;

export const QuorumLostReason = "QuorumLost";

const condition = (etcd: Etcd, type: string) => (etcd.status?.conditions ?? []).find((c) => c.type === type);

const refuse = (description: string, message: string, cause: string): PhaseOutcome =>
  failed(description, { code: RecoveryErrorCodes.admit, message, cause });

/** Undefined when the Etcd's status says its quorum is lost; else why recovery must not run. */
export const quorumProblem = (etcd: Etcd): PhaseOutcome | undefined => {
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

export const admitRecovery = (
  task: EtcdOpsTask,
  config: RecoverFromQuorumLossConfig,
): Effect.Effect<PhaseOutcome, never, ObjectReader> =>
  taskEtcd(task).pipe(
    Effect.map((etcd) => admissionProblem(etcd, config) ?? completed("Admit check passed")),
    Effect.catch((failure) => Effect.succeed(outcomeOf(failure))),
  );

/** A Kubernetes call of a step that failed: retried with backoff, druid's execution code. */
export const stepCallFailed = (what: string, cause: string): PhaseOutcome =>
  retry(`Failed to ${what}`, {
    error: { code: RecoveryErrorCodes.execute, message: `failed to ${what}`, cause },
  });
