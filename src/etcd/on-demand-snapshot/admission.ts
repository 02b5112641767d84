/**
 * The preconditions of an on-demand snapshot (docs/contract.md §8), checked by Admit and again before every
 * Execute attempt: the Etcd exists, has backup enabled and is Ready. The duplicate check is the
 * lifecycle's. Admit and Execute share the texts; the lifecycle adds the operation (Admit/Execution).
 */
import * as Effect from "effect/Effect";
import { subdomainProblem } from "../../advanced.ts";
import { type Etcd, isReady, type StoreSpec } from "../api/etcd.ts";
import type { EtcdOpsTask } from "../api/etcdopstask.ts";
import { notFoundMessage, ObjectReader, ReadError, Resources } from "../services.ts";
import { ErrorCodes, failed, retry, type StepFailure } from "./step-failure.ts";

export const AdmissionTexts = {
  etcdNotFound: "Etcd object not found",
  getEtcdFailed: "Failed to get etcd object",
  backupNotEnabled: "Backup is not enabled for etcd",
  etcdNotReady: "Etcd is not ready",
  admitPassed: "Admit check passed",
} as const;

const etcdReadFailure = (error: ReadError): StepFailure =>
  error.reason === "NotFound"
    ? failed(AdmissionTexts.etcdNotFound, ErrorCodes.getEtcd, "etcd object not found", error.message)
    : retry(AdmissionTexts.getEtcdFailed, ErrorCodes.getEtcd, "failed to get etcd object", error.message);

/**
 * The task's Etcd (same namespace, `spec.etcdName`), for every etcd task type. An absent or empty
 * `etcdName` is NotFound without a request: druid's cached client answers NotFound for the empty key,
 * so such a task is Rejected rather than retried for ever (docs/contract.md §8).
 */
export const taskEtcd = (task: EtcdOpsTask): Effect.Effect<Etcd, StepFailure, ObjectReader> => {
  const namespace = task.metadata.namespace;
  const name = task.spec.etcdName ?? "";
  const invalid = name === "" ? undefined : subdomainProblem(name);
  // Not an object name: no request (it would address another path, `e005/status` e005's status).
  if (invalid !== undefined) return Effect.fail(invalidEtcdName(invalid));
  const read: Effect.Effect<Etcd, ReadError, ObjectReader> =
    name === ""
      ? Effect.fail(
          new ReadError({
            reason: "NotFound",
            resource: Resources.etcd,
            namespace,
            name,
            message: notFoundMessage(Resources.etcd, name),
          }),
        )
      : ObjectReader.use((reader) => reader.getEtcd(namespace, name));
  return read.pipe(
    Effect.mapError(etcdReadFailure),
    // The admission group is keyed on namespace/name: the object read must be that very object.
    Effect.filterOrFail(
      (etcd) => etcd.metadata.name === name && etcd.metadata.namespace === namespace,
      (etcd) =>
        failed(
          AdmissionTexts.etcdNotFound,
          ErrorCodes.getEtcd,
          "etcd object not found",
          `spec.etcdName: asked for ${namespace}/${name}, the API returned ${etcd.metadata.namespace}/${etcd.metadata.name}`,
        ),
    ),
  );
};

/** Rejected like a missing Etcd (druid's code and texts), the cause naming the field and the rule. */
const invalidEtcdName = (problem: string): StepFailure =>
  failed(
    AdmissionTexts.etcdNotFound,
    ErrorCodes.getEtcd,
    "etcd object not found",
    `spec.etcdName: ${problem}`,
  );

/** The backup store (`spec.backup.store`, druid's "backup enabled"), or the failure that it is absent. */
export const requireBackup = (etcd: Etcd): Effect.Effect<StoreSpec, StepFailure> => {
  const store = etcd.spec.backup.store;
  if (store !== undefined) return Effect.succeed(store);
  const text = "backup is not enabled for etcd";
  return Effect.fail(failed(AdmissionTexts.backupNotEnabled, ErrorCodes.backupNotEnabled, text, text));
};

/** Fails unless the Etcd has the condition Ready=True. */
export const requireReady = (etcd: Etcd): Effect.Effect<Etcd, StepFailure> => {
  if (isReady(etcd)) return Effect.succeed(etcd);
  const text = "etcd is not ready";
  return Effect.fail(failed(AdmissionTexts.etcdNotReady, ErrorCodes.etcdNotReady, text, text));
};

/** The Etcd when the task may run against it; backup is checked before readiness (docs/contract.md §8). */
export const admissibleEtcd = (task: EtcdOpsTask): Effect.Effect<Etcd, StepFailure, ObjectReader> =>
  taskEtcd(task).pipe(Effect.tap(requireBackup), Effect.flatMap(requireReady));
