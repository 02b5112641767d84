/**
 * The maintenance itself, against etcd's JSON gateway: compaction to the current revision, then
 * defragmentation of every member, one at a time (a member being defragmented blocks its reads and
 * writes; doing them in turn keeps quorum). Each call is bounded by `timeoutSeconds`.
 *
 * Safe to repeat (Execute is at-least-once): compaction always targets the revision read just before,
 * and etcd's "required revision has been compacted" (no write since the last run, or etcd's own
 * auto-compaction got there first) counts as done; defragmenting again only costs time.
 *
 * What a failed call means:
 * - no answer (refused, DNS, TLS, reset, timeout) → `retry`, `ERR_ETCD_UNREACHABLE`;
 * - the request could not be built (e.g. a bad `--resolve` address) → `retry`, `ERR_CREATE_HTTP_REQUEST`
 *   (as the snapshot handler, docs/contract.md §5);
 * - etcd answered with an error → `failed` with the step's code (`ERR_ETCD_STATUS`, `ERR_MEMBER_LIST`,
 *   `ERR_COMPACTION`, `ERR_DEFRAGMENTATION`) and etcd's message as the cause; except etcd's transient
 *   answers (gRPC Unavailable, DeadlineExceeded, ResourceExhausted, Aborted: no leader, leader changed,
 *   request timed out, too many requests), and gateway 502/503/504, which `retry` with the same code.
 */
import * as Effect from "effect/Effect";
import * as Result from "effect/Result";
import type { Etcd } from "../api/etcd.ts";
import { type EtcdCallError, type EtcdEndpoint, EtcdGateway, isCompactedError } from "../etcd-client.ts";
import type {
  CompactionReport,
  DefragmentationReport,
  MaintenanceReport,
  MemberDefragmentation,
} from "./description.ts";
import { defragmentPlan, memberName, targetLabel } from "./endpoint.ts";
import { type ErrorCode, ErrorCodes, failed, retry, type StepFailure } from "./step-failure.ts";

export interface MaintenancePlan {
  readonly compaction?: { readonly physical: boolean };
  readonly defragmentation: boolean;
}

export const MaintenanceTexts = {
  unreachable: "Failed to reach etcd",
  createRequest: "Failed to create HTTP request",
  status: "Failed to read etcd status",
  memberList: "Failed to list etcd members",
  compaction: "Failed to compact etcd",
  defragmentation: "Failed to defragment etcd member",
} as const;

/** gRPC codes of conditions that pass: Unavailable, DeadlineExceeded, ResourceExhausted, Aborted. */
const transientGrpcCodes: ReadonlySet<number> = new Set([14, 4, 8, 10]);
const transientHttpStatuses: ReadonlySet<number> = new Set([502, 503, 504]);

const isTransientAnswer = (error: EtcdCallError): boolean =>
  error.grpcCode === undefined
    ? error.httpStatus !== undefined && transientHttpStatuses.has(error.httpStatus)
    : transientGrpcCodes.has(error.grpcCode);

interface Step {
  readonly description: string;
  readonly code: ErrorCode;
  readonly message: string;
}

const callFailure =
  (step: Step) =>
  (error: EtcdCallError): StepFailure => {
    switch (error.reason) {
      case "InvalidRequest":
        return retry(
          MaintenanceTexts.createRequest,
          ErrorCodes.createHttpRequest,
          "failed to create HTTP request",
          error.message,
        );
      case "Transport":
      case "Timeout":
        return retry(
          MaintenanceTexts.unreachable,
          ErrorCodes.etcdUnreachable,
          "failed to reach etcd",
          error.message,
        );
      case "Etcd":
        return (isTransientAnswer(error) ? retry : failed)(
          step.description,
          step.code,
          step.message,
          error.message,
        );
      case "Malformed":
        return failed(step.description, step.code, step.message, error.message);
    }
  };

const statusStep: Step = {
  description: MaintenanceTexts.status,
  code: ErrorCodes.etcdStatus,
  message: "failed to read etcd status",
};

const status = (endpoint: EtcdEndpoint) =>
  EtcdGateway.use((etcd) => etcd.status(endpoint)).pipe(Effect.mapError(callFailure(statusStep)));

/** Compacts to the current revision of the etcd behind `client`. */
const compact = (
  client: EtcdEndpoint,
  physical: boolean,
): Effect.Effect<CompactionReport, StepFailure, EtcdGateway> =>
  Effect.gen(function* () {
    const gateway = yield* EtcdGateway;
    const before = yield* status(client);
    const revision = yield* gateway.currentRevision(client).pipe(Effect.mapError(callFailure(statusStep)));
    const step: Step = {
      description: MaintenanceTexts.compaction,
      code: ErrorCodes.compaction,
      message: `failed to compact etcd to revision ${revision}`,
    };
    const alreadyCompacted = yield* gateway.compact(client, revision, physical).pipe(
      Effect.as(false),
      Effect.catchIf(isCompactedError, () => Effect.succeed(true)),
      Effect.mapError(callFailure(step)),
    );
    const after = yield* status(client);
    return {
      revision,
      physical,
      alreadyCompacted,
      dbSize: after.dbSize,
      dbSizeInUseBefore: before.dbSizeInUse,
      dbSizeInUseAfter: after.dbSizeInUse,
    };
  }).pipe(Effect.withSpan("OnDemandMaintenance.compact"));

/** Defragments every voting member of the cluster behind `client`, one after the other. */
const defragment = (
  client: EtcdEndpoint,
  etcd: Etcd,
): Effect.Effect<DefragmentationReport, StepFailure, EtcdGateway> =>
  Effect.gen(function* () {
    const gateway = yield* EtcdGateway;
    const memberListStep: Step = {
      description: MaintenanceTexts.memberList,
      code: ErrorCodes.memberList,
      message: "failed to list etcd members",
    };
    const members = yield* gateway.memberList(client).pipe(Effect.mapError(callFailure(memberListStep)));
    const plan = defragmentPlan(members, client, etcd);
    if (Result.isFailure(plan)) {
      // A member that has not started (or a cluster of learners) is a passing state: retry. A member
      // that advertises only URLs that are not the Etcd's own is never called.
      return yield* (plan.failure.verdict === "retry" ? retry : failed)(
        MaintenanceTexts.memberList,
        ErrorCodes.memberList,
        memberListStep.message,
        plan.failure.reason,
      );
    }
    const defragmented: MemberDefragmentation[] = [];
    for (const target of plan.success.targets) {
      const step: Step = {
        description: MaintenanceTexts.defragmentation,
        code: ErrorCodes.defragmentation,
        message: `failed to defragment etcd ${targetLabel(target)}`,
      };
      const dbSizeBefore = (yield* status(target.endpoint)).dbSize;
      yield* gateway.defragment(target.endpoint).pipe(Effect.mapError(callFailure(step)));
      const dbSizeAfter = (yield* status(target.endpoint)).dbSize;
      defragmented.push({ member: memberName(target.member), dbSizeBefore, dbSizeAfter });
    }
    return { members: defragmented, learnersSkipped: plan.success.learnersSkipped };
  }).pipe(Effect.withSpan("OnDemandMaintenance.defragment"));

/** Compaction (when planned) first, so that defragmentation reclaims the space it freed. */
export const runMaintenance = (
  client: EtcdEndpoint,
  plan: MaintenancePlan,
  etcd: Etcd,
): Effect.Effect<MaintenanceReport, StepFailure, EtcdGateway> =>
  Effect.gen(function* () {
    const compaction =
      plan.compaction === undefined ? undefined : yield* compact(client, plan.compaction.physical);
    const defragmentation = plan.defragmentation ? yield* defragment(client, etcd) : undefined;
    return {
      ...(compaction === undefined ? {} : { compaction }),
      ...(defragmentation === undefined ? {} : { defragmentation }),
    };
  });
