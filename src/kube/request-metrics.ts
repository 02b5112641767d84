/**
 * API requests counted by verb and response code, at the client: every attempt is one request, so
 * retries count. `code` is the HTTP status, or 0 when no response arrived (network error, timeout,
 * abort). A plain in-memory object; a Prometheus exporter reads `snapshot()`.
 */
import { compareCodeUnits } from "../code-unit-order.ts";

export type Verb = "get" | "list" | "watch" | "create" | "patch" | "delete";

export interface RequestCount {
  readonly verb: Verb;
  readonly code: number;
  readonly count: number;
}

export class RequestCounter {
  readonly #counts = new Map<string, RequestCount>();

  record(verb: Verb, code: number): void {
    const key = `${verb} ${code}`;
    const current = this.#counts.get(key);
    this.#counts.set(key, { verb, code, count: (current?.count ?? 0) + 1 });
  }

  /** Requests of `verb` (answered with `code`, if given). */
  count(verb: Verb, code?: number): number {
    let total = 0;
    for (const entry of this.#counts.values()) {
      if (entry.verb === verb && (code === undefined || entry.code === code)) total += entry.count;
    }
    return total;
  }

  /** Every (verb, code) pair seen so far, sorted. */
  snapshot(): ReadonlyArray<RequestCount> {
    return [...this.#counts.values()].sort((a, b) => compareCodeUnits(a.verb, b.verb) || a.code - b.code);
  }
}
