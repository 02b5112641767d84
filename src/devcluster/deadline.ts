// Time bounds for startup steps: a shared deadline and a polling helper that respects it.

export class DeadlineExceededError extends Error {
  override readonly name = "DeadlineExceededError";
}

export interface Deadline {
  /** Milliseconds left (never negative). */
  remaining(): number;
  /** Throws DeadlineExceededError mentioning `what` if the deadline has passed. */
  check(what: string): void;
}

export function deadlineIn(ms: number, label: string): Deadline {
  const end = Date.now() + ms;
  return {
    remaining: () => Math.max(0, end - Date.now()),
    check: (what) => {
      if (Date.now() >= end)
        throw new DeadlineExceededError(`${label}: timed out after ${ms} ms waiting for ${what}`);
    },
  };
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export interface PollOptions {
  readonly deadline: Deadline;
  readonly what: string;
  readonly intervalMs?: number;
  /** Checked before each attempt; throw to abort (e.g. when a process died). */
  readonly abortIf?: () => void;
}

/**
 * Calls `attempt` until it returns a value other than `undefined`. Errors thrown by `attempt` count
 * as "not yet"; the last one is included in the timeout error.
 */
export async function pollUntil<T>(attempt: () => Promise<T | undefined>, options: PollOptions): Promise<T> {
  const interval = options.intervalMs ?? 200;
  let lastError: unknown;
  for (;;) {
    options.abortIf?.();
    try {
      const value = await attempt();
      if (value !== undefined) return value;
    } catch (err) {
      lastError = err;
    }
    try {
      options.deadline.check(options.what);
    } catch (err) {
      if (lastError !== undefined && err instanceof Error) {
        err.message += ` (last error: ${lastError instanceof Error ? lastError.message : String(lastError)})`;
      }
      throw err;
    }
    await sleep(Math.min(interval, options.deadline.remaining()));
  }
}
