/**
 * `spec.config`: a union with exactly one member (CRD `minProperties: 1`, `maxProperties: 1`), built
 * with the library's `configUnion`, as any operator's own task kind would be.
 *
 * Decoding turns the single member into a value tagged with `kind`. A member this build does not know
 * decodes too, as `{ kind: "unsupported", member }`: the controller must be able to Reject such a
 * task (`ERR_UNSUPPORTED_TASK`) and delete it, so an unknown task type must never make decoding fail
 * (docs/contract.md §13 D7). A known member with an invalid body fails with errors under its path.
 *
 * `taskConfigMembers` is the one list of members: the schema, the member names, the handler registry
 * (src/etcd/registry.ts, typed by it) and the CRD's added members (`addedConfigMembers`) all follow it.
 */

import type { UnsupportedConfig } from "../../../advanced.ts";
import { configUnion } from "../../../index.ts";
import type { Assignable } from "../assignable.ts";
import {
  OnDemandMaintenanceBody,
  type OnDemandMaintenanceConfig,
  OnDemandMaintenanceMember,
} from "./on-demand-maintenance.ts";
import {
  OnDemandSnapshotBody,
  type OnDemandSnapshotConfig,
  OnDemandSnapshotMember,
} from "./on-demand-snapshot.ts";
import {
  OnDemandSnapshotCompactionBody,
  type OnDemandSnapshotCompactionConfig,
  OnDemandSnapshotCompactionMember,
} from "./on-demand-snapshot-compaction.ts";
import {
  RecoverFromQuorumLossBody,
  type RecoverFromQuorumLossConfig,
  RecoverFromQuorumLossMember,
} from "./recover-from-quorum-loss.ts";

/** Every `spec.config` member this build implements, with the schema of its body. */
export const taskConfigMembers = {
  [OnDemandMaintenanceMember]: OnDemandMaintenanceBody,
  [OnDemandSnapshotMember]: OnDemandSnapshotBody,
  [OnDemandSnapshotCompactionMember]: OnDemandSnapshotCompactionBody,
  [RecoverFromQuorumLossMember]: RecoverFromQuorumLossBody,
} as const;

/** `spec.config`: wire form `{ <member>: <body> }` ⇄ decoded `TaskConfig`. */
export const TaskConfigSchema = configUnion(taskConfigMembers);

/** A config member this build does not implement, kept as it was read so it can be reported and re-encoded. */
export type UnsupportedTaskConfig = UnsupportedConfig;

export type KnownTaskConfig =
  | OnDemandSnapshotConfig
  | OnDemandMaintenanceConfig
  | OnDemandSnapshotCompactionConfig
  | RecoverFromQuorumLossConfig;
export type TaskConfig = KnownTaskConfig | UnsupportedTaskConfig;
export type ConfigKind = TaskConfig["kind"];
export type KnownConfigKind = keyof typeof taskConfigMembers;

/** The member names this build implements, in the CRD's (alphabetical) order. */
export const KnownConfigKinds = Object.keys(taskConfigMembers).sort() as ReadonlyArray<KnownConfigKind>;

export const isKnownConfigKind = (member: string): member is KnownConfigKind =>
  (KnownConfigKinds as ReadonlyArray<string>).includes(member);

export const isSupported = (config: TaskConfig): config is KnownTaskConfig => config.kind !== "unsupported";

/**
 * The members opstask adds to druid's CRD (druid's own `onDemandSnapshot` is in its CRD already), with
 * the schemas scripts/gen-crd.ts generates their CRD fragments from: a new member is in the CRD as soon
 * as it is in `taskConfigMembers`.
 */
export const addedConfigMembers = Object.entries(taskConfigMembers).filter(
  ([member]) => member !== OnDemandSnapshotMember,
);

export type TaskConfigMatchesSchema = [
  Assignable<typeof TaskConfigSchema.Type, TaskConfig>,
  Assignable<TaskConfig, typeof TaskConfigSchema.Type>,
];
