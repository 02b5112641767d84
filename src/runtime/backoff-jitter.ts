/**
 * Backoff timers are stretched by a random fraction of up to `backoffJitter`: tasks that fail together
 * (one backup-restore sidecar down for a whole fleet of etcds, an apiserver hiccup) then retry spread
 * out instead of in lockstep. Only stretched, never shortened: the pass a timer starts must find the
 * machine's backoff (`retryAt`) over, or it would only wait again.
 *
 * The simulated controller keeps exact delays, so that simulations replay to the millisecond.
 */
import * as Effect from "effect/Effect";
import * as Random from "effect/Random";

export const backoffJitter = 0.2;

/** `delayMs` stretched by up to `backoffJitter` of itself. */
export const jittered = (delayMs: number): Effect.Effect<number> =>
  Effect.map(Random.next, (fraction) => Math.round(delayMs * (1 + backoffJitter * fraction)));
