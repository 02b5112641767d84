import { fc, test } from "@fast-check/vitest";
import { describe, expect } from "vitest";
import { DueTimes } from "../../src/reconcile/due-times.ts";

type Op =
  | { readonly op: "set"; readonly key: string; readonly at: number; readonly value: number }
  | { readonly op: "delete"; readonly key: string }
  | { readonly op: "take"; readonly now: number };

const key = fc.constantFrom("a", "b", "c", "d", "e", "f", "g", "h");
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant("set" as const),
      key,
      at: fc.integer({ min: 0, max: 50 }),
      value: fc.integer({ min: 0, max: 3 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("delete" as const), key }) },
  {
    weight: 2,
    arbitrary: fc.record({ op: fc.constant("take" as const), now: fc.integer({ min: 0, max: 50 }) }),
  },
);

describe("DueTimes", () => {
  // The model: a plain map, scanned. Keys due at the same time may come out in any order.
  test.prop([fc.array(op, { maxLength: 400 })], { numRuns: 300 })(
    "returns exactly the keys a map of due times would, earliest first, each with its last value",
    (ops) => {
      const times = new DueTimes<number>();
      const model = new Map<string, number>();
      const values = new Map<string, number>();
      for (const step of ops) {
        if (step.op === "set") {
          times.set(step.key, step.at, step.value);
          model.set(step.key, step.at);
          values.set(step.key, step.value);
        } else if (step.op === "delete") {
          times.delete(step.key);
          model.delete(step.key);
        } else {
          const entries = times.takeDue(step.now);
          const taken = entries.map((entry) => entry.key);
          const expected = [...model].filter(([, at]) => at <= step.now);
          for (const entry of entries) expect(entry.value).toBe(values.get(entry.key));
          for (const [k] of expected) model.delete(k);
          expect([...taken].sort()).toEqual(expected.map(([k]) => k).sort());
          const dueOf = new Map(expected);
          const order = taken.map((k) => dueOf.get(k) ?? -1);
          expect(order).toEqual([...order].sort((x, y) => x - y));
        }
        expect(times.size).toBe(model.size);
        const earliest = model.size === 0 ? undefined : Math.min(...model.values());
        expect(times.next()).toBe(earliest);
      }
    },
  );

  test("replacing a key's time many times keeps one live entry, the latest", () => {
    const times = new DueTimes();
    for (let i = 0; i < 10_000; i += 1) times.set("k", 1_000_000 - i);
    expect(times.size).toBe(1);
    expect(times.next()).toBe(1_000_000 - 9_999);
    expect(times.takeDue(Number.MAX_SAFE_INTEGER).map((entry) => entry.key)).toEqual(["k"]);
    expect(times.next()).toBeUndefined();
  });
});
