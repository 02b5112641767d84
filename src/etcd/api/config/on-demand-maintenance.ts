/**
 * `spec.config.onDemandMaintenance`: opstask's own task type (DEP-05 "on-demand maintenance"). It
 * compacts the etcd key space and/or defragments the backend database of every member; with both,
 * compaction runs first, so that defragmentation reclaims the space compaction freed.
 */
import * as Schema from "effect/Schema";
import { boundedInt32, celRule, emptyObject, int32WithDefault } from "../../../advanced.ts";
import type { Assignable } from "../assignable.ts";

export const OnDemandMaintenanceMember = "onDemandMaintenance";

export const OnDemandMaintenanceLimits = {
  timeoutSeconds: { default: 300, minimum: 10 },
} as const;

/** The CEL rule of the CRD and the matching schema check share this rule and message. */
export const MaintenanceOperationRequired = {
  rule: "has(self.compaction) || has(self.defragmentation)",
  message: "at least one of compaction or defragmentation must be set",
} as const;

const CompactionSchema = Schema.Struct({
  physical: Schema.optionalKey(
    Schema.Boolean.annotate({
      description:
        "Physical makes the compaction wait until it has been physically applied to the backend database.\n" +
        "Defaults to false.",
    }),
  ),
}).annotate({ description: "Compaction compacts the etcd key space up to the current revision." });

const fields = {
  compaction: Schema.optionalKey(CompactionSchema),
  defragmentation: Schema.optionalKey(
    emptyObject({
      description:
        "Defragmentation defragments the backend database of every etcd member, one member at a time.",
    }),
  ),
  timeoutSeconds: int32WithDefault(OnDemandMaintenanceLimits.timeoutSeconds, {
    description:
      "TimeoutSeconds is the timeout of each call made to etcd: the compaction, and the defragmentation of each member.\n" +
      `Defaults to ${OnDemandMaintenanceLimits.timeoutSeconds.default} seconds.`,
  }),
};

/**
 * The member's body as it appears under `spec.config.onDemandMaintenance`; opstask's CRD declares
 * this member from it (`scripts/gen-crd.ts`).
 */
export const OnDemandMaintenanceBody = Schema.Struct(fields)
  .check(
    celRule(
      MaintenanceOperationRequired,
      (body: { readonly compaction?: unknown; readonly defragmentation?: unknown }) =>
        body.compaction !== undefined || body.defragmentation !== undefined,
    ),
  )
  .annotate({
    description:
      "OnDemandMaintenance defines the configuration for an on-demand maintenance task.\n" +
      "It compacts the etcd key space and/or defragments the backend database of every etcd member.\n" +
      "When both are set, compaction runs first.",
  });

export interface MaintenanceCompaction {
  /** Wait until the compaction is physically applied to the backend (etcd `--physical`). Absent means false. */
  readonly physical?: boolean;
}

/** The decoded config; at least one of `compaction` and `defragmentation` is present. */
export interface OnDemandMaintenanceConfig {
  readonly kind: typeof OnDemandMaintenanceMember;
  readonly compaction?: MaintenanceCompaction;
  // biome-ignore lint/complexity/noBannedTypes: the member is an empty marker object (`defragmentation: {}`)
  readonly defragmentation?: {};
  /** Timeout of each call made to etcd: the compaction, and the defragmentation of each member. */
  readonly timeoutSeconds: number;
}

export const OnDemandMaintenanceConfigSchema = Schema.Struct({
  kind: Schema.Literal(OnDemandMaintenanceMember),
  compaction: fields.compaction,
  defragmentation: Schema.optionalKey(Schema.Struct({})),
  timeoutSeconds: boundedInt32(OnDemandMaintenanceLimits.timeoutSeconds),
});

export type OnDemandMaintenanceConfigMatchesSchema = [
  Assignable<typeof OnDemandMaintenanceConfigSchema.Type, OnDemandMaintenanceConfig>,
  Assignable<OnDemandMaintenanceConfig, typeof OnDemandMaintenanceConfigSchema.Type>,
];
