/**
 * `recoverFromQuorumLoss` (docs/contract.md §15): etcd-druid's pull request #1358 on the library's
 * resumable steps. Thirteen steps with druid's names; the progress in the controller's own record of
 * the task (library/steps/step-progress.ts: a task author cannot write it), mirrored in druid's task
 * annotations (`druid.gardener.cloud/quorum-recovery-last-completed-step`, `…-wait-start`) for people;
 * druid's Etcd annotations keep its Etcd controller out of the way while the cluster is rebuilt:
 *
 *  1 WaitConfirmation             until the task has `druid.gardener.cloud/confirm-recovery: "true"`
 *  2 SuspendReconciliation        Etcd `druid.gardener.cloud/suspend-etcd-spec-reconcile: "true"`
 *  3 DisableComponentProtection   Etcd `druid.gardener.cloud/disable-etcd-component-protection: "true"`
 *  4 ScaleDown                    StatefulSet to 0
 *  5 WaitScaleDown                until no replica is left (scaleDownTimeout, default 60s)
 *  6 DeletePVCs                   every member's volume
 *  7 DeleteMemberLeases
 *  8 PatchConfigMap               etcd.conf.yaml for a one-member cluster of member 0
 *  9 ScaleUp                      StatefulSet to 1: member 0 restores the latest backup
 * 10 WaitPodReady                 until `<etcd>-0` is ready (podReadyTimeout, default 180s)
 * 11 ReenableReconciliation       suspend removed, `druid.gardener.cloud/operation: reconcile`: druid
 *                                 rewrites the configuration and scales out to spec.replicas
 * 12 WaitEtcdReady                until AllMembersReady=True (etcdReadyTimeout, default 300s)
 * 13 ReenableComponentProtection
 *
 * Admit refuses a cluster the later steps cannot recover (admission.ts). Each destructive step (4, 6–9)
 * checks again what it relies on (`guarded`). A step that fails the task, and a task deleted before it
 * finished, have steps 3 and 2 undone at once (the two Etcd annotations removed), so druid's Etcd
 * controller is never left suspended until the task's TTL.
 */
import * as Effect from "effect/Effect";
import type { KubeError, StepAnswer, StepStop } from "../../advanced.ts";
import type { HandlerContext, PhaseOutcome, TaskHandler, TaskStep } from "../../index.ts";
import { failed, stepsHandler } from "../../index.ts";
import {
  type RecoverFromQuorumLossConfig,
  RecoverFromQuorumLossMember,
  RecoveryAnnotations,
  timeoutsOf,
} from "../api/config/recover-from-quorum-loss.ts";
import type { Etcd } from "../api/etcd.ts";
import type { EtcdOpsTask } from "../api/etcdopstask.ts";
import { etcdOpsTaskKind } from "../api/etcdopstask-kind.ts";
import { taskEtcd } from "../on-demand-snapshot/admission.ts";
import { outcomeOf } from "../on-demand-snapshot/step-failure.ts";
import type { ObjectReader } from "../services.ts";
import { admitRecovery, quorumProblem, RecoveryErrorCodes, stepCallFailed } from "./admission.ts";
import {
  configMapName,
  EtcdConfigKey,
  memberLeaseLabels,
  podName,
  QuorumCluster,
  volumeLabels,
} from "./cluster.ts";
import { singleMemberConfig } from "./single-member-config.ts";

export type RecoveryServices = ObjectReader | QuorumCluster;
type Step = TaskStep<EtcdOpsTask, RecoveryServices, HandlerContext>;

const asStop = (outcome: PhaseOutcome): StepStop =>
  outcome.kind === "completed" ? { kind: "retry", description: outcome.description } : outcome;

const configOf = (task: EtcdOpsTask): RecoverFromQuorumLossConfig =>
  task.spec.config.kind === RecoverFromQuorumLossMember
    ? task.spec.config
    : { kind: RecoverFromQuorumLossMember };

/** Runs `use` with the task's Etcd; a read failure stops the step (NotFound fails, others retry). */
const withEtcd = <A extends StepAnswer | boolean | StepStop>(
  task: EtcdOpsTask,
  use: (etcd: Etcd) => Effect.Effect<A, never, RecoveryServices>,
): Effect.Effect<A | StepStop, never, RecoveryServices> =>
  taskEtcd(task).pipe(
    Effect.matchEffect({
      onFailure: (failure) => Effect.succeed(asStop(outcomeOf(failure))),
      onSuccess: use,
    }),
  );

/** A cluster call: done, or a retry naming what failed. */
const cluster = <A>(
  what: string,
  call: (service: QuorumCluster["Service"]) => Effect.Effect<A, KubeError>,
): Effect.Effect<A | StepStop, never, QuorumCluster> =>
  QuorumCluster.use(call).pipe(
    Effect.catch((error) =>
      Effect.succeed(
        // Missing RBAC does not heal by retrying: deploy/quorum-recovery/ grants it.
        error.reason === "Forbidden"
          ? asStop(
              failed(`Not allowed to ${what}`, {
                code: RecoveryErrorCodes.execute,
                message: `failed to ${what}: forbidden; apply deploy/quorum-recovery/ to grant the controller recovery's RBAC`,
                cause: error.message,
              }),
            )
          : asStop(stepCallFailed(what, error.message)),
      ),
    ),
  );

const isStop = (value: unknown): value is StepStop =>
  typeof value === "object" && value !== null && "kind" in value;

const annotate = (task: EtcdOpsTask, what: string, annotations: Readonly<Record<string, string | null>>) =>
  cluster(what, (service) =>
    service.annotateEtcd(task.metadata.namespace, task.spec.etcdName ?? "", annotations),
  ).pipe(Effect.map((result) => (isStop(result) ? result : undefined)));

const statefulSetGone = (task: EtcdOpsTask): StepStop =>
  failed(`StatefulSet ${task.spec.etcdName ?? ""} is gone`, {
    code: RecoveryErrorCodes.execute,
    message: "the etcd's StatefulSet is missing; a missing StatefulSet is not a scaled-down one",
    cause: `statefulset ${task.metadata.namespace}/${task.spec.etcdName ?? ""} not found`,
  });

/**
 * What a destructive step relies on: quorum still lost (`notBack` once the Leases it is read from may
 * be gone), and at most `members` replicas wanted and running (none before the volumes go; ScaleUp
 * run again after a crash finds its own 1).
 */
interface Relies {
  readonly quorum: "lost" | "notBack";
  readonly members?: 0 | 1;
}

/**
 * A destructive step, with what it relies on checked again right before it: the task may have waited,
 * the controller restarted, someone else acted. Quorum: still lost (druid reads it from the member
 * Leases, so after DeleteMemberLeases only "not back": Ready is not True). druid's Etcd controller kept
 * away: its two annotations set again (idempotent; a cached read of the Etcd may not show them yet).
 * Members down: the StatefulSet at no more than `members` (a missing one fails: it is not scaled down).
 */
const guarded =
  (
    what: string,
    relies: Relies,
    act: (task: EtcdOpsTask) => Effect.Effect<unknown, never, RecoveryServices>,
  ) =>
  (task: EtcdOpsTask): Effect.Effect<StepAnswer, never, RecoveryServices> =>
    withEtcd(task, (etcd) =>
      Effect.gen(function* () {
        const ready = (etcd.status?.conditions ?? []).find((c) => c.type === "Ready");
        const problem =
          relies.quorum === "lost"
            ? quorumProblem(etcd)
            : ready?.status === "True"
              ? failed("The etcd cluster is ready again", {
                  code: RecoveryErrorCodes.execute,
                  message: "etcd cluster has not lost quorum",
                  cause: `etcd ${etcd.metadata.namespace}/${etcd.metadata.name} has Ready=True (reason=${ready.reason ?? ""})`,
                })
              : undefined;
        if (problem !== undefined)
          return failed(`Quorum is no longer lost; not going on to ${what}: ${problem.description}`, {
            code: RecoveryErrorCodes.execute,
            message: "etcd cluster has not lost quorum",
            cause: problem.error.cause,
          });
        const kept = yield* annotate(task, "keep etcd-druid's reconciliation suspended", {
          [RecoveryAnnotations.suspendReconcile]: "true",
          [RecoveryAnnotations.disableProtection]: "true",
        });
        if (kept !== undefined) return kept;
        if (relies.members !== undefined) {
          const sts = yield* cluster("get the StatefulSet", (service) =>
            service.statefulSet(etcd.metadata.namespace, etcd.metadata.name),
          );
          if (isStop(sts)) return sts;
          if (sts === undefined) return statefulSetGone(task);
          if (sts.desired > relies.members || sts.current > relies.members)
            return failed(`StatefulSet ${etcd.metadata.name} is not scaled down; not going on to ${what}`, {
              code: RecoveryErrorCodes.execute,
              message: "the etcd's members are not all down",
              cause: `statefulset ${etcd.metadata.namespace}/${etcd.metadata.name} has spec.replicas=${sts.desired}, status.replicas=${sts.current}`,
            });
        }
        const result = yield* act(task);
        return isStop(result) ? result : undefined;
      }),
    );

const steps: ReadonlyArray<Step> = [
  {
    name: "WaitConfirmation",
    done: "User confirmation received",
    until: {
      check: (task) => Effect.succeed(task.metadata.annotations?.[RecoveryAnnotations.confirm] === "true"),
      waiting: `Awaiting user confirmation. Add the '${RecoveryAnnotations.confirm}: true' annotation to the EtcdOpsTask to proceed with the destructive recovery.`,
    },
  },
  {
    name: "SuspendReconciliation",
    done: "Suspended etcd-druid reconciliation",
    run: (task) =>
      annotate(task, "suspend etcd-druid reconciliation", { [RecoveryAnnotations.suspendReconcile]: "true" }),
    undo: (task) =>
      annotate(task, "remove the suspend-reconcile annotation", {
        [RecoveryAnnotations.suspendReconcile]: null,
      }),
  },
  {
    name: "DisableComponentProtection",
    done: "Disabled etcd component protection",
    run: (task) =>
      annotate(task, "disable etcd component protection", {
        [RecoveryAnnotations.disableProtection]: "true",
      }),
    undo: (task) =>
      annotate(task, "remove the disable-protection annotation", {
        [RecoveryAnnotations.disableProtection]: null,
      }),
  },
  {
    name: "ScaleDown",
    done: "Scaled StatefulSet down to 0 replicas",
    run: guarded("scale the StatefulSet down", { quorum: "lost" }, (task) =>
      cluster("scale the StatefulSet down to 0", (service) =>
        service.scale(task.metadata.namespace, task.spec.etcdName ?? "", 0),
      ),
    ),
  },
  {
    name: "WaitScaleDown",
    done: "StatefulSet scaled down to 0 replicas",
    until: {
      check: (task) =>
        cluster("get the StatefulSet for the scale-down check", (service) =>
          service.statefulSet(task.metadata.namespace, task.spec.etcdName ?? ""),
        ).pipe(
          Effect.map((sts) =>
            isStop(sts)
              ? sts
              : sts === undefined
                ? statefulSetGone(task)
                : sts.current === 0 && sts.ready === 0,
          ),
        ),
      deadlineMs: (task) => timeoutsOf(configOf(task)).scaleDownMs,
      pollMs: 2_000,
      waiting: "Waiting for StatefulSet to scale down to 0 replicas",
    },
  },
  {
    name: "DeletePVCs",
    done: "Deleted all PVCs",
    run: guarded("delete the members' PVCs", { quorum: "lost", members: 0 }, (task) =>
      cluster("delete the members' PVCs", (service) =>
        service.deletePvcs(task.metadata.namespace, volumeLabels(task.spec.etcdName ?? "")),
      ),
    ),
  },
  {
    name: "DeleteMemberLeases",
    done: "Deleted all member leases",
    run: guarded("delete the member leases", { quorum: "lost", members: 0 }, (task) =>
      cluster("delete the member leases", (service) =>
        service.deleteLeases(task.metadata.namespace, memberLeaseLabels(task.spec.etcdName ?? "")),
      ),
    ),
  },
  {
    name: "PatchConfigMap",
    done: "Patched ConfigMap to single-member configuration",
    run: guarded("rewrite the etcd configuration", { quorum: "notBack", members: 0 }, (task) =>
      Effect.gen(function* () {
        const etcd = task.spec.etcdName ?? "";
        const namespace = task.metadata.namespace;
        const text = yield* cluster("read the etcd ConfigMap", (service) =>
          service.configData(namespace, configMapName(etcd), EtcdConfigKey),
        );
        if (isStop(text)) return text;
        if (text === undefined)
          return failed(`ConfigMap ${configMapName(etcd)} has no ${EtcdConfigKey}`, {
            code: RecoveryErrorCodes.execute,
            message: "failed to patch the etcd ConfigMap",
            cause: `key "${EtcdConfigKey}" not found in ConfigMap ${namespace}/${configMapName(etcd)}`,
          });
        const rewritten = yield* Effect.promise(() => singleMemberConfig(text, podName(etcd, 0)));
        if (!rewritten.ok)
          return failed("Cannot rewrite the etcd configuration for a single member", {
            code: RecoveryErrorCodes.execute,
            message: "failed to patch the etcd ConfigMap",
            cause: rewritten.problem,
          });
        return yield* cluster("write the etcd ConfigMap", (service) =>
          service.writeConfigData(namespace, configMapName(etcd), EtcdConfigKey, rewritten.text),
        );
      }),
    ),
  },
  {
    name: "ScaleUp",
    done: "Scaled StatefulSet up to 1 replica",
    run: guarded("scale the StatefulSet up to 1", { quorum: "notBack", members: 1 }, (task) =>
      cluster("scale the StatefulSet up to 1", (service) =>
        service.scale(task.metadata.namespace, task.spec.etcdName ?? "", 1),
      ),
    ),
  },
  {
    name: "WaitPodReady",
    done: "Single-member etcd pod is ready",
    until: {
      check: (task) =>
        cluster("get pod for readiness check", (service) =>
          service.podReady(task.metadata.namespace, podName(task.spec.etcdName ?? "", 0)),
        ),
      deadlineMs: (task) => timeoutsOf(configOf(task)).podReadyMs,
      pollMs: 5_000,
      waiting: "Waiting for single-member etcd pod to become ready",
    },
  },
  {
    name: "ReenableReconciliation",
    done: "Re-enabled etcd-druid reconciliation",
    run: (task) =>
      annotate(task, "re-enable etcd-druid reconciliation", {
        [RecoveryAnnotations.suspendReconcile]: null,
        [RecoveryAnnotations.operation]: "reconcile",
      }),
  },
  {
    name: "WaitEtcdReady",
    done: "All etcd cluster members are ready",
    until: {
      check: (task) =>
        withEtcd(task, (etcd) =>
          Effect.succeed(
            (etcd.status?.conditions ?? []).some((c) => c.type === "AllMembersReady" && c.status === "True"),
          ),
        ),
      deadlineMs: (task) => timeoutsOf(configOf(task)).etcdReadyMs,
      pollMs: 5_000,
      waiting: "Waiting for all etcd cluster members to become ready",
    },
  },
  {
    name: "ReenableComponentProtection",
    done: "Re-enabled etcd component protection",
    run: (task) =>
      annotate(task, "re-enable etcd component protection", {
        [RecoveryAnnotations.disableProtection]: null,
      }),
  },
];

export const recoveryStepNames: ReadonlyArray<string> = steps.map((step) => step.name);

export const recoverFromQuorumLossHandler: TaskHandler<EtcdOpsTask, RecoveryServices> = stepsHandler(
  etcdOpsTaskKind,
  {
    progress: RecoveryAnnotations.progressPrefix,
    steps,
    admit: (task) => admitRecovery(task, configOf(task)),
    completed: "Recovery from quorum loss completed successfully. All etcd cluster members are ready.",
    deadlineCode: RecoveryErrorCodes.execute,
    undoWhen: ["Failed", "InProgress"],
  },
);
