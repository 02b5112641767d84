/**
 * `spec.config.onDemandSnapshot`: etcd-druid's own task type, a full or delta snapshot taken by the
 * etcd-backup-restore sidecar (docs/contract.md §1, §1.1). Its CRD definition is druid's, unchanged.
 */
import * as Schema from "effect/Schema";
import { boundedInt32, int32WithDefault } from "../../../advanced.ts";
import type { Assignable } from "../assignable.ts";

export const OnDemandSnapshotMember = "onDemandSnapshot";

export const SnapshotTypes = ["full", "delta"] as const;
export type SnapshotType = (typeof SnapshotTypes)[number];

/** Defaults and minimums from druid's CRD (V9, V10, §1.2). */
export const OnDemandSnapshotLimits = {
  timeoutSecondsDelta: { default: 60, minimum: 10 },
  timeoutSecondsFull: { default: 900, minimum: 120 },
} as const;

/** Message of druid's CEL rule V8, reused verbatim. */
export const IsFinalOnlyForFullMessage = "isFinal must be false (or omitted) when type is 'delta'";

const fields = {
  type: Schema.Literals(SnapshotTypes),
  isFinal: Schema.optionalKey(Schema.Boolean),
  timeoutSecondsDelta: int32WithDefault(OnDemandSnapshotLimits.timeoutSecondsDelta),
  timeoutSecondsFull: int32WithDefault(OnDemandSnapshotLimits.timeoutSecondsFull),
};

/** The member's body as it appears under `spec.config.onDemandSnapshot`. */
export const OnDemandSnapshotBody = Schema.Struct(fields).check(
  Schema.makeFilter((body) =>
    body.type === "delta" && body.isFinal === true
      ? { path: ["isFinal"], issue: IsFinalOnlyForFullMessage }
      : undefined,
  ),
);

/** The decoded config: the body with defaults applied, tagged with `kind`. */
export interface OnDemandSnapshotConfig {
  readonly kind: typeof OnDemandSnapshotMember;
  readonly type: SnapshotType;
  /** Absent means false; only ever true for `type: full`. */
  readonly isFinal?: boolean;
  readonly timeoutSecondsDelta: number;
  readonly timeoutSecondsFull: number;
}

export const OnDemandSnapshotConfigSchema = Schema.Struct({
  kind: Schema.Literal(OnDemandSnapshotMember),
  type: fields.type,
  isFinal: fields.isFinal,
  timeoutSecondsDelta: boundedInt32(OnDemandSnapshotLimits.timeoutSecondsDelta),
  timeoutSecondsFull: boundedInt32(OnDemandSnapshotLimits.timeoutSecondsFull),
});

export type OnDemandSnapshotConfigMatchesSchema = [
  Assignable<typeof OnDemandSnapshotConfigSchema.Type, OnDemandSnapshotConfig>,
  Assignable<OnDemandSnapshotConfig, typeof OnDemandSnapshotConfigSchema.Type>,
];

/** The client timeout of the snapshot call for the configured type (docs/contract.md §9). */
export const snapshotTimeoutSeconds = (config: OnDemandSnapshotConfig): number =>
  config.type === "full" ? config.timeoutSecondsFull : config.timeoutSecondsDelta;
