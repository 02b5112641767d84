/**
 * Whether the controller still reaches the API server, judged from the requests it makes anyway: a
 * `RequestCounter` that also remembers since when no request was answered. An answer below 500 (404,
 * 409 and 429 included) keeps contact; no answer (code 0) or a 5xx loses it from the first such failure
 * after the last answer, until the next answer. An idle controller with an open watch makes no
 * requests: a server that goes away breaks the watch, and the informer's retries mark the loss.
 */
import { RequestCounter, type Verb } from "../kube/request-metrics.ts";

export class ContactCounter extends RequestCounter {
  readonly #now: () => number;
  #lostSince: number | undefined;

  constructor(now: () => number = Date.now) {
    super();
    this.#now = now;
  }

  override record(verb: Verb, code: number): void {
    super.record(verb, code);
    if (code !== 0 && code < 500) this.#lostSince = undefined;
    else this.#lostSince ??= this.#now();
  }

  /** How long contact has been lost, in ms (0 while in contact). */
  lostForMs(): number {
    return this.#lostSince === undefined ? 0 : Math.max(0, this.#now() - this.#lostSince);
  }
}
