/**
 * Backoff timers stretched by a random fraction of up to `backoffJitter`, so tasks that fail together
 * (one sidecar down for a fleet of etcds, an apiserver hiccup) retry spread out. Only stretched, never
 * shortened: the pass a timer starts must find the machine's `retryAt` over. The per-key core applies it
 * (src/reconcile/core.ts) with Effect's Random (seedable in tests); the simulated controller keeps
 * exact delays, so simulations replay to the millisecond.
 */
import * as Effect from "effect/Effect";
import * as Random from "effect/Random";
import type { Jitter } from "../reconcile/core.ts";

export const backoffJitter = 0.2;

/** `delayMs` stretched by `fraction` (in [0, 1)) of the full jitter. */
export const stretched = (delayMs: number, fraction: number): number =>
  Math.round(delayMs * (1 + backoffJitter * fraction));

/** The core's jitter: each backoff stretched by a fresh random fraction of up to `backoffJitter`. */
export const randomJitter: Effect.Effect<Jitter> = Effect.gen(function* () {
  const random = yield* Random.Random;
  return (delayMs) => stretched(delayMs, random.nextDoubleUnsafe());
});
