// Backoff timers are only ever stretched, by up to backoffJitter, and spread (src/runtime/backoff-jitter.ts).
import { Effect, Random } from "effect";
import { describe, expect, it } from "vitest";
import { backoffJitter, randomJitter } from "../../src/runtime/backoff-jitter.ts";

describe("backoff jitter", () => {
  it("stretches a delay by up to the jitter fraction, never shortens it, and spreads tasks that failed together", () => {
    const jitter = Effect.runSync(randomJitter.pipe(Random.withSeed("herd")));
    const delays = Array.from({ length: 200 }, () => jitter(1_000));
    for (const delay of delays) {
      expect(delay).toBeGreaterThanOrEqual(1_000);
      expect(delay).toBeLessThanOrEqual(1_000 * (1 + backoffJitter));
    }
    // 200 tasks retrying after the same 1 s backoff land across most of the 200 ms window.
    expect(Math.max(...delays) - Math.min(...delays)).toBeGreaterThan(150);
    expect(new Set(delays).size).toBeGreaterThan(100);
  });
});
