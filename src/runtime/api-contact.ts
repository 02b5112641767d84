/**
 * Whether the controller still reaches the API server, judged from the requests it makes anyway: a
 * `RequestCounter` (every request of the writer, the informers, the Events and leader election goes
 * through the one given to them) that also remembers since when no request was answered.
 *
 * Answered means an HTTP answer below 500: a 404, 409 or 429 is the server doing its job. No answer
 * (refused, reset, timed out: code 0) and 5xx (the server cannot reach etcd, or is shutting down) count
 * as lost. Contact is lost from the first such failure after the last answered request, and is back
 * with the next answered one. An idle controller with an open watch makes no requests and stays in
 * contact: when the API server goes away, the watch breaks and the informer's retries fail, which is
 * what marks the contact lost (a server that hangs without closing the connection is noticed by the
 * informer's watchdog, or by the Lease renewals under leader election).
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
