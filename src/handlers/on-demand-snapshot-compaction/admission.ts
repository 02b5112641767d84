/**
 * The preconditions of a snapshot compaction, checked by Admit and again before the Job is created:
 * the Etcd exists, has backup enabled, and its store provider is one etcd-backup-restore knows.
 *
 * Unlike an on-demand snapshot, the Etcd need not be Ready: compaction reads and writes the backup
 * store only (it restores into a temporary etcd inside the Job), and shortening the delta chain is
 * most useful exactly when the etcd may have to be restored. The texts and codes of the shared checks
 * are the snapshot handler's.
 */
import { Effect } from "effect";
import { type Etcd, isBackupEnabled, type StoreSpec } from "../../api/etcd.ts";
import type { EtcdOpsTask } from "../../api/etcdopstask.ts";
import { AdmissionTexts } from "../on-demand-snapshot/admission.ts";
import { notFoundMessage, ObjectReader, ReadError, Resources } from "../services.ts";
import { ErrorCodes, failed, retry, type StepFailure } from "./step-failure.ts";
import { type StorageProvider, storageProvider } from "./store.ts";

export { AdmissionTexts };

/** The Etcd to compact, its store and the provider etcd-backup-restore is told to use. */
export interface CompactionTarget {
  readonly etcd: Etcd;
  readonly store: StoreSpec;
  readonly provider: StorageProvider;
}

const etcdReadFailure = (error: ReadError): StepFailure =>
  error.reason === "NotFound"
    ? failed(AdmissionTexts.etcdNotFound, ErrorCodes.getEtcd, "etcd object not found", error.message)
    : retry(AdmissionTexts.getEtcdFailed, ErrorCodes.getEtcd, "failed to get etcd object", error.message);

/** `spec.etcdName` absent or empty is NotFound without a request, as for snapshots (contract §1.9). */
const getEtcd = (task: EtcdOpsTask): Effect.Effect<Etcd, ReadError, ObjectReader> => {
  const namespace = task.metadata.namespace;
  const name = task.spec.etcdName ?? "";
  return name === ""
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
};

export const compactionTarget = (
  task: EtcdOpsTask,
): Effect.Effect<CompactionTarget, StepFailure, ObjectReader> =>
  getEtcd(task).pipe(
    Effect.mapError(etcdReadFailure),
    Effect.flatMap((etcd) => {
      const store = etcd.spec.backup.store;
      if (store === undefined || !isBackupEnabled(etcd)) {
        const text = "backup is not enabled for etcd";
        return Effect.fail(failed(AdmissionTexts.backupNotEnabled, ErrorCodes.backupNotEnabled, text, text));
      }
      const provider = storageProvider(store);
      if (provider === undefined) {
        return Effect.fail(
          failed(
            "Backup store provider is not supported",
            ErrorCodes.unsupportedStoreProvider,
            "unsupported backup store provider",
            `unsupported storage provider: '${store.provider ?? ""}'`,
          ),
        );
      }
      return Effect.succeed({ etcd, store, provider });
    }),
  );
