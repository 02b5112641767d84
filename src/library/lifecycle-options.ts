/**
 * The lifecycle options `runTaskController` and `simulate` share, under the same names: what a test
 * sets up in simulation is written the same way in production.
 */
import type { DuplicatePolicy, LifecycleConfig } from "../machine/types.ts";

/** Lifecycle timing; every value defaults to etcd-druid's (`druidTiming`). */
export type LifecycleTiming = Partial<
  Pick<
    LifecycleConfig,
    | "requeueIntervalMs"
    | "backoffBaseMs"
    | "backoffCapMs"
    | "phaseDeadlineMs"
    | "queueDeadlineMs"
    | "minRequeueMs"
  >
>;

export interface LifecycleOptions {
  /** `reject` (druid, the default) or `queue` (FIFO per admission group). */
  readonly duplicatePolicy?: DuplicatePolicy;
  readonly timing?: LifecycleTiming;
  /**
   * A handler call that throws is a defect: logged once per kind with its stack, counted, and tried
   * again with backoff; the phase's `handlerDefectLimit`-th defect fails the task with
   * ERR_HANDLER_DEFECT (Admit → Rejected, Execute → Failed, Cleanup → released). An integer ≥ 1;
   * default 5.
   */
  readonly handlerDefectLimit?: number;
}

/** The overrides of the default lifecycle settings these options make; a bad value is a RangeError. */
export const lifecycleOverrides = (
  options: LifecycleOptions,
): Partial<Omit<LifecycleConfig, "finalizer" | "vocabulary">> => {
  const limit = options.handlerDefectLimit;
  if (limit !== undefined && !(Number.isInteger(limit) && limit >= 1))
    throw new RangeError(
      `handlerDefectLimit must be an integer ≥ 1 (defects of one phase that fail the task), got ${String(limit)}`,
    );
  return {
    ...options.timing,
    ...(options.duplicatePolicy === undefined ? {} : { duplicatePolicy: options.duplicatePolicy }),
    ...(limit === undefined ? {} : { handlerDefectLimit: limit }),
  };
};
