/**
 * A task as the commands show it, through its kind's decoder (src/cli/task/cli-kind.ts). Read
 * leniently: a task whose spec does not decode (written by hand, or for a newer CRD) is still listed
 * and described, with its decode errors, rather than hidden.
 */
import * as Result from "effect/Result";
import * as SchemaParser from "effect/SchemaParser";
import type { LastError, TaskStatus } from "../../api/status.ts";
import { TaskStatusSchema } from "../../api/status-schema.ts";
import type { KubeObject } from "../../kube/object.ts";
import { fromWireTime } from "../../machine/time.ts";
import type { CliKind } from "./cli-kind.ts";

export interface TaskView {
  readonly kind: CliKind;
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly resourceVersion: string;
  /** ms since the epoch. */
  readonly createdAt: number | undefined;
  readonly deletingSince: number | undefined;
  readonly finalizers: ReadonlyArray<string>;
  /** The admission group (EtcdOpsTask: the etcd's name); undefined when the task has none. */
  readonly group: string | undefined;
  /** The config member that selects the handler (`onDemandSnapshot`); "" when the spec does not decode. */
  readonly member: string;
  readonly ttlSeconds: number;
  /** What the task does, in a few words; undefined when the spec does not decode (see `invalid`). */
  readonly summary: string | undefined;
  /** Why the spec does not decode, one line per problem; empty when it does. */
  readonly invalid: ReadonlyArray<string>;
  readonly status: TaskStatus;
}

const decodeStatus = SchemaParser.decodeUnknownResult(TaskStatusSchema);

const get = (value: unknown, key: string): unknown =>
  typeof value === "object" && value !== null && key in value ? Reflect.get(value, key) : undefined;

const str = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);

export const viewOf = (kind: CliKind, object: KubeObject): TaskView => {
  const meta = object.metadata;
  const facts = kind.facts(object);
  const status = decodeStatus(get(object, "status") ?? {});
  return {
    kind,
    namespace: meta.namespace,
    name: meta.name,
    uid: meta.uid,
    resourceVersion: meta.resourceVersion,
    createdAt: fromWireTime(str(meta.creationTimestamp)),
    deletingSince: fromWireTime(meta.deletionTimestamp),
    finalizers: meta.finalizers ?? [],
    group: facts?.group,
    member: facts?.member ?? "",
    ttlSeconds: facts?.ttlSeconds ?? kind.defaultTtlSeconds,
    summary: kind.summary(object),
    invalid: facts?.invalid ?? [],
    status: facts?.status ?? (Result.isSuccess(status) ? status.success : {}),
  };
};

/** `Execution/InProgress`, or undefined before the first operation. */
export const phaseOf = (status: TaskStatus): string | undefined =>
  status.lastOperation === undefined
    ? undefined
    : `${status.lastOperation.type}/${status.lastOperation.state}`;

export const lastErrorOf = (status: TaskStatus): LastError | undefined => status.lastErrors?.at(-1);

export const isOwnFinalizer = (view: TaskView, finalizer: string): boolean =>
  finalizer === view.kind.finalizer;

/** A `lastErrors` entry taken apart: `[Operation: <type>, Code: <code>] message: <m>, cause: <c>`. */
export interface DecodedError {
  readonly code: string;
  readonly operation: string | undefined;
  readonly message: string;
  readonly cause: string | undefined;
  /** ms since the epoch. */
  readonly observedAt: number | undefined;
}

const errorPattern = /^\[Operation: ([^,\]]*), Code: ([^\]]*)\] message: ([\s\S]*?), cause: ([\s\S]*)$/;

export const decodeLastError = (error: LastError): DecodedError => {
  const match = errorPattern.exec(error.description);
  const observedAt = fromWireTime(error.observedAt);
  if (match === null)
    return {
      code: error.code,
      operation: undefined,
      message: error.description,
      cause: undefined,
      observedAt,
    };
  const [, operation, , message, cause] = match;
  return {
    code: error.code,
    operation,
    message: message ?? "",
    cause: cause === undefined || cause === "" ? undefined : cause,
    observedAt,
  };
};

/** `CODE: message (cause: …)` on one line. */
export const errorLine = (error: DecodedError): string =>
  `${error.code}: ${error.message}${error.cause === undefined ? "" : ` (cause: ${error.cause})`}`;
