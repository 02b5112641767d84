/**
 * The preconditions of on-demand maintenance, checked by Admit and again before every Execute attempt:
 * the Etcd exists in the task's namespace and is Ready. Texts and codes are the snapshot handler's
 * (docs/contract.md §5, §8), including the empty-`etcdName` rule (NotFound without a request).
 *
 * Unlike a snapshot, maintenance does NOT require backup (`spec.backup.store`): compaction and
 * defragmentation talk to etcd itself, never to the backup-restore sidecar. The lookup and the
 * readiness check are the snapshot handler's. An Etcd with externally managed members is refused
 * (`ERR_EXTERNALLY_MANAGED_MEMBERS`): it has no client Service, and its members are not druid's pods,
 * the only ones defragmentation calls (endpoint.ts).
 */
import * as Effect from "effect/Effect";
import type { Etcd } from "../api/etcd.ts";
import type { EtcdOpsTask } from "../api/etcdopstask.ts";
import { refuseExternallyManaged } from "../externally-managed.ts";
import { AdmissionTexts, requireReady, taskEtcd } from "../on-demand-snapshot/admission.ts";
import type { ObjectReader } from "../services.ts";
import type { StepFailure } from "../step-failure.ts";

export { AdmissionTexts };

const refuseExternal = refuseExternallyManaged(
  "onDemandMaintenance",
  "its members have no client Service and are not etcd-druid's pods, the only members defragmentation calls",
  "compact and defragment them with etcdctl where they run",
);

/**
 * The Etcd when maintenance may run against it: it exists, its members are druid's, and it is Ready
 * (backup is not required).
 */
export const maintainableEtcd = (task: EtcdOpsTask): Effect.Effect<Etcd, StepFailure, ObjectReader> =>
  taskEtcd(task).pipe(Effect.flatMap(refuseExternal), Effect.flatMap(requireReady));
