/**
 * The preconditions of a snapshot compaction, checked by Admit and again before the Job is created:
 * the Etcd exists, has backup enabled, and its store provider is one etcd-backup-restore knows.
 *
 * Unlike an on-demand snapshot, the Etcd need not be Ready: compaction reads and writes the backup
 * store only (it restores into a temporary etcd inside the Job), and shortening the delta chain is
 * most useful exactly when the etcd may have to be restored. The texts and codes of the shared checks
 * are the snapshot handler's.
 */
import * as Effect from "effect/Effect";
import type { Etcd, StoreSpec } from "../api/etcd.ts";
import type { EtcdOpsTask } from "../api/etcdopstask.ts";
import { AdmissionTexts, requireBackup, taskEtcd } from "../on-demand-snapshot/admission.ts";
import type { ObjectReader } from "../services.ts";
import { ErrorCodes, failed, type StepFailure } from "./step-failure.ts";
import { type StorageProvider, storageProvider } from "./store.ts";

export { AdmissionTexts };

/** The Etcd to compact, its store and the provider etcd-backup-restore is told to use. */
export interface CompactionTarget {
  readonly etcd: Etcd;
  readonly store: StoreSpec;
  readonly provider: StorageProvider;
}

export const compactionTarget = (
  task: EtcdOpsTask,
): Effect.Effect<CompactionTarget, StepFailure, ObjectReader> =>
  taskEtcd(task).pipe(
    Effect.flatMap((etcd) => Effect.map(requireBackup(etcd), (store) => ({ etcd, store }))),
    Effect.flatMap(({ etcd, store }) => {
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
