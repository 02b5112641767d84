/**
 * The exponential backoff after a transient error, one rule for the machine (a handler asked to
 * retry) and both runtimes (a pass aborted by a failed write): base · 2^retries, capped.
 */
import type { LifecycleConfig } from "./types.ts";

export const backoffDelayMs = (
  config: Pick<LifecycleConfig, "backoffBaseMs" | "backoffCapMs">,
  retries: number,
): number => Math.min(config.backoffCapMs, config.backoffBaseMs * 2 ** Math.min(retries, 40));
