/**
 * A task as the commands show it. Read leniently: a task whose spec does not decode (written by hand,
 * or for a newer CRD) is still listed and described, with its decode errors, rather than hidden.
 */
import * as Result from "effect/Result";
import * as SchemaParser from "effect/SchemaParser";
import type { LastError, TaskStatus } from "../../api/status.ts";
import { TaskStatusSchema } from "../../api/status-schema.ts";
import type { TaskConfig } from "../../etcd/api/config/task-config.ts";
import { decodeEtcdOpsTask, Finalizer, TtlLimits } from "../../etcd/api/etcdopstask.ts";
import type { KubeObject } from "../../kube/object.ts";
import { fromWireTime } from "../../machine/time.ts";

export interface TaskView {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly resourceVersion: string;
  /** ms since the epoch. */
  readonly createdAt: number | undefined;
  readonly deletingSince: number | undefined;
  readonly finalizers: ReadonlyArray<string>;
  readonly etcdName: string | undefined;
  readonly ttlSeconds: number;
  /** Undefined when the spec does not decode (see `invalid`). */
  readonly config: TaskConfig | undefined;
  /** Why the spec does not decode, one line per problem; empty when it does. */
  readonly invalid: ReadonlyArray<string>;
  readonly status: TaskStatus;
}

const decodeStatus = SchemaParser.decodeUnknownResult(TaskStatusSchema);

const get = (value: unknown, key: string): unknown =>
  typeof value === "object" && value !== null && key in value ? Reflect.get(value, key) : undefined;

const str = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);

export const viewOf = (object: KubeObject): TaskView => {
  const meta = object.metadata;
  const base = {
    namespace: meta.namespace,
    name: meta.name,
    uid: meta.uid,
    resourceVersion: meta.resourceVersion,
    createdAt: fromWireTime(str(meta.creationTimestamp)),
    deletingSince: fromWireTime(meta.deletionTimestamp),
    finalizers: meta.finalizers ?? [],
  };
  const decoded = decodeEtcdOpsTask(object);
  if (Result.isSuccess(decoded)) {
    const task = decoded.success;
    return {
      ...base,
      etcdName: task.spec.etcdName,
      ttlSeconds: task.spec.ttlSecondsAfterFinished,
      config: task.spec.config,
      invalid: [],
      status: task.status ?? {},
    };
  }
  const spec = get(object, "spec");
  const ttl = get(spec, "ttlSecondsAfterFinished");
  const status = decodeStatus(get(object, "status") ?? {});
  return {
    ...base,
    etcdName: str(get(spec, "etcdName")),
    ttlSeconds: typeof ttl === "number" ? ttl : TtlLimits.default,
    config: undefined,
    invalid: decoded.failure.errors,
    status: Result.isSuccess(status) ? status.success : {},
  };
};

/** `Execution/InProgress`, or undefined before the first operation. */
export const phaseOf = (status: TaskStatus): string | undefined =>
  status.lastOperation === undefined
    ? undefined
    : `${status.lastOperation.type}/${status.lastOperation.state}`;

export const lastErrorOf = (status: TaskStatus): LastError | undefined => status.lastErrors?.at(-1);

export const isOwnFinalizer = (finalizer: string): boolean => finalizer === Finalizer;

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

/** What the task does, in a few words: `onDemandSnapshot: full snapshot (final), timeout 900s`. */
export const configSummary = (view: TaskView): string => {
  const config = view.config;
  if (config === undefined) return "invalid spec (does not decode)";
  switch (config.kind) {
    case "onDemandSnapshot":
      return `${config.kind}: ${config.type} snapshot${config.isFinal === true ? " (final)" : ""}, timeout ${
        config.type === "full" ? config.timeoutSecondsFull : config.timeoutSecondsDelta
      }s`;
    case "onDemandMaintenance": {
      const steps = [
        ...(config.compaction === undefined
          ? []
          : [`compaction${config.compaction.physical === true ? " (physical)" : ""}`]),
        ...(config.defragmentation === undefined ? [] : ["defragmentation"]),
      ];
      return `${config.kind}: ${steps.join(" + ")}, timeout ${config.timeoutSeconds}s per call`;
    }
    case "onDemandSnapshotCompaction":
      return `${config.kind}: image ${config.image ?? "(controller default)"}, timeout ${config.timeoutSeconds}s`;
    case "unsupported":
      return `${config.member} (a task type this opstask does not support)`;
  }
};
