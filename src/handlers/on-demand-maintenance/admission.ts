/**
 * The preconditions of on-demand maintenance, checked by Admit and again before every Execute attempt:
 * the Etcd exists in the task's namespace and is Ready. Texts and codes are the snapshot handler's
 * (contract §1.5, §1.9), including the empty-`etcdName` rule (NotFound without a request).
 *
 * Unlike a snapshot, maintenance does NOT require backup (`spec.backup.store`): compaction and
 * defragmentation talk to etcd itself, never to the backup-restore sidecar. `admissibleEtcd` of the
 * snapshot handler checks backup before readiness and so cannot be reused as is; the readiness rule
 * (`isReady`) and the texts are.
 */
import { Effect } from "effect";
import { type Etcd, isReady } from "../../api/etcd.ts";
import type { EtcdOpsTask } from "../../api/etcdopstask.ts";
import { AdmissionTexts } from "../on-demand-snapshot/admission.ts";
import { notFoundMessage, ObjectReader, type ReadError, Resources } from "../services.ts";
import { ErrorCodes, failed, retry, type StepFailure } from "./step-failure.ts";

export { AdmissionTexts };

const etcdReadFailure = (error: ReadError): StepFailure =>
  error.reason === "NotFound"
    ? failed(AdmissionTexts.etcdNotFound, ErrorCodes.getEtcd, "etcd object not found", error.message)
    : retry(AdmissionTexts.getEtcdFailed, ErrorCodes.getEtcd, "failed to get etcd object", error.message);

/** The task's Etcd (same namespace, `spec.etcdName`); an absent or empty name is NotFound, unread. */
const getEtcd = (task: EtcdOpsTask): Effect.Effect<Etcd, StepFailure, ObjectReader> => {
  const namespace = task.metadata.namespace;
  const name = task.spec.etcdName ?? "";
  return name === ""
    ? Effect.fail(
        failed(
          AdmissionTexts.etcdNotFound,
          ErrorCodes.getEtcd,
          "etcd object not found",
          notFoundMessage(Resources.etcd, name),
        ),
      )
    : ObjectReader.use((reader) => reader.getEtcd(namespace, name)).pipe(Effect.mapError(etcdReadFailure));
};

/** The Etcd when maintenance may run against it: it exists and is Ready (backup is not required). */
export const maintainableEtcd = (task: EtcdOpsTask): Effect.Effect<Etcd, StepFailure, ObjectReader> =>
  getEtcd(task).pipe(
    Effect.flatMap((etcd) => {
      if (isReady(etcd)) return Effect.succeed(etcd);
      const text = "etcd is not ready";
      return Effect.fail(failed(AdmissionTexts.etcdNotReady, ErrorCodes.etcdNotReady, text, text));
    }),
  );
