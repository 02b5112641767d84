// The keyed work queue under TestClock: dedupe, one run per key at a time, bounded concurrency, adds
// from a due source, failures, graceful shutdown. Deterministic: no real sleeps.
import { assert, describe, it } from "@effect/vitest";
import { Deferred, Effect, Exit, Fiber, Scope } from "effect";
import { TestClock } from "effect/testing";
import { DueTimes } from "../../src/reconcile/due-times.ts";
import { type DueSource, makeWorkQueue } from "../../src/runtime/work-queue.ts";

/** Lets forked fibers run until they block (no virtual time passes). */
const settle = Effect.gen(function* () {
  for (let i = 0; i < 50; i += 1) yield* Effect.yieldNow;
});

/** A process function that records runs and, per key, waits for the test to release it. */
const recorder = () => {
  const runs: string[] = [];
  const active = new Map<string, number>();
  let overlap = false;
  let maxInFlight = 0;
  const gates = new Map<string, Deferred.Deferred<void>>();
  const gate = (key: string) =>
    Effect.gen(function* () {
      const existing = gates.get(key);
      if (existing !== undefined) return existing;
      const created = yield* Deferred.make<void>();
      gates.set(key, created);
      return created;
    });
  const process = (key: string) =>
    Effect.gen(function* () {
      runs.push(key);
      const now = (active.get(key) ?? 0) + 1;
      if (now > 1) overlap = true;
      active.set(key, now);
      maxInFlight = Math.max(
        maxInFlight,
        [...active.values()].reduce((a, b) => a + b, 0),
      );
      const g = yield* gate(key);
      yield* Deferred.await(g).pipe(
        Effect.ensuring(Effect.sync(() => active.set(key, (active.get(key) ?? 1) - 1))),
      );
    });
  const release = (key: string) =>
    Effect.gen(function* () {
      const g = yield* gate(key);
      gates.delete(key);
      yield* Deferred.succeed(g, undefined);
      yield* settle;
    });
  return {
    runs,
    process,
    release,
    overlap: () => overlap,
    maxInFlight: () => maxInFlight,
  };
};

/** A process function that never blocks. */
const counting = () => {
  const runs: string[] = [];
  return { runs, process: (key: string) => Effect.sync(() => void runs.push(key)) };
};

describe("work queue: dedupe and per-key exclusion", () => {
  it.effect("a key added several times while waiting is processed once", () =>
    Effect.gen(function* () {
      const r = recorder();
      const queue = yield* makeWorkQueue({ concurrency: 1, process: r.process });
      yield* queue.add("blocker");
      yield* settle;
      yield* queue.add("a");
      yield* queue.add("a");
      yield* queue.add("b");
      yield* queue.add("a");
      assert.strictEqual(queue.metrics().depth, 2);
      assert.strictEqual(queue.metrics().deduplicated, 2);
      yield* r.release("blocker");
      yield* r.release("a");
      yield* r.release("b");
      assert.deepStrictEqual(r.runs, ["blocker", "a", "b"]);
    }),
  );

  it.effect("a key added while it is processed runs once more afterwards, never concurrently", () =>
    Effect.gen(function* () {
      const r = recorder();
      const queue = yield* makeWorkQueue({ concurrency: 4, process: r.process });
      yield* queue.add("a");
      yield* settle;
      yield* queue.add("a");
      yield* queue.add("a");
      yield* settle;
      assert.deepStrictEqual(r.runs, ["a"]);
      assert.strictEqual(queue.metrics().inFlight, 1);
      yield* r.release("a");
      assert.deepStrictEqual(r.runs, ["a", "a"]);
      yield* r.release("a");
      assert.deepStrictEqual(r.runs, ["a", "a"]);
      assert.isFalse(r.overlap());
      assert.strictEqual(queue.metrics().processed, 2);
    }),
  );

  it.effect("at most `concurrency` keys run at once, in the order they were added", () =>
    Effect.gen(function* () {
      const r = recorder();
      const queue = yield* makeWorkQueue({ concurrency: 2, process: r.process });
      for (const key of ["a", "b", "c", "d", "e"]) yield* queue.add(key);
      yield* settle;
      assert.deepStrictEqual(r.runs, ["a", "b"]);
      assert.strictEqual(queue.metrics().depth, 3);
      yield* r.release("b");
      assert.deepStrictEqual(r.runs, ["a", "b", "c"]);
      for (const key of ["a", "c", "d", "e"]) yield* r.release(key);
      assert.deepStrictEqual(r.runs, ["a", "b", "c", "d", "e"]);
      assert.strictEqual(r.maxInFlight(), 2);
    }),
  );
});

/** A due source as the scheduler is one: a store of one due time per key (src/reconcile/due-times.ts). */
const dueSource = () => {
  const times = new DueTimes();
  const source: DueSource = {
    nextDue: () => times.next(),
    takeDue: (now) => times.takeDue(now).map((entry) => entry.key),
    get dueCount() {
      return times.size;
    },
  };
  return { times, source };
};

describe("work queue: due times", () => {
  it.effect("adds a key when its due time comes, and not before", () =>
    Effect.gen(function* () {
      const c = counting();
      const { times, source } = dueSource();
      const queue = yield* makeWorkQueue({ concurrency: 1, process: c.process, due: source });
      times.set("a", 10_000);
      yield* queue.dueChanged;
      assert.strictEqual(queue.metrics().delayed, 1);
      yield* TestClock.adjust("9999 millis");
      yield* settle;
      assert.deepStrictEqual(c.runs, []);
      yield* TestClock.adjust("1 millis");
      yield* settle;
      assert.deepStrictEqual(c.runs, ["a"]);
      assert.strictEqual(queue.metrics().delayed, 0);
    }),
  );

  it.effect("told of an earlier due time, wakes for it; a time due already runs at once", () =>
    Effect.gen(function* () {
      const c = counting();
      const { times, source } = dueSource();
      const queue = yield* makeWorkQueue({ concurrency: 1, process: c.process, due: source });
      times.set("late", 60_000);
      yield* queue.dueChanged;
      yield* settle;
      // The timer sleeps for 60 s; an earlier time must wake it.
      times.set("soon", 5_000);
      yield* queue.dueChanged;
      times.set("now", 0);
      yield* queue.dueChanged;
      yield* settle;
      assert.deepStrictEqual(c.runs, ["now"]);
      yield* TestClock.adjust("5 seconds");
      yield* settle;
      assert.deepStrictEqual(c.runs, ["now", "soon"]);
      yield* TestClock.adjust("55 seconds");
      yield* settle;
      assert.deepStrictEqual(c.runs, ["now", "soon", "late"]);
    }),
  );

  it.effect("a due time dropped at the source does not fire", () =>
    Effect.gen(function* () {
      const c = counting();
      const { times, source } = dueSource();
      const queue = yield* makeWorkQueue({ concurrency: 1, process: c.process, due: source });
      times.set("a", 10_000);
      yield* queue.dueChanged;
      yield* settle;
      times.delete("a");
      yield* TestClock.adjust("1 minute");
      yield* settle;
      assert.deepStrictEqual(c.runs, []);
    }),
  );

  it.effect("an immediate add leaves a due time in place", () =>
    Effect.gen(function* () {
      const c = counting();
      const { times, source } = dueSource();
      const queue = yield* makeWorkQueue({ concurrency: 1, process: c.process, due: source });
      times.set("a", 10_000);
      yield* queue.dueChanged;
      yield* queue.add("a");
      yield* settle;
      yield* TestClock.adjust("10 seconds");
      yield* settle;
      assert.deepStrictEqual(c.runs, ["a", "a"]);
    }),
  );

  it.effect("a key due while it runs is marked to run again afterwards", () =>
    Effect.gen(function* () {
      const r = recorder();
      const { times, source } = dueSource();
      const queue = yield* makeWorkQueue({ concurrency: 2, process: r.process, due: source });
      yield* queue.add("a");
      times.set("a", 1_000);
      yield* queue.dueChanged;
      yield* settle;
      yield* TestClock.adjust("1 second");
      yield* settle;
      assert.deepStrictEqual(r.runs, ["a"]);
      yield* r.release("a");
      assert.deepStrictEqual(r.runs, ["a", "a"]);
      yield* r.release("a");
      assert.isFalse(r.overlap());
    }),
  );
});

describe("work queue: failures and metrics", () => {
  it.effect("a failing or dying run is counted and the worker goes on", () =>
    Effect.gen(function* () {
      const runs: string[] = [];
      const queue = yield* makeWorkQueue({
        concurrency: 1,
        process: (key: string) =>
          Effect.gen(function* () {
            runs.push(key);
            if (key === "fail") return yield* Effect.fail("boom");
            if (key === "die") return yield* Effect.die(new Error("defect"));
          }),
      });
      for (const key of ["fail", "die", "ok"]) yield* queue.add(key);
      yield* settle;
      assert.deepStrictEqual(runs, ["fail", "die", "ok"]);
      assert.strictEqual(queue.metrics().failures, 2);
      assert.strictEqual(queue.metrics().processed, 3);
    }),
  );

  it.effect("measures the wait from the first add to the start of the run", () =>
    Effect.gen(function* () {
      const r = recorder();
      const queue = yield* makeWorkQueue({ concurrency: 1, process: r.process });
      yield* queue.add("a");
      yield* settle;
      yield* queue.add("b");
      yield* TestClock.adjust("3 seconds");
      yield* queue.add("b");
      yield* TestClock.adjust("2 seconds");
      yield* r.release("a");
      const metrics = queue.metrics();
      assert.strictEqual(metrics.waitMaxMs, 5000);
      assert.strictEqual(metrics.waitTotalMs, 5000);
      assert.strictEqual(metrics.processingTotalMs, 5000);
      assert.strictEqual(metrics.started, 2);
      yield* r.release("b");
    }),
  );
});

describe("work queue: shutdown", () => {
  it.effect("stops taking keys, lets runs in flight finish, drops waiting keys and fires no due time", () =>
    Effect.gen(function* () {
      const runs: string[] = [];
      const finished: string[] = [];
      const { times, source } = dueSource();
      const queue = yield* makeWorkQueue({
        concurrency: 1,
        shutdownTimeout: "30 seconds",
        due: source,
        process: (key: string) =>
          Effect.sync(() => void runs.push(key)).pipe(
            Effect.andThen(Effect.sleep("10 seconds")),
            Effect.andThen(Effect.sync(() => void finished.push(key))),
          ),
      });
      yield* queue.add("a");
      yield* queue.add("b");
      times.set("c", 5_000);
      yield* queue.dueChanged;
      yield* settle;
      const stopping = yield* Effect.forkChild(queue.shutdown);
      yield* settle;
      yield* queue.add("d");
      times.set("e", 0);
      yield* queue.dueChanged;
      yield* TestClock.adjust("10 seconds");
      yield* Fiber.join(stopping);
      yield* TestClock.adjust("1 minute");
      yield* settle;
      assert.deepStrictEqual(runs, ["a"]);
      assert.deepStrictEqual(finished, ["a"]);
      yield* queue.shutdown; // idempotent
    }),
  );

  it.effect("interrupts runs still in flight after the timeout", () =>
    Effect.gen(function* () {
      const events: string[] = [];
      const queue = yield* makeWorkQueue({
        concurrency: 2,
        shutdownTimeout: "5 seconds",
        process: (key: string) =>
          Effect.sleep("1 minute").pipe(
            Effect.andThen(Effect.sync(() => void events.push(`done ${key}`))),
            Effect.onInterrupt(() => Effect.sync(() => void events.push(`interrupted ${key}`))),
          ),
      });
      yield* queue.add("a");
      yield* settle;
      const stopping = yield* Effect.forkChild(queue.shutdown);
      yield* settle;
      yield* TestClock.adjust("5 seconds");
      yield* Fiber.join(stopping);
      assert.deepStrictEqual(events, ["interrupted a"]);
    }),
  );

  it.effect("closing the scope shuts the queue down gracefully", () =>
    Effect.gen(function* () {
      const finished: string[] = [];
      const scope = yield* Scope.make();
      const queue = yield* makeWorkQueue({
        concurrency: 1,
        process: (key: string) =>
          Effect.sleep("2 seconds").pipe(Effect.andThen(Effect.sync(() => void finished.push(key)))),
      }).pipe(Scope.provide(scope));
      yield* queue.add("a");
      yield* settle;
      const closing = yield* Effect.forkChild(Scope.close(scope, Exit.void));
      yield* settle;
      yield* TestClock.adjust("2 seconds");
      yield* Fiber.join(closing);
      assert.deepStrictEqual(finished, ["a"]);
    }),
  );
});
