// The loop that carries a batch of watched changes into the core and performs the commands: in order,
// no effect for an item that needs none, an item's effect holding the items after it, and turns for
// other fibers during a long batch.
import { assert, describe, it } from "@effect/vitest";
import { Deferred, Effect, Fiber } from "effect";
import { forEachInOrder, itemsBeforeYield, runInOrder } from "../../src/runtime/for-each-in-order.ts";

/** Lets forked fibers run until they block. */
const settle = Effect.gen(function* () {
  for (let i = 0; i < 20; i += 1) yield* Effect.yieldNow;
});

describe("forEachInOrder", () => {
  it("does items that need no effect at once, in order, and answers no effect", () => {
    const done: number[] = [];
    const rest = forEachInOrder([1, 2, 3, 4], (item) => {
      done.push(item);
      return undefined;
    });
    assert.isUndefined(rest);
    assert.deepStrictEqual(done, [1, 2, 3, 4]);
  });

  it("starts at `from`", () => {
    const done: string[] = [];
    forEachInOrder(
      ["a", "b", "c"],
      (item) => {
        done.push(item);
        return undefined;
      },
      1,
    );
    assert.deepStrictEqual(done, ["b", "c"]);
  });

  it.effect("holds the items after one that needs an effect until that effect is done", () =>
    Effect.gen(function* () {
      const done: string[] = [];
      const gate = yield* Deferred.make<void>();
      const fiber = yield* Effect.forkChild(
        runInOrder(["a", "b", "c", "d"], (item) => {
          done.push(item);
          if (item !== "b") return undefined;
          return Deferred.await(gate).pipe(Effect.andThen(Effect.sync(() => done.push("b done"))));
        }),
      );
      yield* settle;
      assert.deepStrictEqual(done, ["a", "b"]);
      yield* Deferred.succeed(gate, undefined);
      yield* Fiber.join(fiber);
      assert.deepStrictEqual(done, ["a", "b", "b done", "c", "d"]);
    }),
  );

  it.effect("keeps the order of several items of one key, some with effects and some without", () =>
    Effect.gen(function* () {
      // As a batch with a task's ADDED, MODIFIED and DELETED: each step sees the one before it done.
      const changes = ["ADDED x", "MODIFIED x", "ADDED y", "DELETED x", "MODIFIED y"];
      const seen: string[] = [];
      yield* runInOrder(changes, (change) => {
        const record = () => seen.push(change);
        if (change.startsWith("MODIFIED")) return Effect.yieldNow.pipe(Effect.andThen(Effect.sync(record)));
        record();
        return undefined;
      });
      assert.deepStrictEqual(seen, changes);
    }),
  );

  it.effect("gives other fibers a turn during a long batch", () =>
    Effect.gen(function* () {
      const items = Array.from({ length: 4 * itemsBeforeYield }, (_, i) => i);
      let done = 0;
      let doneWhenOtherRan: number | undefined;
      const other = yield* Effect.forkChild(Effect.sync(() => (doneWhenOtherRan = done)));
      yield* runInOrder<number, never, never>(items, () => {
        done += 1;
        return undefined;
      });
      yield* Fiber.join(other);
      assert.strictEqual(done, items.length);
      assert.isDefined(doneWhenOtherRan);
      assert.isAbove(doneWhenOtherRan ?? 0, 0);
      assert.isBelow(doneWhenOtherRan ?? items.length, items.length);
    }),
  );

  it.effect("carries a batch of 100,000 items, every tenth with an effect", () =>
    Effect.gen(function* () {
      const items = Array.from({ length: 100_000 }, (_, i) => i);
      let next = 0;
      let outOfOrder = 0;
      yield* runInOrder(items, (item) => {
        const record = () => {
          if (item !== next) outOfOrder += 1;
          next = item + 1;
        };
        if (item % 10 === 0) return Effect.sync(record);
        record();
        return undefined;
      });
      assert.strictEqual(next, items.length);
      assert.strictEqual(outOfOrder, 0);
    }),
  );
});
