// The Event queue (src/runtime/event-queue.ts): a pass hands its Event over and goes on; the queue is
// bounded (a full one drops, counted and logged); a closing scope still sends what is queued.
import { assert, describe, it } from "@effect/vitest";
import { Deferred, Effect, Exit, Scope } from "effect";
import { TestClock } from "effect/testing";
import type { EventSubject, TaskEvent } from "../../src/interpreters/kubernetes/event-recorder.ts";
import { queuedEventRecorder } from "../../src/runtime/event-queue.ts";
import { observed } from "../support/observed-faults.ts";

const subject: EventSubject = { name: "t", namespace: "ns", uid: "u", resourceVersion: "1" };
const event = (reason: string): TaskEvent => ({ type: "Normal", reason, note: reason });

/** A recorder whose creates wait until `open` is completed; what it created, in order. */
const gatedRecorder = (open: Deferred.Deferred<void>) => {
  const created: Array<{ reason: string; at: number | undefined }> = [];
  return {
    created,
    recorder: {
      record: (_: EventSubject, e: TaskEvent) =>
        Deferred.await(open).pipe(
          Effect.andThen(Effect.sync(() => created.push({ reason: e.reason, at: e.at }))),
        ),
    },
  };
};

describe("queuedEventRecorder", () => {
  it.live("returns before the Event is created, and creates it with the time it was recorded", () =>
    Effect.gen(function* () {
      const open = yield* Deferred.make<void>();
      const { created, recorder } = gatedRecorder(open);
      const scope = yield* Scope.make();
      const queued = yield* queuedEventRecorder(recorder, { senders: 1 }).pipe(Scope.provide(scope));
      const before = Date.now();
      yield* queued.record(subject, event("Started"));
      // The create is still held: the caller went on all the same.
      assert.deepStrictEqual(created, []);
      yield* Deferred.succeed(open, undefined);
      while (created.length === 0) yield* Effect.sleep("5 millis");
      assert.strictEqual(created[0]?.reason, "Started");
      assert.isAtLeast(created[0]?.at ?? 0, before);
      assert.isAtMost(created[0]?.at ?? Number.POSITIVE_INFINITY, Date.now());
      yield* Scope.close(scope, Exit.void);
    }),
  );

  it.live("is bounded: beyond its capacity an Event is dropped, counted once and logged at WARN", () =>
    observed((faults, warnings) =>
      Effect.gen(function* () {
        const open = yield* Deferred.make<void>();
        const { created, recorder } = gatedRecorder(open);
        const scope = yield* Scope.make();
        const queued = yield* queuedEventRecorder(recorder, { senders: 1, capacity: 2 }).pipe(
          Scope.provide(scope),
        );
        yield* queued.record(subject, event("first")); // taken by the sender, held
        yield* Effect.sleep("20 millis");
        for (const reason of ["second", "third", "fourth"]) yield* queued.record(subject, event(reason));
        assert.strictEqual(faults.count("event", "dropped"), 1);
        assert.strictEqual(warnings.length, 1);
        assert.match(warnings[0] ?? "", /^event fourth on ns\/t dropped: the Event queue is full/);
        yield* Deferred.succeed(open, undefined);
        yield* Scope.close(scope, Exit.void);
        assert.deepStrictEqual(
          created.map((c) => c.reason),
          ["first", "second", "third"],
        );
      }),
    ),
  );

  it.live("sends what is queued when its scope closes, within the drain timeout", () =>
    Effect.gen(function* () {
      const open = yield* Deferred.make<void>();
      const { created, recorder } = gatedRecorder(open);
      const scope = yield* Scope.make();
      const queued = yield* queuedEventRecorder(recorder, { senders: 2 }).pipe(Scope.provide(scope));
      for (let i = 0; i < 10; i += 1) yield* queued.record(subject, event(`e${i}`));
      yield* Effect.forkChild(
        Effect.sleep("50 millis").pipe(Effect.andThen(Deferred.succeed(open, undefined))),
      );
      yield* Scope.close(scope, Exit.void);
      assert.strictEqual(created.length, 10);
    }),
  );

  it.effect("gives up draining after the drain timeout (a stop is not held by a dead apiserver)", () =>
    Effect.gen(function* () {
      const open = yield* Deferred.make<void>(); // never opened
      const { created, recorder } = gatedRecorder(open);
      const scope = yield* Scope.make();
      const queued = yield* queuedEventRecorder(recorder, { drainTimeout: "100 millis" }).pipe(
        Scope.provide(scope),
      );
      yield* queued.record(subject, event("stuck"));
      const closing = yield* Effect.forkChild(Scope.close(scope, Exit.void));
      yield* TestClock.adjust("99 millis");
      assert.isUndefined(closing.pollUnsafe());
      yield* TestClock.adjust("2 millis");
      for (let i = 0; i < 10 && closing.pollUnsafe() === undefined; i += 1) yield* Effect.yieldNow;
      assert.isDefined(closing.pollUnsafe(), "the scope closed once the drain timeout passed");
      assert.deepStrictEqual(created, []);
      // Whatever failed above, the clock moves past any drain, so that the close can end.
    }).pipe(Effect.ensuring(TestClock.adjust("1 minute"))),
  );
});
