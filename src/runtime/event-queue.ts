/**
 * Events off the pass's path, as client-go's recorder does: `record` puts the Event in a bounded queue
 * and returns, so a slow or throttled Event create never holds a pass. A few sender fibers create them
 * in queued order, each with the time it happened. A full queue drops the Event (counted as a dropped
 * Event fault, logged at WARN), so memory stays bounded while the apiserver refuses Events. When the
 * scope closes, what is queued is still sent, for at most `drainTimeout`.
 */

import type * as Cause from "effect/Cause";
import * as Clock from "effect/Clock";
import type * as Duration from "effect/Duration";
import * as Effect from "effect/Effect";
import * as Fiber from "effect/Fiber";
import * as Queue from "effect/Queue";
import type * as Scope from "effect/Scope";
import type { EventRecorder, EventSubject, TaskEvent } from "../interpreters/kubernetes/event-recorder.ts";
import { recordFault } from "../interpreters/kubernetes/fault-counter.ts";

export interface EventQueueOptions {
  /** Events waiting to be sent, at most (default 1,000: ~1.5 MB, each note is capped at 1 KB). */
  readonly capacity?: number;
  /** Events created at once (default 4). */
  readonly senders?: number;
  /** How long a stopping controller still sends what is queued (default 5 s). */
  readonly drainTimeout?: Duration.Input;
}

interface Queued {
  readonly subject: EventSubject;
  readonly event: TaskEvent;
}

/** `recorder` behind a bounded queue, its senders running in the caller's scope. */
export const queuedEventRecorder = (
  recorder: EventRecorder["Service"],
  options: EventQueueOptions = {},
): Effect.Effect<EventRecorder["Service"], never, Scope.Scope> =>
  Effect.gen(function* () {
    const queue = yield* Queue.dropping<Queued, Cause.Done>(Math.max(1, options.capacity ?? 1_000));
    // Each sender ends once the queue is ended and empty (its take fails with Done).
    const sender = Queue.take(queue).pipe(
      Effect.flatMap(({ subject, event }) => recorder.record(subject, event)),
      Effect.forever,
      Effect.ignore,
    );
    const senders: Array<Fiber.Fiber<void>> = [];
    for (let i = 0; i < Math.max(1, options.senders ?? 4); i += 1)
      senders.push(yield* Effect.forkScoped(sender));
    // Added after the senders, so run before they are interrupted: what is queued is sent first.
    yield* Effect.addFinalizer(() =>
      Queue.end(queue).pipe(
        Effect.andThen(Fiber.awaitAll(senders)),
        Effect.timeoutOrElse({ duration: options.drainTimeout ?? "5 seconds", orElse: () => Effect.void }),
      ),
    );
    return {
      record: (subject, event) =>
        Effect.gen(function* () {
          const at = event.at ?? (yield* Clock.currentTimeMillis);
          if (yield* Queue.offer(queue, { subject, event: { ...event, at } })) return;
          yield* recordFault("event", "dropped");
          yield* Effect.logWarning(
            `event ${event.reason} on ${subject.namespace}/${subject.name} dropped: the Event queue is full (or the controller is stopping)`,
          );
        }),
    };
  });
