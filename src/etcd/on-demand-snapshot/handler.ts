/**
 * The on-demand snapshot handler: etcd-druid's only task type (docs/contract.md §5, §8–§10).
 *
 * - Admit: the Etcd exists, has backup enabled and is Ready.
 * - Execute: the same checks (now `Failed` instead of `Rejected`), the backup-restore CA when TLS is on,
 *   then one POST to the sidecar (request.ts says where). Repeating it is safe: a second snapshot is
 *   just another snapshot.
 * - Cleanup: nothing to undo.
 */
import * as Effect from "effect/Effect";
import type { MemberHandler } from "../../advanced.ts";
import { completed } from "../../index.ts";
import { type OnDemandSnapshotConfig, snapshotTimeoutSeconds } from "../api/config/on-demand-snapshot.ts";
import type { EtcdOpsTask } from "../api/etcdopstask.ts";
import type { BackupRestoreHttp, ObjectReader } from "../services.ts";
import { AdmissionTexts, admissibleEtcd } from "./admission.ts";
import { resolveBackupRestoreCA } from "./ca-resolution.ts";
import { snapshotHost, snapshotRequest, takeSnapshot } from "./request.ts";
import { outcomeOf } from "./step-failure.ts";

export const CleanupCompleted = "Cleanup completed";

export interface OnDemandSnapshotHandlerOptions {
  /**
   * The client timeout of the snapshot call; default `timeoutSecondsFull`/`timeoutSecondsDelta`
   * (minimum 120 s / 10 s by the CRD). Tests shorten it.
   */
  readonly timeoutMs?: (config: OnDemandSnapshotConfig) => number;
}

/** Registered with `memberHandlers`, so each phase gets the task's `onDemandSnapshot` config. */
export type OnDemandSnapshotHandler = MemberHandler<
  EtcdOpsTask,
  OnDemandSnapshotConfig,
  ObjectReader | BackupRestoreHttp
>;

export const makeOnDemandSnapshotHandler = (
  options: OnDemandSnapshotHandlerOptions = {},
): OnDemandSnapshotHandler => {
  const timeoutMs = options.timeoutMs ?? ((config) => snapshotTimeoutSeconds(config) * 1000);
  return {
    admit: (task) =>
      admissibleEtcd(task).pipe(
        Effect.flatMap(snapshotHost),
        Effect.as(completed(AdmissionTexts.admitPassed)),
        Effect.catchTag("HandlerStepFailure", (failure) => Effect.succeed(outcomeOf(failure))),
        Effect.withSpan("OnDemandSnapshot.admit"),
      ),

    execute: (task, { config }) =>
      Effect.gen(function* () {
        const etcd = yield* admissibleEtcd(task);
        const tls = etcd.spec.backup.tls;
        const host = yield* snapshotHost(etcd);
        const ca = tls === undefined ? undefined : yield* resolveBackupRestoreCA(etcd, tls);
        return yield* takeSnapshot(config, snapshotRequest(etcd, config, timeoutMs(config), ca, host));
      }).pipe(
        Effect.catchTag("HandlerStepFailure", (failure) => Effect.succeed(outcomeOf(failure))),
        Effect.withSpan("OnDemandSnapshot.execute"),
      ),

    cleanup: () => Effect.succeed(completed(CleanupCompleted)),
  };
};

/** The handler with druid's timeouts. */
export const onDemandSnapshotHandler: OnDemandSnapshotHandler = makeOnDemandSnapshotHandler();
