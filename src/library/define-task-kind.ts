/**
 * `defineTaskKind`: an operator's own task resource as a `TaskKind`, from its names, an Effect Schema
 * of the object (or a decode function) and four accessors. The lifecycle then runs it exactly as it
 * runs EtcdOpsTask (src/etcd/api/etcdopstask-kind.ts is the hand-written model of what this builds).
 *
 * Decoding never throws. An object that does not decode still yields its metadata and status when
 * those decode, so the lifecycle can Reject it with ERR_INVALID_TASK naming the fields
 * (`spec.config.checksum.url: required field is missing`) and delete it after `defaultTtlSeconds`.
 */

import * as Result from "effect/Result";
import * as Schema from "effect/Schema";
import * as SchemaParser from "effect/SchemaParser";
import { formatDecodeError } from "../api/decode-error.ts";
import { ObjectMeta } from "../api/meta.ts";
import { readMetadataAndStatusPlainly } from "../api/plain-read.ts";
import type { PolicyRule } from "../api/policy-rule.ts";
import type { TaskStatus } from "../api/status.ts";
import { TaskStatusSchema } from "../api/status-schema.ts";
import type { AdmissionActivity, ConditionTypes, PhaseOutcome } from "../machine/types.ts";
import type {
  CachedMetadata,
  Decoded,
  TaskDecodeFailure,
  TaskKind,
  TaskMeta,
  UndecodedFacts,
} from "../reconcile/task-kind.ts";
import { configMember } from "./config-union.ts";
import {
  checkMaxResultBytes,
  DefaultMaxResultBytes,
  type SucceededOutcome,
  succeededWith,
  succeededWithoutResult,
} from "./task-result.ts";

/** Where the decoded task comes from: a schema (recommended) or a hand-written decode. */
export type TaskSource<Task, Encoded = unknown> =
  | {
      /**
       * Decodes a stored object to `Task`; `ObjectMeta` and `TaskStatusSchema` fit `metadata` and
       * `status`. Its encoded side types the manifests `simulate`'s `create` takes.
       */
      readonly schema: Schema.ConstraintCodec<Task, Encoded, never, unknown>;
      readonly decode?: never;
    }
  | {
      /** Must never throw; build its failures with `decodeFailure` so deletable tasks stay deletable. */
      readonly decode: (object: unknown) => Decoded<Task>;
      readonly schema?: never;
    };

export interface TaskKindAccessors<Task> {
  /** API group, e.g. `examples.opstask.dev`. */
  readonly group: string;
  /** e.g. `v1alpha1` */
  readonly version: string;
  /** e.g. `BackupVerification` */
  readonly kind: string;
  /** e.g. `backupverifications` */
  readonly plural: string;
  /** Our finalizer on these objects (`<group>/<something>`); other finalizers are never touched. */
  readonly finalizer: string;
  /**
   * Words for descriptions and error causes: `group` is what an admission group is (druid: `etcd`),
   * as in "BackupVerification for the same backup is already in progress". Default: the kind, and
   * "admission group".
   */
  readonly vocabulary?: { readonly kind?: string; readonly group?: string };
  /** The TTL of a task whose spec does not decode (use the CRD's default); default 3600. */
  readonly defaultTtlSeconds?: number;
  /** Seconds a finished task is kept before it is deleted. */
  readonly ttlSeconds: (task: Task) => number;
  /**
   * Tasks of one admission group in one namespace are admitted one at a time, oldest first; a later
   * one is Rejected (`ERR_DUPLICATE_TASK`) or queued, per the duplicate policy. Absent: never conflicts.
   */
  readonly admissionGroup?: (task: Task) => string | undefined;
  /**
   * Optional, with `admissionGroup`: a task that is admitted next in its group under either duplicate
   * policy, for tasks a system creates and then waits for (etcd-druid's presync snapshots): before the
   * Pending tasks that are not expedited, beside InProgress ones that only wait (`admissionActivity`),
   * after those that work, never Rejected as a duplicate; Rejected at once with ERR_PEER_TASK_EXCLUSIVE
   * while a peer is `exclusive`. Decide it from what the task author cannot choose freely, or say
   * what it lets an author do.
   */
  readonly expedited?: (task: Task) => boolean;
  /**
   * Optional: what an InProgress task does to its group now, as expedited peers see it: `waiting`
   * (nothing yet, e.g. for a confirmation), `working` (the default) or `exclusive` (it changes what the
   * group stands for). Read only from what the cache keeps (`cachedMetadata`).
   */
  readonly admissionActivity?: (task: Task) => AdmissionActivity;
  /** The config member that selects the handler (`configMember(task.spec.config)`). */
  readonly member: (task: Task) => string;
  readonly status: (task: Task) => TaskStatus | undefined;
  /**
   * Optional, for kinds with many finished tasks: the TTL a stored object's spec asks for, read
   * without decoding the task; it must equal `ttlSeconds(task)` whenever the object decodes (decode the
   * one field with the same schema). With it, a finished task costs no decode when a controller takes
   * over (`metadata` and `status` are read with `ObjectMeta` and `TaskStatusSchema`).
   */
  readonly readTtlSeconds?: (object: unknown) => number | undefined;
  /**
   * The labels and annotations of a task that its schema and handlers read. The controller's cache
   * keeps no other (what a task author writes there must not cost the controller memory), so a
   * handler that reads a label must name it here.
   */
  readonly cachedMetadata?: CachedMetadata;
  /**
   * What the handlers need from the API beyond the task resource (the controller's own needs — the
   * tasks, their status, Events, the Lease — are known): `opstask deploy-artifacts` adds these rules
   * to the controller's ClusterRole, e.g. `{ apiGroups: [""], resources: ["configmaps"], verbs:
   * ["get"], reason: "context.objects.get reads the task's ConfigMap" }`.
   */
  readonly rbacRules?: ReadonlyArray<PolicyRule>;
}

/** What a finished task of the kind says in its status beyond druid's fields. */
export interface TaskResultDefinition<Result> {
  /**
   * The schema of `status.result`: what Execute returns with its success, through the kind's
   * `succeeded({ description, result })`. The CRD declares it (so the apiserver keeps it); absent, the
   * kind has no result.
   */
  readonly result?: Schema.Codec<Result, unknown>;
  /**
   * The bound of `status.result` in bytes of JSON (default 8192, at most 16384: a finished task keeps
   * its result and must still fit the controller's `maxTaskBytes`).
   */
  readonly maxResultBytes?: number;
  /**
   * The standard conditions written with the final state (type, status, observedGeneration,
   * lastTransitionTime, reason, message), for `kubectl wait --for=condition=Succeeded`: default
   * `Succeeded` and `Failed`; rename them, or `false` for none.
   */
  readonly conditions?: false | { readonly succeeded?: string; readonly failed?: string };
}

export type TaskKindDefinition<Task, Encoded = unknown, Result = never> = TaskKindAccessors<Task> &
  TaskSource<Task, Encoded> &
  TaskResultDefinition<Result>;

/** A kind from `defineTaskKind`: a `TaskKind` with its typed success constructor. */
export interface LibraryTaskKind<Task, Spec = unknown, Result = never> extends TaskKind<Task, Spec> {
  /**
   * Execute's success, with the kind's result when it declares one (typed by its schema): the
   * description becomes `status.lastOperation.description`, the result `status.result`. A result that
   * does not encode, or is larger than `maxResultBytes`, fails the task instead (ERR_INVALID_RESULT,
   * ERR_RESULT_TOO_LARGE).
   */
  readonly succeeded: (outcome: SucceededOutcome<Result>) => PhaseOutcome;
}

/** A condition type as Kubernetes allows one (a qualified name, e.g. `Succeeded` or `example.dev/Done`). */
const conditionType =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/** The kind's condition types; a RangeError naming the field for a name Kubernetes would refuse. */
const conditionTypesOf = (
  conditions: TaskResultDefinition<unknown>["conditions"],
): ConditionTypes | undefined => {
  if (conditions === false) return undefined;
  const types = { succeeded: conditions?.succeeded ?? "Succeeded", failed: conditions?.failed ?? "Failed" };
  for (const [field, name] of Object.entries(types))
    if (!conditionType.test(name) || name.length > 316)
      throw new RangeError(
        `conditions.${field} must be a condition type such as "Succeeded" or "example.dev/Done", got ${JSON.stringify(name)}`,
      );
  if (types.succeeded === types.failed)
    throw new RangeError(
      `conditions.succeeded and conditions.failed must differ, both are "${types.succeeded}"`,
    );
  return types;
};

/** The `spec` of an object's encoded form (what a manifest writes), or `unknown` when it has none. */
export type SpecOf<Encoded> = Encoded extends { readonly spec: infer Spec } ? Spec : unknown;

const parseOptions = { errors: "all", reportInput: true } as const;
const decodeMetadata = SchemaParser.decodeUnknownResult(Schema.Struct({ metadata: ObjectMeta }));
const decodeStatus = SchemaParser.decodeUnknownResult(Schema.Struct({ status: TaskStatusSchema }));
const decodeMetadataAndStatus = SchemaParser.decodeUnknownResult(
  Schema.Struct({ metadata: ObjectMeta, status: Schema.optionalKey(TaskStatusSchema) }),
);

/**
 * `UndecodedFacts` from the framework's own metadata and status schemas and the kind's TTL reader.
 * The plain shape is read by hand first (api/plain-read.ts: a takeover reads every settled task this
 * way, and the schema decode is an order of magnitude slower jitless); anything else is decoded.
 */
const undecodedFactsWith =
  (readTtlSeconds: (object: unknown) => number | undefined) =>
  (object: unknown): UndecodedFacts | undefined => {
    const ttlSeconds = readTtlSeconds(object);
    if (ttlSeconds === undefined) return undefined;
    const plain = readMetadataAndStatusPlainly(object);
    if (plain !== undefined) return { metadata: plain.metadata, status: plain.status ?? {}, ttlSeconds };
    const read = decodeMetadataAndStatus(object);
    if (Result.isFailure(read)) return undefined;
    return { metadata: read.success.metadata, status: read.success.status ?? {}, ttlSeconds };
  };

/**
 * A decode failure with what can still be read: the metadata (so the task can be released and
 * deleted) and the status (so a task that was running is not reported as new).
 */
export const decodeFailure = (object: unknown, errors: ReadonlyArray<string>): TaskDecodeFailure => {
  const meta = decodeMetadata(object);
  const status = decodeStatus(object);
  return {
    errors,
    ...(Result.isSuccess(meta) ? { metadata: meta.success.metadata } : {}),
    ...(Result.isSuccess(status) ? { status: status.success.status } : {}),
  };
};

/** Decodes with `schema`, reporting every problem as `<path>: <what is expected>`. */
const schemaDecoder = <Task>(
  schema: Schema.ConstraintDecoder<Task>,
): ((object: unknown) => Decoded<Task>) => {
  const decode = SchemaParser.decodeUnknownResult(schema, parseOptions);
  return (object) => {
    const decoded = decode(object);
    return Result.isSuccess(decoded)
      ? { ok: true, task: decoded.success }
      : { ok: false, failure: decodeFailure(object, formatDecodeError(decoded.failure)) };
  };
};

/** The full form: the kind from its object schema (or decode) and its accessors. */
const defineFullTaskKind = <Task extends { readonly metadata: TaskMeta }, Encoded = unknown, Result = never>(
  definition: TaskKindDefinition<Task, Encoded, Result>,
): LibraryTaskKind<Task, SpecOf<Encoded>, Result> => {
  const { admissionGroup, admissionActivity, expedited, member, status, ttlSeconds } = definition;
  const conditions = conditionTypesOf(definition.conditions);
  const maxResultBytes = checkMaxResultBytes(definition.maxResultBytes ?? DefaultMaxResultBytes);
  return {
    succeeded:
      definition.result === undefined
        ? succeededWithoutResult
        : succeededWith(definition.result, maxResultBytes),
    ...(conditions === undefined ? {} : { conditions }),
    ...(definition.result === undefined ? {} : { resultSchema: definition.result }),
    resource: {
      group: definition.group,
      version: definition.version,
      kind: definition.kind,
      plural: definition.plural,
    },
    finalizer: definition.finalizer,
    vocabulary: {
      kind: definition.vocabulary?.kind ?? definition.kind,
      group: definition.vocabulary?.group ?? "admission group",
    },
    defaultTtlSeconds: definition.defaultTtlSeconds ?? 3600,
    ...(definition.cachedMetadata === undefined ? {} : { cachedMetadata: definition.cachedMetadata }),
    ...(definition.rbacRules === undefined ? {} : { rbacRules: definition.rbacRules }),
    decode: definition.schema === undefined ? definition.decode : schemaDecoder(definition.schema),
    ...(definition.readTtlSeconds === undefined
      ? {}
      : { undecodedFacts: undecodedFactsWith(definition.readTtlSeconds) }),
    facts: (task) => {
      const group = admissionGroup?.(task);
      const activity = admissionActivity?.(task) ?? "working";
      return {
        metadata: task.metadata,
        ttlSeconds: ttlSeconds(task),
        ...(group === undefined ? {} : { group }),
        ...(group !== undefined && expedited?.(task) === true ? { expedited: true } : {}),
        ...(activity === "working" ? {} : { activity }),
        member: member(task),
        status: status(task) ?? {},
      };
    },
  };
};

/** What the short form needs of a spec: a TTL and a `configUnion` config. */
export interface TaskSpecShape {
  readonly ttlSecondsAfterFinished: number;
  readonly config: { readonly kind: string };
}

/** A spec schema the short form takes (`Schema.Struct({ ttlSecondsAfterFinished, config })`). */
export type TaskSpecSchema = Schema.Top & Schema.ConstraintCodec<TaskSpecShape, unknown, never, unknown>;

/** The object schema the short form derives: the spec with opstask's metadata and status. */
const taskObjectSchema = <Spec extends TaskSpecSchema>(spec: Spec) =>
  Schema.Struct({ metadata: ObjectMeta, spec, status: Schema.optionalKey(TaskStatusSchema) });

/** The task of a short-form kind: the decoded spec with opstask's metadata and status. */
export interface SpecTask<Spec> {
  readonly metadata: ObjectMeta;
  readonly spec: Spec;
  readonly status?: TaskStatus;
}

/** The derived object schema of a spec schema; its `Type` is the task handlers get. */
export type TaskObjectSchema<Spec extends TaskSpecSchema> = ReturnType<typeof taskObjectSchema<Spec>>;

/**
 * The short form: names, the spec schema and what is the author's own; the object schema, `plural`,
 * `finalizer` and the accessors (TTL from `spec.ttlSecondsAfterFinished`, member from `spec.config`,
 * the status) are derived.
 */
export interface SpecTaskKindDefinition<Spec extends TaskSpecSchema, Result = never>
  extends TaskResultDefinition<Result>,
    Pick<
      TaskKindAccessors<SpecTask<Spec["Type"]>>,
      | "group"
      | "version"
      | "kind"
      | "vocabulary"
      | "defaultTtlSeconds"
      | "admissionGroup"
      | "expedited"
      | "admissionActivity"
      | "readTtlSeconds"
      | "cachedMetadata"
      | "rbacRules"
    > {
  /** The spec's schema: `config` a `configUnion`, `ttlSecondsAfterFinished` a number. */
  readonly spec: Spec;
  /** Default: the kind in lower case plus `s` (`Greeting` → `greetings`). */
  readonly plural?: string;
  /** Default: `<group>/<kind in kebab case>` (`BackupPolicy` → `<group>/backup-policy`). */
  readonly finalizer?: string;
  /** The CRD's short names (`kubectl get greet`), which the task CLI's `--kind` accepts too. */
  readonly shortNames?: ReadonlyArray<string>;
  readonly schema?: never;
  readonly decode?: never;
}

/** A kind from the short form: also its spec and object schemas and short names, for `taskCrd(kind)`. */
export interface SpecTaskKind<Spec extends TaskSpecSchema, Result = never>
  extends LibraryTaskKind<SpecTask<Spec["Type"]>, Spec["Encoded"], Result> {
  readonly specSchema: Spec;
  /** The object schema: `typeof kind.schema.Type` is the task type. */
  readonly schema: TaskObjectSchema<Spec>;
  readonly shortNames?: ReadonlyArray<string>;
}

/** `BackupPolicy` → `backup-policy`. */
const kebabCase = (name: string): string =>
  name
    .replace(/([a-z0-9])([A-Z])/g, "$1-$2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1-$2")
    .toLowerCase();

const defineSpecTaskKind = (
  definition: SpecTaskKindDefinition<TaskSpecSchema, unknown>,
): SpecTaskKind<TaskSpecSchema, unknown> => {
  const { spec, plural, finalizer, shortNames, ...rest } = definition;
  const schema = taskObjectSchema(spec);
  const kind = defineFullTaskKind<SpecTask<TaskSpecShape>, unknown, unknown>({
    ...rest,
    plural: plural ?? `${definition.kind.toLowerCase()}s`,
    finalizer: finalizer ?? `${definition.group}/${kebabCase(definition.kind)}`,
    schema,
    ttlSeconds: (task) => task.spec.ttlSecondsAfterFinished,
    member: (task) => configMember(task.spec.config),
    status: (task) => task.status,
  });
  return { ...kind, specSchema: spec, schema, ...(shortNames === undefined ? {} : { shortNames }) };
};

/**
 * The kind's `TaskKind`, plus its `succeeded`: from the spec schema alone (the short form), or from
 * the object schema and accessors (the full form). A bad `conditions` name or `maxResultBytes` is a
 * RangeError naming the field.
 */
export function defineTaskKind<Spec extends TaskSpecSchema, Result = never>(
  definition: SpecTaskKindDefinition<Spec, Result>,
): SpecTaskKind<Spec, Result>;
export function defineTaskKind<
  Task extends { readonly metadata: TaskMeta },
  Encoded = unknown,
  Result = never,
>(definition: TaskKindDefinition<Task, Encoded, Result>): LibraryTaskKind<Task, SpecOf<Encoded>, Result>;
export function defineTaskKind(
  definition:
    | SpecTaskKindDefinition<TaskSpecSchema, unknown>
    | TaskKindDefinition<TaskMetaOnly, unknown, unknown>,
): SpecTaskKind<TaskSpecSchema, unknown> | LibraryTaskKind<TaskMetaOnly, unknown, unknown> {
  return "spec" in definition && definition.spec !== undefined
    ? defineSpecTaskKind(definition)
    : defineFullTaskKind(definition as TaskKindDefinition<TaskMetaOnly, unknown, unknown>);
}

type TaskMetaOnly = { readonly metadata: TaskMeta };
