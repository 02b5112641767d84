/**
 * `spec.config.onDemandSnapshotCompaction`: opstask's own task type (DEP-05 "on-demand snapshot
 * compaction"). It runs `etcdbrctl compact` in a Kubernetes Job: the Job restores the latest full
 * snapshot plus its delta snapshots into a temporary etcd and uploads the result as a new full
 * snapshot, so later restorations replay fewer deltas. Cleanup deletes the Job.
 */
import * as Schema from "effect/Schema";
import { boundedInt32, int32WithDefault } from "../../../advanced.ts";
import type { Assignable } from "../assignable.ts";

export const OnDemandSnapshotCompactionMember = "onDemandSnapshotCompaction";

export const OnDemandSnapshotCompactionLimits = {
  timeoutSeconds: { default: 1800, minimum: 60 },
} as const;

/** `minLength` of `image`: an empty image name is never what the user meant. */
export const ImageMinLength = 1;

const fields = {
  image: Schema.optionalKey(
    Schema.String.check(Schema.isMinLength(ImageMinLength)).annotate({
      description:
        "Image is the etcd-backup-restore image that the compaction Job runs.\n" +
        "Defaults to the image configured for the controller. Any other image must be one the controller\n" +
        "allows (--compaction-allowed-images); a task naming another image is rejected.",
    }),
  ),
  timeoutSeconds: int32WithDefault(OnDemandSnapshotCompactionLimits.timeoutSeconds, {
    description:
      "TimeoutSeconds is the maximum duration of the compaction Job (its activeDeadlineSeconds).\n" +
      `Defaults to ${OnDemandSnapshotCompactionLimits.timeoutSeconds.default} seconds (30 minutes).`,
  }),
};

/**
 * The member's body as it appears under `spec.config.onDemandSnapshotCompaction`; opstask's CRD
 * declares this member from it (`scripts/gen-crd.ts`).
 */
export const OnDemandSnapshotCompactionBody = Schema.Struct(fields).annotate({
  description:
    "OnDemandSnapshotCompaction defines the configuration for an on-demand snapshot compaction task.\n" +
    "It runs `etcdbrctl compact` in a Kubernetes Job, which restores the latest full snapshot and its delta\n" +
    "snapshots into a temporary etcd and uploads the result as a new full snapshot.",
});

/** The decoded config. */
export interface OnDemandSnapshotCompactionConfig {
  readonly kind: typeof OnDemandSnapshotCompactionMember;
  /**
   * The etcd-backup-restore image the Job runs; absent means the controller's configured default. The
   * handler Rejects an image the controller does not allow (src/etcd/on-demand-snapshot-compaction/image-policy.ts).
   */
  readonly image?: string;
  /** The Job's `activeDeadlineSeconds`. */
  readonly timeoutSeconds: number;
}

export const OnDemandSnapshotCompactionConfigSchema = Schema.Struct({
  kind: Schema.Literal(OnDemandSnapshotCompactionMember),
  image: fields.image,
  timeoutSeconds: boundedInt32(OnDemandSnapshotCompactionLimits.timeoutSeconds),
});

export type OnDemandSnapshotCompactionConfigMatchesSchema = [
  Assignable<typeof OnDemandSnapshotCompactionConfigSchema.Type, OnDemandSnapshotCompactionConfig>,
  Assignable<OnDemandSnapshotCompactionConfig, typeof OnDemandSnapshotCompactionConfigSchema.Type>,
];
