/** EtcdOpsTask as a `TaskKind`: what the generic lifecycle needs to run druid's task resource. */
import * as Result from "effect/Result";
import * as SchemaParser from "effect/SchemaParser";
import { TaskStatusSchema } from "../../api/status-schema.ts";
import { isDns1123Subdomain } from "../../kube/names.ts";
import type { TaskKind } from "../../reconcile/task-kind.ts";
import {
  decodeEtcdOpsTask,
  type EtcdOpsTask,
  Finalizer,
  Group,
  Kind,
  Plural,
  TtlLimits,
  Version,
} from "./etcdopstask.ts";

const decodeStatus = SchemaParser.decodeUnknownResult(TaskStatusSchema);

/** The status of an object whose spec does not decode, if the status itself does. */
const statusOf = (object: unknown) => {
  const raw = typeof object === "object" && object !== null && "status" in object ? object.status : undefined;
  if (raw === undefined) return undefined;
  const decoded = decodeStatus(raw);
  return Result.isSuccess(decoded) ? decoded.success : undefined;
};

export const etcdOpsTaskKind: TaskKind<EtcdOpsTask> = {
  resource: { group: Group, version: Version, kind: Kind, plural: Plural },
  finalizer: Finalizer,
  vocabulary: { kind: Kind, group: "etcd" },
  defaultTtlSeconds: TtlLimits.default,
  decode: (object) => {
    const decoded = decodeEtcdOpsTask(object);
    if (Result.isSuccess(decoded)) return { ok: true, task: decoded.success };
    const { errors, metadata } = decoded.failure;
    const status = statusOf(object);
    return {
      ok: false,
      failure: {
        errors,
        ...(metadata === undefined ? {} : { metadata }),
        ...(status === undefined ? {} : { status }),
      },
    };
  },
  facts: (task) => ({
    metadata: task.metadata,
    ttlSeconds: task.spec.ttlSecondsAfterFinished,
    // Druid keys duplicates on a non-nil etcdName; "" is a group of its own (docs/contract.md §8). The key
    // is the Etcd's identity, namespace/name (the handler checks the object it reads is that one): a
    // string that is no object name ("e005/status") names no Etcd, joins no group and is Rejected.
    ...(task.spec.etcdName === undefined ||
    (task.spec.etcdName !== "" && !isDns1123Subdomain(task.spec.etcdName))
      ? {}
      : { group: task.spec.etcdName }),
    member: task.spec.config.kind === "unsupported" ? task.spec.config.member : task.spec.config.kind,
    status: task.status ?? {},
  }),
};
