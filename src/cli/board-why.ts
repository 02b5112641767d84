/**
 * The task board's "why" line for EtcdOpsTasks: the one `opstask describe` prints (task/explain.ts), from
 * what the board keeps of a task instead of the object.
 */
import type { ExplainInput } from "../ui/board-store.ts";
import { etcdCliKind } from "./task/etcd-kind.ts";
import { why } from "./task/explain.ts";

export const boardWhy = (input: ExplainInput, now: number): string =>
  why(
    {
      kind: etcdCliKind,
      namespace: input.namespace,
      name: input.name,
      uid: input.uid,
      resourceVersion: "",
      createdAt: input.createdAt,
      deletingSince: input.deletingSince,
      finalizers: input.finalizers,
      group: input.group === "" ? undefined : input.group,
      member: "",
      ttlSeconds: input.ttlSeconds,
      summary: undefined,
      invalid: input.invalid,
      status: input.status,
    },
    now,
  );
