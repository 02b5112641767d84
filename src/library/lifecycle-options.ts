/**
 * The lifecycle options `runTaskController` and `simulate` share, under the same names: what a test
 * sets up in simulation is written the same way in production.
 */
import type { DuplicatePolicy, LifecycleConfig } from "../machine/types.ts";

/** Lifecycle timing; every value defaults to etcd-druid's (`druidTiming`). */
export type LifecycleTiming = Partial<
  Pick<
    LifecycleConfig,
    "requeueIntervalMs" | "backoffBaseMs" | "backoffCapMs" | "phaseDeadlineMs" | "minRequeueMs"
  >
>;

export interface LifecycleOptions {
  /** `reject` (druid, the default) or `queue` (FIFO per admission group). */
  readonly duplicatePolicy?: DuplicatePolicy;
  readonly timing?: LifecycleTiming;
}

/** The overrides of the default lifecycle settings these options make. */
export const lifecycleOverrides = (
  options: LifecycleOptions,
): Partial<Omit<LifecycleConfig, "finalizer" | "vocabulary">> => ({
  ...options.timing,
  ...(options.duplicatePolicy === undefined ? {} : { duplicatePolicy: options.duplicatePolicy }),
});
