/**
 * The on-demand maintenance handler (opstask's own task type, docs/contract.md §13 D10): compaction of the
 * etcd key space and/or defragmentation of every member, over etcd's client endpoint.
 *
 * - Admit: the Etcd exists and is Ready; backup need not be enabled (see admission.ts).
 * - Execute: the same checks (now `Failed` instead of `Rejected`), the client TLS material when
 *   `spec.etcd.clientUrlTls` is set, then compaction and defragmentation (see maintenance.ts). Safe to
 *   repeat.
 * - Cleanup: nothing to undo.
 */
import * as Effect from "effect/Effect";
import type { MemberHandler } from "../../advanced.ts";
import { completed } from "../../index.ts";
import type { OnDemandMaintenanceConfig } from "../api/config/on-demand-maintenance.ts";
import type { EtcdOpsTask } from "../api/etcdopstask.ts";
import type { EtcdGateway } from "../etcd-client.ts";
import type { ObjectReader } from "../services.ts";
import { AdmissionTexts, maintainableEtcd } from "./admission.ts";
import { resolveEtcdClientTls } from "./client-tls.ts";
import { describeReport } from "./description.ts";
import { clientEndpoint } from "./endpoint.ts";
import { type MaintenancePlan, runMaintenance } from "./maintenance.ts";
import { outcomeOf } from "./step-failure.ts";

export const CleanupCompleted = "Cleanup completed";

export interface OnDemandMaintenanceHandlerOptions {
  /** The timeout of each call to etcd; default `timeoutSeconds` (300 s, minimum 10 s). Tests shorten it. */
  readonly timeoutMs?: (config: OnDemandMaintenanceConfig) => number;
}

export const planOf = (config: OnDemandMaintenanceConfig): MaintenancePlan => ({
  ...(config.compaction === undefined
    ? {}
    : { compaction: { physical: config.compaction.physical ?? false } }),
  defragmentation: config.defragmentation !== undefined,
});

/** Registered with `memberHandlers`, so each phase gets the task's `onDemandMaintenance` config. */
export type OnDemandMaintenanceHandler = MemberHandler<
  EtcdOpsTask,
  OnDemandMaintenanceConfig,
  ObjectReader | EtcdGateway
>;

export const makeOnDemandMaintenanceHandler = (
  options: OnDemandMaintenanceHandlerOptions = {},
): OnDemandMaintenanceHandler => {
  const timeoutMs = options.timeoutMs ?? ((config) => config.timeoutSeconds * 1000);
  return {
    admit: (task) =>
      maintainableEtcd(task).pipe(
        Effect.as(completed(AdmissionTexts.admitPassed)),
        Effect.catchTag("HandlerStepFailure", (failure) => Effect.succeed(outcomeOf(failure))),
        Effect.withSpan("OnDemandMaintenance.admit"),
      ),

    execute: (task, { config }) =>
      Effect.gen(function* () {
        const etcd = yield* maintainableEtcd(task);
        const clientTls = etcd.spec.etcd.clientUrlTls;
        const tls = clientTls === undefined ? undefined : yield* resolveEtcdClientTls(etcd, clientTls);
        const report = yield* runMaintenance(
          clientEndpoint(etcd, timeoutMs(config), tls),
          planOf(config),
          etcd,
        );
        return completed(describeReport(report));
      }).pipe(
        Effect.catchTag("HandlerStepFailure", (failure) => Effect.succeed(outcomeOf(failure))),
        Effect.withSpan("OnDemandMaintenance.execute"),
      ),

    cleanup: () => Effect.succeed(completed(CleanupCompleted)),
  };
};

/** The handler with the config's timeouts. */
export const onDemandMaintenanceHandler: OnDemandMaintenanceHandler = makeOnDemandMaintenanceHandler();
