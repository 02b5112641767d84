/**
 * The on-demand snapshot handler: etcd-druid's only task type (docs/contract.md §5, §8–§10).
 *
 * - Admit: the Etcd exists, has backup enabled and is Ready.
 * - Execute: the same checks (now `Failed` instead of `Rejected`), the backup-restore CA when TLS is on,
 *   then one POST to the sidecar. Repeating it is safe: a second snapshot is just another snapshot.
 * - Cleanup: nothing to undo.
 */
import * as Effect from "effect/Effect";
import { completed, type TaskHandler } from "../../index.ts";
import {
  type OnDemandSnapshotConfig,
  OnDemandSnapshotMember,
  snapshotTimeoutSeconds,
} from "../api/config/on-demand-snapshot.ts";
import type { EtcdOpsTask } from "../api/etcdopstask.ts";
import type { BackupRestoreHttp, ObjectReader } from "../services.ts";
import { AdmissionTexts, admissibleEtcd } from "./admission.ts";
import { resolveBackupRestoreCA } from "./ca-resolution.ts";
import { snapshotRequest, takeSnapshot } from "./request.ts";
import { ErrorCodes, failed, outcomeOf, type StepFailure } from "./step-failure.ts";

export const CleanupCompleted = "Cleanup completed";

export interface OnDemandSnapshotHandlerOptions {
  /**
   * The client timeout of the snapshot call; default `timeoutSecondsFull`/`timeoutSecondsDelta`
   * (minimum 120 s / 10 s by the CRD). Tests shorten it.
   */
  readonly timeoutMs?: (config: OnDemandSnapshotConfig) => number;
}

/** The task's snapshot config; any other member means the handler was registered under the wrong key. */
const snapshotConfig = (task: EtcdOpsTask): Effect.Effect<OnDemandSnapshotConfig, StepFailure> => {
  const config = task.spec.config;
  const member = config.kind === "unsupported" ? config.member : config.kind;
  return config.kind === OnDemandSnapshotMember
    ? Effect.succeed(config)
    : Effect.fail(
        failed(
          "Task config is not supported by the on-demand snapshot handler",
          ErrorCodes.unsupportedTask,
          "unsupported task config",
          `config member "${member}" is not ${OnDemandSnapshotMember}`,
        ),
      );
};

export type OnDemandSnapshotHandler = TaskHandler<EtcdOpsTask, ObjectReader | BackupRestoreHttp>;

export const makeOnDemandSnapshotHandler = (
  options: OnDemandSnapshotHandlerOptions = {},
): OnDemandSnapshotHandler => {
  const timeoutMs = options.timeoutMs ?? ((config) => snapshotTimeoutSeconds(config) * 1000);
  return {
    admit: (task) =>
      snapshotConfig(task).pipe(
        Effect.andThen(admissibleEtcd(task)),
        Effect.as(completed(AdmissionTexts.admitPassed)),
        Effect.catchTag("HandlerStepFailure", (failure) => Effect.succeed(outcomeOf(failure))),
        Effect.withSpan("OnDemandSnapshot.admit"),
      ),

    execute: (task) =>
      Effect.gen(function* () {
        const config = yield* snapshotConfig(task);
        const etcd = yield* admissibleEtcd(task);
        const tls = etcd.spec.backup.tls;
        const ca = tls === undefined ? undefined : yield* resolveBackupRestoreCA(etcd, tls);
        return yield* takeSnapshot(config, snapshotRequest(etcd, config, timeoutMs(config), ca));
      }).pipe(
        Effect.catchTag("HandlerStepFailure", (failure) => Effect.succeed(outcomeOf(failure))),
        Effect.withSpan("OnDemandSnapshot.execute"),
      ),

    cleanup: () => Effect.succeed(completed(CleanupCompleted)),
  };
};

/** The handler with druid's timeouts. */
export const onDemandSnapshotHandler: OnDemandSnapshotHandler = makeOnDemandSnapshotHandler();
