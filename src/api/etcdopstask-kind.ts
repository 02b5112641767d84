/** EtcdOpsTask as a `TaskKind`: what the generic lifecycle needs to run druid's task resource. */
import { Result } from "effect";
import type { TaskKind } from "../reconcile/task-kind.ts";
import {
  decodeEtcdOpsTask,
  type EtcdOpsTask,
  Finalizer,
  Group,
  Kind,
  Plural,
  Version,
} from "./etcdopstask.ts";

export const etcdOpsTaskKind: TaskKind<EtcdOpsTask> = {
  resource: { group: Group, version: Version, kind: Kind, plural: Plural },
  finalizer: Finalizer,
  vocabulary: { kind: Kind, group: "etcd" },
  decode: (object) => {
    const decoded = decodeEtcdOpsTask(object);
    if (Result.isSuccess(decoded)) return { ok: true, task: decoded.success };
    const { errors, metadata } = decoded.failure;
    return { ok: false, failure: metadata === undefined ? { errors } : { errors, metadata } };
  },
  facts: (task) => ({
    metadata: task.metadata,
    ttlSeconds: task.spec.ttlSecondsAfterFinished,
    // Druid keys duplicates on a non-nil etcdName; "" is a group of its own (contract §1.9).
    ...(task.spec.etcdName === undefined ? {} : { group: task.spec.etcdName }),
    member: task.spec.config.kind === "unsupported" ? task.spec.config.member : task.spec.config.kind,
    status: task.status ?? {},
  }),
};
