/**
 * A keyed work queue, as client-go's workqueue but in Effect:
 *
 * - `add(key)`: a key already waiting is not queued twice (dedupe); a key being processed is not
 *   processed again at the same time: it is marked and runs once more after the current run ends;
 * - timed adds: the queue keeps no due times of its own. It sleeps until the earliest time of its
 *   `due` source (the per-key core, src/reconcile/core.ts, which decides every due time and keeps
 *   one per key) and adds the keys due then; `dueChanged` tells it the source may have an earlier time;
 * - `concurrency` workers call `process(key)`; a failure or defect is logged and counted, never stops a
 *   worker (retry policy is the controller's business, not the queue's);
 * - `shutdown` (also run when the scope closes): stop taking keys and firing timers, let the runs in
 *   flight finish for up to `shutdownTimeout`, then interrupt them. Waiting keys are dropped.
 *
 * One fiber sleeps for every key, until the source's earliest due time. Time comes from Effect's Clock,
 * so tests run it under TestClock; the source's times are on that clock.
 */
import * as Cause from "effect/Cause";
import * as Clock from "effect/Clock";
import * as Deferred from "effect/Deferred";
import * as Duration from "effect/Duration";
import * as Effect from "effect/Effect";
import * as Exit from "effect/Exit";
import * as Fiber from "effect/Fiber";
import * as Option from "effect/Option";
import * as Queue from "effect/Queue";
import * as Result from "effect/Result";
import type * as Scope from "effect/Scope";
import { timerDelayMs } from "../timer-limit.ts";

export interface WorkQueueOptions<E, R> {
  /** Workers, i.e. keys processed at once (at least 1). */
  readonly concurrency: number;
  readonly process: (key: string) => Effect.Effect<void, E, R>;
  /** How long `shutdown` lets runs in flight finish before interrupting them (default 30 s). */
  readonly shutdownTimeout?: Duration.Input;
  /** Where the due times are kept (none: the queue only runs what is added). */
  readonly due?: DueSource;
}

/** Due times kept elsewhere (the per-key core): the queue only sleeps until them and runs their keys. */
export interface DueSource {
  /** The earliest due time (ms, Effect's Clock), if any. */
  readonly nextDue: () => number | undefined;
  /** Removes and answers the keys due at or before `now`. */
  readonly takeDue: (now: number) => ReadonlyArray<string>;
  /** Keys with a due time. */
  readonly dueCount: number;
}

/** Plain numbers, to be exported as gauges and counters. Times in milliseconds. */
export interface WorkQueueMetrics {
  /** Keys waiting for a worker. */
  readonly depth: number;
  /** Keys being processed. */
  readonly inFlight: number;
  /** Keys with a due time (a requeue, a backoff, a TTL). */
  readonly delayed: number;
  /** `add` calls and fired timers. */
  readonly adds: number;
  /** Adds of a key that was already waiting (or marked to run again). */
  readonly deduplicated: number;
  /** Runs of `process` started. */
  readonly started: number;
  /** Runs of `process` that ended (successfully or not). */
  readonly processed: number;
  /** Runs of `process` that failed or died. */
  readonly failures: number;
  /** Sum and maximum of the time from a key's first add to the start of its run. */
  readonly waitTotalMs: number;
  readonly waitMaxMs: number;
  /** Sum of run durations. */
  readonly processingTotalMs: number;
}

/** The figures of several queues (e.g. one controller per namespace) as one. */
export const sumQueueMetrics = (queues: ReadonlyArray<WorkQueueMetrics>): WorkQueueMetrics => {
  const sum = (pick: (q: WorkQueueMetrics) => number) => queues.reduce((total, q) => total + pick(q), 0);
  return {
    depth: sum((q) => q.depth),
    inFlight: sum((q) => q.inFlight),
    delayed: sum((q) => q.delayed),
    adds: sum((q) => q.adds),
    deduplicated: sum((q) => q.deduplicated),
    started: sum((q) => q.started),
    processed: sum((q) => q.processed),
    failures: sum((q) => q.failures),
    waitTotalMs: sum((q) => q.waitTotalMs),
    waitMaxMs: Math.max(0, ...queues.map((q) => q.waitMaxMs)),
    processingTotalMs: sum((q) => q.processingTotalMs),
  };
};

export interface WorkQueue {
  readonly add: (key: string) => Effect.Effect<void>;
  /** `add`, done now (for a caller that steps many keys in one go: no effect per key). */
  readonly addUnsafe: (key: string) => void;
  /** The due source may have an earlier time than the one the timer sleeps for: look again. */
  readonly dueChanged: Effect.Effect<void>;
  /** `dueChanged`, done now. */
  readonly dueChangedUnsafe: () => void;
  /** Stops the queue; completes when the workers have stopped. Idempotent. */
  readonly shutdown: Effect.Effect<void>;
  readonly metrics: () => WorkQueueMetrics;
}

export const makeWorkQueue = <E, R>(
  options: WorkQueueOptions<E, R>,
): Effect.Effect<WorkQueue, never, Scope.Scope | R> =>
  Effect.gen(function* () {
    const ready = yield* Queue.unbounded<string, Cause.Done>();
    /** Keys that must run (again): waiting in `ready`, or marked while processing. Value: first add time. */
    const dirty = new Map<string, number>();
    const processing = new Set<string>();
    const due = options.due;
    /** Completed to wake the timer fiber early (a time due before the one it sleeps for). */
    let wake = yield* Deferred.make<void>();
    let wakeAt = Number.POSITIVE_INFINITY;
    let stopping = false;
    const stopped = yield* Deferred.make<void>();
    const timeout = options.shutdownTimeout ?? Duration.seconds(30);
    const counts = {
      adds: 0,
      deduplicated: 0,
      started: 0,
      processed: 0,
      failures: 0,
      waitTotalMs: 0,
      waitMaxMs: 0,
      processingTotalMs: 0,
    };

    // The clock of the fiber that made the queue (a test's TestClock with it).
    const clock = yield* Clock.Clock;

    const addUnsafe = (key: string): void => {
      if (stopping) return;
      counts.adds += 1;
      if (dirty.has(key)) {
        counts.deduplicated += 1;
        return;
      }
      dirty.set(key, clock.currentTimeMillisUnsafe());
      if (!processing.has(key)) Queue.offerUnsafe(ready, key);
    };
    const add = (key: string): Effect.Effect<void> => Effect.sync(() => addUnsafe(key));

    const dueChangedUnsafe = (): void => {
      if (stopping) return;
      const next = due?.nextDue();
      if (next !== undefined && next < wakeAt) Deferred.doneUnsafe(wake, Exit.succeed(undefined));
    };
    const dueChanged: Effect.Effect<void> = Effect.sync(dueChangedUnsafe);

    /** Sleeps until the earliest due time (or a wake-up), then adds the keys that are due. */
    const timer = Effect.gen(function* () {
      if (due === undefined) return;
      for (;;) {
        wake = yield* Deferred.make<void>();
        const now = yield* Clock.currentTimeMillis;
        for (const key of due.takeDue(now)) yield* add(key);
        const next = due.nextDue();
        wakeAt = next ?? Number.POSITIVE_INFINITY;
        yield* next === undefined
          ? Deferred.await(wake)
          : Effect.raceFirst(Effect.sleep(timerDelayMs(next - now)), Deferred.await(wake));
      }
    });

    const runOne = (key: string) =>
      Effect.gen(function* () {
        const start = yield* Clock.currentTimeMillis;
        const addedAt = dirty.get(key) ?? start;
        dirty.delete(key);
        processing.add(key);
        counts.started += 1;
        counts.waitTotalMs += start - addedAt;
        counts.waitMaxMs = Math.max(counts.waitMaxMs, start - addedAt);
        yield* options.process(key).pipe(
          Effect.catchCause((cause) =>
            Effect.sync(() => {
              counts.failures += 1;
            }).pipe(
              Effect.andThen(Effect.logError(`work queue: processing ${key} failed`, Cause.pretty(cause))),
            ),
          ),
          Effect.ensuring(
            Effect.gen(function* () {
              const end = yield* Clock.currentTimeMillis;
              counts.processed += 1;
              counts.processingTotalMs += end - start;
              processing.delete(key);
              if (dirty.has(key) && !stopping) Queue.offerUnsafe(ready, key);
            }),
          ),
        );
      });

    const worker = Effect.gen(function* () {
      for (;;) {
        const next = yield* Effect.result(Queue.take(ready));
        if (Result.isFailure(next) || stopping) return;
        yield* runOne(next.success);
      }
    });

    const timerFiber = yield* Effect.forkScoped(timer);
    const workers: Array<Fiber.Fiber<void>> = [];
    for (let i = 0; i < Math.max(1, Math.floor(options.concurrency)); i += 1) {
      workers.push(yield* Effect.forkScoped(worker));
    }

    const shutdown: Effect.Effect<void> = Effect.suspend(() => {
      if (stopping) return Deferred.await(stopped);
      stopping = true;
      return Effect.gen(function* () {
        yield* Fiber.interrupt(timerFiber);
        yield* Queue.clear(ready);
        yield* Queue.end(ready);
        const finished = yield* Effect.timeoutOption(Fiber.awaitAll(workers), timeout);
        if (Option.isNone(finished)) {
          yield* Effect.logWarning(
            `work queue: ${processing.size} run(s) still in flight after ${Duration.format(Duration.fromInputUnsafe(timeout))}; interrupting`,
          );
          yield* Fiber.interruptAll(workers);
        }
        yield* Deferred.succeed(stopped, undefined);
      });
    });

    // Added after the workers were forked, so it runs before the scope interrupts them.
    yield* Effect.addFinalizer(() => shutdown);

    return {
      add,
      addUnsafe,
      dueChanged,
      dueChangedUnsafe,
      shutdown,
      metrics: () => ({
        ...counts,
        depth: Queue.sizeUnsafe(ready),
        inFlight: processing.size,
        delayed: due?.dueCount ?? 0,
      }),
    } satisfies WorkQueue;
  });
