/**
 * Node's timers hold a signed 32-bit delay: `setTimeout(f, ms)` with `ms` above 2^31-1 (about 24.8
 * days) fires after 1 ms instead, with only a warning. A task's timeout or TTL is an int32 of seconds,
 * so its milliseconds can be 1000 times that. Every delay handed to a timer goes through
 * `timerDelayMs`: a longer one is cut to the longest a timer holds (whoever sleeps that long looks
 * again when it fires), never turned into "now".
 */

/** The longest delay a Node timer holds. */
export const MaxTimerDelayMs = 2 ** 31 - 1;

/** `ms` as a timer delay: at least 0, at most `MaxTimerDelayMs`; NaN and ±Infinity as the bound they mean. */
export const timerDelayMs = (ms: number): number => {
  if (Number.isNaN(ms) || ms <= 0) return 0;
  return Math.min(ms, MaxTimerDelayMs);
};
