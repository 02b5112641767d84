/**
 * The `defragmentation` guard of EtcdOpsTask schedules: before a scheduled maintenance run that
 * defragments, read every voting member's sizes through etcd's maintenance API (the same endpoints,
 * TLS and member checks the maintenance handler uses) and refuse the run when no member would reclaim
 * enough (defragmentation-rule.ts). A guard that cannot read the sizes refuses with the reason.
 */
import * as Effect from "effect/Effect";
import * as Result from "effect/Result";
import type { GuardVerdict } from "../../advanced.ts";
import type { ScheduleGuard } from "../../index.ts";
import { decodeEtcdOpsTask } from "../api/etcdopstask.ts";
import { EtcdGateway } from "../etcd-client.ts";
import { maintainableEtcd } from "../on-demand-maintenance/admission.ts";
import { resolveEtcdClientTls } from "../on-demand-maintenance/client-tls.ts";
import { clientEndpoint, defragmentPlan, targetLabel } from "../on-demand-maintenance/endpoint.ts";
import type { ObjectReader } from "../services.ts";
import { defragmentationVerdict, type MemberSize, parseDefragmentationRule } from "./defragmentation-rule.ts";

const callTimeoutMs = 10_000;

/** Runs an Effect needing the etcd services (the controller's handler layer provides them). */
export type EtcdServicesRunner = <A>(
  effect: Effect.Effect<A, never, ObjectReader | EtcdGateway>,
) => Promise<A>;

const refuse = (reason: string): GuardVerdict => ({ allow: false, reason });

export const defragmentationGuard =
  (run: EtcdServicesRunner): ScheduleGuard =>
  async ({ run: object, parameters }) => {
    const rule = parseDefragmentationRule(parameters);
    if (Result.isFailure(rule)) return refuse(rule.failure);
    const decoded = decodeEtcdOpsTask({
      ...object,
      metadata: {
        ...object.metadata,
        uid: "guard",
        resourceVersion: "1",
        generation: 1,
        creationTimestamp: "1970-01-01T00:00:00Z",
      },
    });
    if (Result.isFailure(decoded))
      return refuse(`the template is not an EtcdOpsTask: ${decoded.failure.message}`);
    const task = decoded.success;
    if (task.spec.config.kind !== "onDemandMaintenance" || task.spec.config.defragmentation === undefined)
      return refuse(
        "spec.guard.name: the defragmentation guard applies to templates with onDemandMaintenance.defragmentation",
      );
    const sizes = Effect.gen(function* () {
      const etcd = yield* maintainableEtcd(task);
      const clientTls = etcd.spec.etcd.clientUrlTls;
      const tls = clientTls === undefined ? undefined : yield* resolveEtcdClientTls(etcd, clientTls);
      const client = clientEndpoint(etcd, callTimeoutMs, tls);
      const gateway = yield* EtcdGateway;
      const members = yield* gateway.memberList(client);
      const plan = defragmentPlan(members, client, etcd);
      if (Result.isFailure(plan)) return yield* Effect.fail(plan.failure.reason);
      const read: MemberSize[] = [];
      for (const target of plan.success.targets) {
        const status = yield* gateway.status(target.endpoint);
        read.push({ member: targetLabel(target), dbSize: status.dbSize, dbSizeInUse: status.dbSizeInUse });
      }
      return read;
    });
    return run(
      sizes.pipe(
        Effect.map((members) => defragmentationVerdict(members, rule.success)),
        Effect.catch((error) =>
          Effect.succeed(
            refuse(`member sizes could not be read: ${typeof error === "string" ? error : error.message}`),
          ),
        ),
      ),
    );
  };
