/**
 * The EtcdOpsTask object (docs/contract.md §1, §3, §1.1): `druid.gardener.cloud/v1alpha1`, kind
 * `EtcdOpsTask`. Decoding applies the CRD's defaults, so a task read from the apiserver, from a YAML
 * file or built in a test has the same shape, and turns `spec.config` into a `kind`-tagged value.
 */
import * as Effect from "effect/Effect";
import * as Result from "effect/Result";
import * as Schema from "effect/Schema";
import * as SchemaParser from "effect/SchemaParser";
import {
  DecodeError,
  formatDecodeError,
  int32WithDefault,
  ManifestMeta,
  MaxSubdomainLength,
  SubdomainRule,
} from "../../advanced.ts";
import type { TaskStatus } from "../../index.ts";
import { ObjectMeta, TaskStatusSchema } from "../../index.ts";
import { OwnerReferenceSchema } from "../objects.ts";
import type { Assignable } from "./assignable.ts";
import { type TaskConfig, TaskConfigSchema } from "./config/task-config.ts";

export const Group = "druid.gardener.cloud";
export const Version = "v1alpha1";
export const ApiVersion = `${Group}/${Version}` as const;
export const Kind = "EtcdOpsTask";
export const ListKind = "EtcdOpsTaskList";
export const Plural = "etcdopstasks";
export const Singular = "etcdopstask";
export const ShortName = "eot";
/** The finalizer the controller owns (docs/contract.md §2); other finalizers are never touched. */
export const Finalizer = "druid.gardener.cloud/etcd-ops-task";

/** Default and minimum of `spec.ttlSecondsAfterFinished` in the CRD (V11, §1.2). */
export const TtlLimits = { default: 3600, minimum: 1 } as const;

export interface EtcdOpsTaskSpec {
  /** The Etcd in the task's namespace; absent or empty gives a "not found" rejection (§8). */
  readonly etcdName?: string;
  /** Seconds a terminal task is kept before it is garbage-collected; 3600 when absent. */
  readonly ttlSecondsAfterFinished: number;
  readonly config: TaskConfig;
}

/** The task's metadata, with its owner references: etcd-druid's own tasks are owned by their Etcd. */
export const EtcdOpsTaskMeta = Schema.Struct({
  ...ObjectMeta.fields,
  ownerReferences: Schema.optionalKey(Schema.Array(OwnerReferenceSchema)),
});
export type EtcdOpsTaskMeta = typeof EtcdOpsTaskMeta.Type;

/** A task as the apiserver returns it. */
export interface EtcdOpsTask {
  readonly apiVersion: typeof ApiVersion;
  readonly kind: typeof Kind;
  readonly metadata: EtcdOpsTaskMeta;
  readonly spec: EtcdOpsTaskSpec;
  readonly status?: TaskStatus;
}

/** A task as a user writes it (no server-assigned metadata yet). */
export interface EtcdOpsTaskManifest extends Omit<EtcdOpsTask, "metadata"> {
  readonly metadata: ManifestMeta;
}

const withDefault = <const L extends string>(literal: L) =>
  Schema.Literal(literal).pipe(Schema.withDecodingDefaultKey(Effect.succeed(literal)));

export const EtcdOpsTaskSpecSchema = Schema.Struct({
  etcdName: Schema.optionalKey(Schema.String),
  ttlSecondsAfterFinished: int32WithDefault(TtlLimits),
  config: TaskConfigSchema,
});

/**
 * A manifest a user writes (`opstask task create`) is checked more strictly than a stored task:
 * `etcdName` must be empty or an object name. A stored task decodes whatever druid's CRD accepts
 * there, so that the controller can Reject it (the handler refuses a non-name before any request)
 * and delete it like any other.
 */
const ManifestSpecSchema = Schema.Struct({
  ...EtcdOpsTaskSpecSchema.fields,
  etcdName: Schema.optionalKey(
    Schema.String.check(
      Schema.isPattern(/^$|^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/, {
        expected: `an Etcd name (${SubdomainRule})`,
      }),
      Schema.isMaxLength(MaxSubdomainLength),
    ),
  ),
});

// Items of a list response may lack apiVersion/kind; what is there must be right.
const typeMeta = { apiVersion: withDefault(ApiVersion), kind: withDefault(Kind) };
const body = { spec: EtcdOpsTaskSpecSchema, status: Schema.optionalKey(TaskStatusSchema) };

export const EtcdOpsTaskSchema = Schema.Struct({ ...typeMeta, metadata: EtcdOpsTaskMeta, ...body });
export const EtcdOpsTaskManifestSchema = Schema.Struct({
  ...typeMeta,
  metadata: ManifestMeta,
  ...body,
  spec: ManifestSpecSchema,
});

export type EtcdOpsTaskMatchesSchema = [
  Assignable<typeof EtcdOpsTaskSchema.Type, EtcdOpsTask>,
  Assignable<EtcdOpsTask, typeof EtcdOpsTaskSchema.Type>,
  Assignable<typeof EtcdOpsTaskManifestSchema.Type, EtcdOpsTaskManifest>,
  Assignable<EtcdOpsTaskManifest, typeof EtcdOpsTaskManifestSchema.Type>,
];

const parseOptions = { errors: "all", reportInput: true } as const;
const decodeTaskResult = SchemaParser.decodeUnknownResult(EtcdOpsTaskSchema, parseOptions);
const decodeManifestResult = SchemaParser.decodeUnknownResult(EtcdOpsTaskManifestSchema, parseOptions);
const decodeMetaResult = SchemaParser.decodeUnknownResult(Schema.Struct({ metadata: ObjectMeta }));

/** Decodes a task read from the apiserver. Never throws. */
export const decodeEtcdOpsTask = (input: unknown): Result.Result<EtcdOpsTask, DecodeError> =>
  Result.mapError(decodeTaskResult(input), (issue) => {
    const meta = decodeMetaResult(input);
    return new DecodeError({
      resource: Kind,
      errors: formatDecodeError(issue),
      issue,
      metadata: Result.isSuccess(meta) ? meta.success.metadata : undefined,
    });
  });

/** Decodes a task manifest (YAML a user wrote, a test fixture). Never throws. */
export const decodeEtcdOpsTaskManifest = (input: unknown): Result.Result<EtcdOpsTaskManifest, DecodeError> =>
  Result.mapError(
    decodeManifestResult(input),
    (issue) =>
      new DecodeError({ resource: Kind, errors: formatDecodeError(issue), issue, metadata: undefined }),
  );

/** Encodes a decoded task back to its wire form (`spec.config` as `{ <member>: <body> }`). */
export const encodeEtcdOpsTask = SchemaParser.encodeResult(EtcdOpsTaskSchema);
