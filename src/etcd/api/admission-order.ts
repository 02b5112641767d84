/**
 * How EtcdOpsTasks of one etcd stand in its admission beyond their age (docs/contract.md §16):
 * etcd-druid's own presync snapshots go first, and a quorum-loss recovery tells whether it only waits
 * for its confirmation or is changing the etcd's members.
 *
 * etcd-druid's Etcd controller (v0.38.1, since #1300) creates a full snapshot task before it scales the
 * StatefulSet to 0 (`presync-snapshot-hibernation-<n>`) or changes its etcd image
 * (`presync-snapshot-upgrade-<n>`; open PR #1360: `presync-snapshot-update-<n>` before any image or
 * replica change), owned by the Etcd as controller, waits for it, tries 3 times and then proceeds
 * WITHOUT the snapshot. Rejected or queued behind a long task, it would hibernate or upgrade an etcd
 * with no final snapshot. Both the name and the controller reference are required, and only a full
 * snapshot qualifies: an author can write both, and then gets no more than a full snapshot taken early.
 */
import { type AdmissionActivity, stepAnnotations } from "../../advanced.ts";
import { RecoverFromQuorumLossMember, RecoveryAnnotations } from "./config/recover-from-quorum-loss.ts";
import { EtcdApiVersion, EtcdKind } from "./etcd.ts";
import type { EtcdOpsTask } from "./etcdopstask.ts";

/** The names etcd-druid gives its presync tasks, each followed by the attempt's number. */
export const DruidPresyncPrefixes = [
  "presync-snapshot-hibernation-",
  "presync-snapshot-upgrade-",
  "presync-snapshot-update-",
] as const;

const attemptNumber = /^\d+$/;

const hasPresyncName = (name: string): boolean =>
  DruidPresyncPrefixes.some(
    (prefix) => name.startsWith(prefix) && attemptNumber.test(name.slice(prefix.length)),
  );

/** Owned as controller by its own Etcd (`spec.etcdName`), as etcd-druid's `GetAsOwnerReference` writes it. */
const controlledByItsEtcd = (task: EtcdOpsTask): boolean => {
  const controller = task.metadata.ownerReferences?.find((ref) => ref.controller === true);
  return (
    controller !== undefined &&
    controller.apiVersion === EtcdApiVersion &&
    controller.kind === EtcdKind &&
    controller.name !== undefined &&
    controller.name === task.spec.etcdName
  );
};

/** An etcd-druid presync snapshot: admitted next, whatever the duplicate policy. */
export const isDruidPresyncTask = (task: EtcdOpsTask): boolean =>
  task.spec.config.kind === "onDemandSnapshot" &&
  task.spec.config.type === "full" &&
  hasPresyncName(task.metadata.name) &&
  controlledByItsEtcd(task);

const lastCompletedStep = stepAnnotations(RecoveryAnnotations.progressPrefix).lastCompletedStep;

/**
 * A recovery that has no progress and no confirmation only waits (a presync snapshot runs beside it:
 * it would otherwise wait for a confirmation that may come hours later, or never); once confirmed it is
 * changing the etcd's members, and a presync snapshot is Rejected at once (etcd-druid then ends its
 * retries instead of waiting until the recovery's own wait for etcd-druid times out). Other tasks work.
 */
export const admissionActivityOf = (task: EtcdOpsTask): AdmissionActivity => {
  if (task.spec.config.kind !== RecoverFromQuorumLossMember) return "working";
  const annotations = task.metadata.annotations ?? {};
  const started =
    annotations[lastCompletedStep] !== undefined || annotations[RecoveryAnnotations.confirm] === "true";
  return started ? "exclusive" : "waiting";
};
