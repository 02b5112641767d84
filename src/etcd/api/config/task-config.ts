/**
 * `spec.config`: a union with exactly one member (CRD `minProperties: 1`, `maxProperties: 1`).
 *
 * Decoding turns the single member into a value tagged with `kind`. A member this build does not know
 * decodes too, as `{ kind: "unsupported", member }`: the controller must be able to Reject such a
 * task (`ERR_UNSUPPORTED_TASK`) and delete it, so an unknown task type must never make decoding fail
 * (docs/contract.md §13 D7). A known member with an invalid body fails with errors under its path.
 */
import * as Effect from "effect/Effect";
import * as Schema from "effect/Schema";
import type * as SchemaAST from "effect/SchemaAST";
import * as SchemaIssue from "effect/SchemaIssue";
import * as SchemaParser from "effect/SchemaParser";
import * as SchemaTransformation from "effect/SchemaTransformation";
import type { Assignable } from "../../../api/schema-helpers.ts";
import {
  OnDemandMaintenanceBody,
  type OnDemandMaintenanceConfig,
  OnDemandMaintenanceConfigSchema,
  OnDemandMaintenanceMember,
} from "./on-demand-maintenance.ts";
import {
  OnDemandSnapshotBody,
  type OnDemandSnapshotConfig,
  OnDemandSnapshotConfigSchema,
  OnDemandSnapshotMember,
} from "./on-demand-snapshot.ts";
import {
  OnDemandSnapshotCompactionBody,
  type OnDemandSnapshotCompactionConfig,
  OnDemandSnapshotCompactionConfigSchema,
  OnDemandSnapshotCompactionMember,
} from "./on-demand-snapshot-compaction.ts";

/** A config member this build does not implement, kept as it was read so it can be reported and re-encoded. */
export interface UnsupportedTaskConfig {
  readonly kind: "unsupported";
  /** The member's name, e.g. `onDemandQuorumRecovery`. */
  readonly member: string;
  /** The member's body, undecoded. */
  readonly value: unknown;
}

export const UnsupportedTaskConfigSchema = Schema.Struct({
  kind: Schema.Literal("unsupported"),
  member: Schema.String,
  value: Schema.Unknown,
});

export type KnownTaskConfig =
  | OnDemandSnapshotConfig
  | OnDemandMaintenanceConfig
  | OnDemandSnapshotCompactionConfig;
export type TaskConfig = KnownTaskConfig | UnsupportedTaskConfig;
export type ConfigKind = TaskConfig["kind"];
export type KnownConfigKind = KnownTaskConfig["kind"];

/** The member names this build implements, in the CRD's (alphabetical) order. */
export const KnownConfigKinds: ReadonlyArray<KnownConfigKind> = [
  OnDemandMaintenanceMember,
  OnDemandSnapshotMember,
  OnDemandSnapshotCompactionMember,
];

export const isKnownConfigKind = (member: string): member is KnownConfigKind =>
  (KnownConfigKinds as ReadonlyArray<string>).includes(member);

export const isSupported = (config: TaskConfig): config is KnownTaskConfig => config.kind !== "unsupported";

/** The decoded `spec.config` (the `Type` side of `TaskConfigSchema`). */
export const TaskConfigTypeSchema = Schema.Union([
  OnDemandSnapshotConfigSchema,
  OnDemandMaintenanceConfigSchema,
  OnDemandSnapshotCompactionConfigSchema,
  UnsupportedTaskConfigSchema,
]);

const decodeSnapshot = SchemaParser.decodeUnknownEffect(OnDemandSnapshotBody);
const decodeMaintenance = SchemaParser.decodeUnknownEffect(OnDemandMaintenanceBody);
const decodeSnapshotCompaction = SchemaParser.decodeUnknownEffect(OnDemandSnapshotCompactionBody);
const encodeSnapshot = SchemaParser.encodeEffect(OnDemandSnapshotBody);
const encodeMaintenance = SchemaParser.encodeEffect(OnDemandMaintenanceBody);
const encodeSnapshotCompaction = SchemaParser.encodeEffect(OnDemandSnapshotCompactionBody);

type WireConfig = { readonly [member: string]: unknown };

const decodeMember = (
  member: KnownConfigKind,
  body: unknown,
  options: SchemaAST.ParseOptions,
): Effect.Effect<KnownTaskConfig, SchemaIssue.Issue> => {
  switch (member) {
    case OnDemandSnapshotMember:
      return Effect.map(decodeSnapshot(body, options), (decoded) => ({ kind: member, ...decoded }));
    case OnDemandMaintenanceMember:
      return Effect.map(decodeMaintenance(body, options), (decoded) => ({ kind: member, ...decoded }));
    case OnDemandSnapshotCompactionMember:
      return Effect.map(decodeSnapshotCompaction(body, options), (decoded) => ({ kind: member, ...decoded }));
  }
};

const encodeMember = (
  config: KnownTaskConfig,
  options: SchemaAST.ParseOptions,
): Effect.Effect<unknown, SchemaIssue.Issue> => {
  switch (config.kind) {
    case OnDemandSnapshotMember: {
      const { kind: _, ...body } = config;
      return encodeSnapshot(body, options);
    }
    case OnDemandMaintenanceMember: {
      const { kind: _, ...body } = config;
      return encodeMaintenance(body, options);
    }
    case OnDemandSnapshotCompactionMember: {
      const { kind: _, ...body } = config;
      return encodeSnapshotCompaction(body, options);
    }
  }
};

const memberList = `one of ${KnownConfigKinds.join(", ")}`;

const decodeConfig = (
  raw: WireConfig,
  options: SchemaAST.ParseOptions,
): Effect.Effect<TaskConfig, SchemaIssue.Issue> => {
  const members = Object.keys(raw);
  const [member] = members;
  if (member === undefined || members.length > 1) {
    const got = member === undefined ? "none" : members.join(", ");
    return Effect.fail(
      new SchemaIssue.InvalidValue(
        { message: `expected exactly one member (${memberList}), got ${got}` },
        raw,
        options,
      ),
    );
  }
  const body = raw[member];
  if (!isKnownConfigKind(member)) {
    return Effect.succeed({ kind: "unsupported", member, value: body });
  }
  return Effect.mapError(
    decodeMember(member, body, options),
    (issue) => new SchemaIssue.Pointer([member], issue),
  );
};

const encodeConfig = (
  config: TaskConfig,
  options: SchemaAST.ParseOptions,
): Effect.Effect<WireConfig, SchemaIssue.Issue> =>
  config.kind === "unsupported"
    ? Effect.succeed({ [config.member]: config.value })
    : encodeMember(config, options).pipe(
        Effect.map((body) => ({ [config.kind]: body })),
        Effect.mapError((issue) => new SchemaIssue.Pointer([config.kind], issue)),
      );

/** `spec.config`: wire form `{ <member>: <body> }` ⇄ decoded `TaskConfig`. */
export const TaskConfigSchema = Schema.Record(Schema.String, Schema.Unknown).pipe(
  Schema.decodeTo(
    TaskConfigTypeSchema,
    SchemaTransformation.transformEffect({ decode: decodeConfig, encode: encodeConfig }),
  ),
);

export type TaskConfigMatchesSchema = [
  Assignable<typeof TaskConfigSchema.Type, TaskConfig>,
  Assignable<TaskConfig, typeof TaskConfigSchema.Type>,
];
