/**
 * Tasks that work on etcd-druid's own members (its pods, their Services, its StatefulSet) refuse an Etcd
 * with `spec.externallyManagedMemberAddresses` (etcd-druid v0.38.1) at once, with a code of their own
 * that names the field, instead of retrying against a Service or a StatefulSet that never exists.
 * Snapshots and snapshot compactions need no member of druid's and run as usual (docs/contract.md §9, §12).
 */
import * as Effect from "effect/Effect";
import type { TaskHandler } from "../index.ts";
import { type Etcd, ExternallyManagedField, externallyManagedMembers } from "./api/etcd.ts";
import type { EtcdOpsTask } from "./api/etcdopstask.ts";
import { taskEtcd } from "./on-demand-snapshot/admission.ts";
import type { ObjectReader } from "./services.ts";
import { outcomeOf, type StepFailure, stops } from "./step-failure.ts";

export const ExternallyManagedCode = "ERR_EXTERNALLY_MANAGED_MEMBERS";

const { failed } = stops<typeof ExternallyManagedCode>();

/**
 * Fails (Rejected at Admit, Failed at Execution) when the Etcd has externally managed members. `why`
 * says what the task would need and `instead` what to do, e.g. `run etcdctl on the members`.
 */
export const refuseExternallyManaged =
  (member: string, why: string, instead: string) =>
  (etcd: Etcd): Effect.Effect<Etcd, StepFailure> =>
    externallyManagedMembers(etcd).length === 0
      ? Effect.succeed(etcd)
      : Effect.fail(
          failed(
            `${member} is not supported for an Etcd with externally managed members`,
            ExternallyManagedCode,
            `${member} does not support externally managed members`,
            `${ExternallyManagedField} is set on etcd ${etcd.metadata.namespace}/${etcd.metadata.name}: ${why}; ${instead}`,
          ),
        );

/**
 * `handler` with an Admit that Rejects a task of an Etcd with externally managed members before the
 * handler's own Admit runs (the field can only be set when the Etcd is created, so an admitted task
 * never meets it later).
 */
export const refusingExternallyManaged = <R>(
  handler: TaskHandler<EtcdOpsTask, R>,
  refuse: (etcd: Etcd) => Effect.Effect<Etcd, StepFailure>,
): TaskHandler<EtcdOpsTask, R | ObjectReader> => ({
  ...handler,
  admit: (task, context) =>
    taskEtcd(task).pipe(
      Effect.flatMap(refuse),
      Effect.matchEffect({
        onFailure: (failure) => Effect.succeed(outcomeOf(failure)),
        onSuccess: () => handler.admit(task, context),
      }),
    ),
});
