/**
 * `spec.config.onDemandMaintenance`: opstask's own task type (DEP-05 "on-demand maintenance"). It
 * compacts the etcd key space and/or defragments the backend database of every member; with both,
 * compaction runs first, so that defragmentation reclaims the space compaction freed.
 */
import * as Schema from "effect/Schema";
import type { OpenApiSchema } from "../../../api/crd/openapi.ts";
import { type Assignable, boundedInt32, EmptyObject, int32WithDefault } from "../../../api/schema-helpers.ts";

export const OnDemandMaintenanceMember = "onDemandMaintenance";

export const OnDemandMaintenanceLimits = {
  timeoutSeconds: { default: 300, minimum: 10 },
} as const;

/** The CEL rule of the CRD and the matching schema check share this rule and message. */
export const MaintenanceOperationRequired = {
  rule: "has(self.compaction) || has(self.defragmentation)",
  message: "at least one of compaction or defragmentation must be set",
} as const;

const CompactionSchema = Schema.Struct({ physical: Schema.optionalKey(Schema.Boolean) });

const fields = {
  compaction: Schema.optionalKey(CompactionSchema),
  defragmentation: Schema.optionalKey(EmptyObject),
  timeoutSeconds: int32WithDefault(OnDemandMaintenanceLimits.timeoutSeconds),
};

/** The member's body as it appears under `spec.config.onDemandMaintenance`. */
export const OnDemandMaintenanceBody = Schema.Struct(fields).check(
  Schema.makeFilter((body) =>
    body.compaction !== undefined || body.defragmentation !== undefined
      ? undefined
      : MaintenanceOperationRequired.message,
  ),
);

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

/** The member's definition in opstask's CRD (`scripts/gen-crd.ts` adds it to druid's). */
export const onDemandMaintenanceOpenApi: OpenApiSchema = {
  description:
    "OnDemandMaintenance defines the configuration for an on-demand maintenance task.\n" +
    "It compacts the etcd key space and/or defragments the backend database of every etcd member.\n" +
    "When both are set, compaction runs first.",
  properties: {
    compaction: {
      description: "Compaction compacts the etcd key space up to the current revision.",
      properties: {
        physical: {
          description:
            "Physical makes the compaction wait until it has been physically applied to the backend database.\n" +
            "Defaults to false.",
          type: "boolean",
        },
      },
      type: "object",
    },
    defragmentation: {
      description:
        "Defragmentation defragments the backend database of every etcd member, one member at a time.",
      type: "object",
    },
    timeoutSeconds: {
      default: OnDemandMaintenanceLimits.timeoutSeconds.default,
      description:
        "TimeoutSeconds is the timeout of each call made to etcd: the compaction, and the defragmentation of each member.\n" +
        `Defaults to ${OnDemandMaintenanceLimits.timeoutSeconds.default} seconds.`,
      format: "int32",
      minimum: OnDemandMaintenanceLimits.timeoutSeconds.minimum,
      type: "integer",
    },
  },
  type: "object",
  "x-kubernetes-validations": [
    { message: MaintenanceOperationRequired.message, rule: MaintenanceOperationRequired.rule },
  ],
};
