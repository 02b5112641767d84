/**
 * A task as the commands show it, through its kind's decoder (src/cli/task/cli-kind.ts). Read
 * leniently: a task whose spec does not decode (written by hand, or for a newer CRD) is still listed
 * and described, with its decode errors, rather than hidden.
 *
 * Every text in a view is safe to print on a terminal (src/api/terminal-text.ts): describe, get's table, wait
 * and explain print views, never the object. `-o json|yaml` print the object itself, exactly (JSON
 * with every control character as an escape, output.ts).
 */
import * as Result from "effect/Result";
import * as SchemaParser from "effect/SchemaParser";
import type { LastError, TaskStatus } from "../../api/status.ts";
import { TaskStatusSchema } from "../../api/status-schema.ts";
import { terminalText } from "../../api/terminal-text.ts";
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
  /** `status.result` as compact JSON, for a kind that writes one; undefined when there is none. */
  readonly result?: string | undefined;
  /** `status.conditions` (a library kind's, written with the final state); empty when there are none. */
  readonly conditions?: ReadonlyArray<ConditionView>;
}

export interface ConditionView {
  readonly type: string;
  readonly status: string;
  readonly reason: string;
  readonly message: string;
}

const decodeStatus = SchemaParser.decodeUnknownResult(TaskStatusSchema);

const get = (value: unknown, key: string): unknown =>
  typeof value === "object" && value !== null && key in value ? Reflect.get(value, key) : undefined;

const str = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);

/** The status's texts escaped for a terminal; states and types are closed sets, checked by the decoder. */
const safeStatus = (status: TaskStatus): TaskStatus => ({
  ...status,
  ...(status.lastTransitionTime === undefined
    ? {}
    : { lastTransitionTime: terminalText(status.lastTransitionTime) }),
  ...(status.startedAt === undefined ? {} : { startedAt: terminalText(status.startedAt) }),
  ...(status.lastOperation === undefined
    ? {}
    : {
        lastOperation: {
          ...status.lastOperation,
          description: terminalText(status.lastOperation.description),
          runID: terminalText(status.lastOperation.runID),
          lastUpdateTime: terminalText(status.lastOperation.lastUpdateTime),
        },
      }),
  ...(status.lastErrors === undefined
    ? {}
    : {
        lastErrors: status.lastErrors.map((error) => ({
          code: terminalText(error.code),
          description: terminalText(error.description),
          observedAt: terminalText(error.observedAt),
        })),
      }),
});

const safe = (text: string | undefined): string | undefined =>
  text === undefined ? undefined : terminalText(text);

const resultOf = (status: unknown): string | undefined => {
  const result = get(status, "result");
  return result === undefined ? undefined : terminalText(JSON.stringify(result));
};

const conditionsOf = (status: unknown): ReadonlyArray<ConditionView> => {
  const conditions = get(status, "conditions");
  if (!Array.isArray(conditions)) return [];
  return conditions.flatMap((condition: unknown) => {
    const type = str(get(condition, "type"));
    return type === undefined
      ? []
      : [
          {
            type: terminalText(type),
            status: terminalText(str(get(condition, "status")) ?? ""),
            reason: terminalText(str(get(condition, "reason")) ?? ""),
            message: terminalText(str(get(condition, "message")) ?? ""),
          },
        ];
  });
};

export const viewOf = (kind: CliKind, object: KubeObject): TaskView => {
  const meta = object.metadata;
  const facts = kind.facts(object);
  const status = decodeStatus(get(object, "status") ?? {});
  return {
    kind,
    namespace: terminalText(meta.namespace),
    name: terminalText(meta.name),
    uid: meta.uid,
    resourceVersion: meta.resourceVersion,
    createdAt: fromWireTime(str(meta.creationTimestamp)),
    deletingSince: fromWireTime(meta.deletionTimestamp),
    finalizers: (meta.finalizers ?? []).map(terminalText),
    group: safe(facts?.group),
    member: terminalText(facts?.member ?? ""),
    ttlSeconds: facts?.ttlSeconds ?? kind.defaultTtlSeconds,
    summary: safe(kind.summary(object)),
    invalid: (facts?.invalid ?? []).map(terminalText),
    status: safeStatus(facts?.status ?? (Result.isSuccess(status) ? status.success : {})),
    result: resultOf(get(object, "status")),
    conditions: conditionsOf(get(object, "status")),
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
