/**
 * API faults the controller rode out, counted where they happen (the task writer, the event recorder,
 * the informers) and exported as `opstask_api_faults_total{operation,fault}`. Both labels come from
 * closed sets, so the metric has a fixed number of series whatever the tasks are called.
 *
 * The counter is found as an optional service (`KubeFaults`), as a logger or tracer is: the writer and
 * the informer run without one in tests and benchmarks, and `opstask controller` provides one.
 */

import * as Context from "effect/Context";
import * as Effect from "effect/Effect";
import * as Option from "effect/Option";
import { compareCodeUnits } from "../../code-unit-order.ts";

/** What was being done: one of the task writes, a LIST or WATCH of an informer, or an Event. */
export type FaultOperation =
  | "addFinalizer"
  | "patchStatus"
  | "deleteTask"
  | "removeFinalizer"
  | "list"
  | "watch"
  | "event";

/**
 * - `retried`: an attempt failed with a retryable error (network, timeout, 429, 5xx); it is tried again
 *   unless its retries are used up (then `failed` or `dropped` follows);
 * - `slow`: an attempt went unanswered past the writer's warning threshold (still waiting);
 * - `failed`: given up after its retries, or (list, watch) ended by an error;
 * - `expired`: a watch ended by 410 Gone (a relist follows);
 * - `dropped`: an Event given up after its retries.
 */
export type Fault = "retried" | "slow" | "failed" | "expired" | "dropped";

export interface FaultCount {
  readonly operation: FaultOperation;
  readonly fault: Fault;
  readonly count: number;
}

export class FaultCounter {
  readonly #counts = new Map<string, FaultCount>();

  record(operation: FaultOperation, fault: Fault): void {
    const key = `${operation} ${fault}`;
    this.#counts.set(key, { operation, fault, count: (this.#counts.get(key)?.count ?? 0) + 1 });
  }

  /** Faults of `operation` (of kind `fault`, if given). */
  count(operation: FaultOperation, fault?: Fault): number {
    let total = 0;
    for (const entry of this.#counts.values())
      if (entry.operation === operation && (fault === undefined || entry.fault === fault))
        total += entry.count;
    return total;
  }

  snapshot(): ReadonlyArray<FaultCount> {
    return [...this.#counts.values()].sort(
      (a, b) => compareCodeUnits(a.operation, b.operation) || compareCodeUnits(a.fault, b.fault),
    );
  }
}

export class KubeFaults extends Context.Service<KubeFaults, FaultCounter>()(
  "opstask/kubernetes/KubeFaults",
) {}

/** Counts a fault in the `KubeFaults` counter, if one is provided. */
export const recordFault = (operation: FaultOperation, fault: Fault): Effect.Effect<void> =>
  Effect.serviceOption(KubeFaults).pipe(
    Effect.flatMap((faults) =>
      Option.isSome(faults) ? Effect.sync(() => faults.value.record(operation, fault)) : Effect.void,
    ),
  );
