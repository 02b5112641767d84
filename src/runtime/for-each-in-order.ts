/**
 * A loop over items, in order, that builds no effect for an item that needs none. The controller
 * carries each watched change into its core and performs the commands that come out; at a takeover
 * that is thousands of changes in one batch, nearly all of them answered by bookkeeping alone, and an
 * effect per item (`Effect.forEach`, `Stream.runForEach`) cost more than the bookkeeping.
 */
import * as Effect from "effect/Effect";

/**
 * Items done at once before the loop yields to other fibers and to I/O (a health probe, a lease
 * renewal): a takeover's batch is seconds of work on a slow node, and one synchronous run of it
 * would hold the process that long.
 */
export const itemsBeforeYield = 256;

/**
 * Runs `each` on `items[from…]`, one after the other: `each` does its part at once and answers
 * undefined, or answers the effect that finishes its item, and the next item waits for that effect.
 * Answers undefined when every item was done at once, else the effect that does the rest.
 */
export const forEachInOrder = <A, E, R>(
  items: ReadonlyArray<A>,
  each: (item: A) => Effect.Effect<void, E, R> | undefined,
  from = 0,
): Effect.Effect<void, E, R> | undefined => {
  for (let at = from; at < items.length; at += 1) {
    const rest = each(items[at] as A);
    const next = at + 1;
    if (rest !== undefined)
      return Effect.flatMap(rest, () => forEachInOrder(items, each, next) ?? Effect.void);
    if (next - from >= itemsBeforeYield && next < items.length)
      return Effect.flatMap(Effect.yieldNow, () => forEachInOrder(items, each, next) ?? Effect.void);
  }
  return undefined;
};

/** `forEachInOrder` as one effect: `items` are looked at when it runs. */
export const runInOrder = <A, E, R>(
  items: ReadonlyArray<A>,
  each: (item: A) => Effect.Effect<void, E, R> | undefined,
): Effect.Effect<void, E, R> => Effect.suspend(() => forEachInOrder(items, each) ?? Effect.void);
