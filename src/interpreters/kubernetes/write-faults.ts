/**
 * Makes a task write's trouble visible while it happens. Left alone, a write against an API that hangs
 * (etcd down: every attempt waits its full request timeout) or fails (5xx, 429) is retried in silence
 * for up to minutes. Here every attempt that goes unanswered past `slowAfter` is logged at WARN once,
 * while it still waits; every attempt that fails with a retryable error is logged at WARN; a write
 * given up after its retries is logged at WARN again. Each is counted in `KubeFaults`.
 *
 * Non-retryable answers (409 Conflict, 404, 422 …) are the caller's business and not faults.
 */
import * as Duration from "effect/Duration";
import * as Effect from "effect/Effect";
import type * as Schedule from "effect/Schedule";
import { isRetryable, type KubeError } from "../../kube/errors.ts";
import { MaxTimerDelayMs } from "../../timer-limit.ts";
import { type FaultOperation, recordFault } from "./fault-counter.ts";

export interface WriteSubject {
  readonly namespace: string;
  readonly name: string;
}

const describe = (error: KubeError): string => `${error.code} ${error.reason}: ${error.message}`;

/**
 * `watchWrite(slowAfter)(operation, target, schedule, attempt)` runs `attempt`, retried by `schedule`,
 * with the warnings and counts above.
 */
export const watchWrite =
  (slowAfter: Duration.Input) =>
  <A, O>(
    operation: FaultOperation,
    target: WriteSubject,
    schedule: Schedule.Schedule<O, KubeError>,
    attempt: Effect.Effect<A, KubeError>,
  ): Effect.Effect<A, KubeError> => {
    const subject = `${operation} of ${target.namespace}/${target.name}`;
    const slowMs = Duration.toMillis(Duration.fromInputUnsafe(slowAfter));
    const warnSlow = Effect.sleep(slowMs).pipe(
      Effect.andThen(recordFault(operation, "slow")),
      Effect.andThen(Effect.logWarning(`${subject}: no answer from the API server after ${slowMs} ms`)),
    );
    // A timer per attempt, not a forked fiber to interrupt (every write makes one; bench/PROFILE.md,
    // eighth pass). The warning runs with the attempt's services (its logger, the fault counter).
    const oneAttempt = Effect.gen(function* () {
      const services = yield* Effect.context<never>();
      // A Node timer fires at once past its longest delay: a longer wait is never slow.
      const warner =
        slowMs <= MaxTimerDelayMs
          ? setTimeout(() => Effect.runForkWith(services)(warnSlow), slowMs)
          : undefined;
      return yield* attempt.pipe(Effect.ensuring(Effect.sync(() => clearTimeout(warner))));
    }).pipe(
      Effect.tapError((error) =>
        isRetryable(error)
          ? recordFault(operation, "retried").pipe(
              Effect.andThen(Effect.logWarning(`${subject}: attempt failed (${describe(error)})`)),
            )
          : Effect.void,
      ),
    );
    return oneAttempt.pipe(
      Effect.retry(schedule),
      Effect.tapError((error) =>
        isRetryable(error)
          ? recordFault(operation, "failed").pipe(
              Effect.andThen(Effect.logWarning(`${subject}: given up after retries (${describe(error)})`)),
            )
          : Effect.void,
      ),
    );
  };
