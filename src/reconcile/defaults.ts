/** Lifecycle settings with etcd-druid's production values (docs/contract.md §7, §7). */
import type { LifecycleConfig } from "../machine/types.ts";
import { defaultHandlerDefectLimit } from "./handler-defect.ts";
import type { TaskKind } from "./task-kind.ts";

export const druidTiming = {
  requeueIntervalMs: 15_000,
  backoffBaseMs: 10,
  backoffCapMs: 15_000,
  /** Positive, so that a TTL delay that rounds to zero still schedules a pass (docs/contract.md §13 D3). */
  minRequeueMs: 10,
} as const;

export const lifecycleConfig = <Task>(
  kind: TaskKind<Task>,
  overrides: Partial<Omit<LifecycleConfig, "finalizer" | "vocabulary">> = {},
): LifecycleConfig => ({
  finalizer: kind.finalizer,
  vocabulary: kind.vocabulary,
  duplicatePolicy: "reject",
  handlerDefectLimit: defaultHandlerDefectLimit,
  ...druidTiming,
  ...(kind.conditions === undefined ? {} : { conditions: kind.conditions }),
  ...overrides,
});
