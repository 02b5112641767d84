/**
 * The little the runtime remembers about a task between passes: how many error backoffs in a row and
 * until when a handler must not be called again. Both interpreters use this one rule.
 */
import type { PassEnd } from "./task-effect.ts";

export interface RetryState {
  readonly retries: number;
  readonly retryAt?: number;
}

export const noRetry: RetryState = { retries: 0 };

export const nextRetryState = (previous: RetryState, end: PassEnd, now: number): RetryState => {
  if (end._tag === "AwaitChange") return noRetry;
  switch (end.reason) {
    case "backoff":
      return { retries: previous.retries + 1, retryAt: now + end.delayMs };
    case "poll":
      return { retries: 0, retryAt: now + end.delayMs };
    case "waiting":
      return previous;
    case "queued":
    case "ttl":
      return noRetry;
  }
};
