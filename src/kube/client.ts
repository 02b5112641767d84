/**
 * One API request as an Effect: cancellable (the fiber's interruption aborts it), bounded by a timeout,
 * counted, and failing only with `KubeError`.
 */
import * as Duration from "effect/Duration";
import * as Effect from "effect/Effect";
import { MaxTimerDelayMs } from "../timer-limit.ts";
import { KubeError, toKubeError } from "./errors.ts";
import type { ApiRequest, ApiResponse, KubeClient } from "./kube-client.ts";
import type { RequestCounter, Verb } from "./request-metrics.ts";

export interface RequestSettings {
  readonly counter: RequestCounter;
  /** Bound on one attempt; a request that takes longer is aborted and fails as `Transient`. */
  readonly timeout: Duration.Input;
}

/** JSON merge patch (RFC 7386): metadata writes, whose resourceVersion precondition rides in the body. */
export const mergePatch = "application/merge-patch+json";

/** JSON patch (RFC 6902): status writes, whose UID precondition is a `test` operation. */
export const jsonPatch = "application/json-patch+json";

/** A request that took longer than its settings allow. */
const timedOut = Symbol("timed out");

/**
 * `run(signal)` given `limitMs`: settles as it does, or rejects with `timedOut` once the limit passed
 * (aborting it), whichever comes first; `outer` aborting aborts it too. One timer, where
 * `Effect.timeoutOrElse` forks two fibers (the request and a sleep) and interrupts the loser: ~6 of
 * these per task (bench/PROFILE.md, eighth pass).
 */
const bounded = <A>(
  limitMs: number,
  outer: AbortSignal,
  run: (signal: AbortSignal) => Promise<A>,
): Promise<A> =>
  new Promise<A>((resolve, reject) => {
    const controller = new AbortController();
    const onAbort = () => controller.abort(outer.reason);
    outer.addEventListener("abort", onAbort, { once: true });
    // A Node timer fires at once past its longest delay: a longer limit (or none) sets no timer.
    const timer =
      limitMs <= MaxTimerDelayMs
        ? setTimeout(() => {
            reject(timedOut);
            controller.abort();
          }, limitMs)
        : undefined;
    const settled = () => {
      clearTimeout(timer);
      outer.removeEventListener("abort", onAbort);
    };
    run(controller.signal).then(
      (value) => {
        settled();
        resolve(value);
      },
      (error: unknown) => {
        settled();
        reject(error);
      },
    );
  });

/** Runs one request against `client`. */
export const kubeRequest = (
  settings: RequestSettings,
  verb: Verb,
  client: KubeClient,
  request: ApiRequest,
): Effect.Effect<ApiResponse, KubeError> =>
  Effect.tryPromise({
    try: (signal) =>
      bounded(Duration.toMillis(Duration.fromInputUnsafe(settings.timeout)), signal, (limited) =>
        client.request(request, limited),
      ),
    catch: (error) =>
      error === timedOut
        ? new KubeError({ reason: "Transient", code: 0, message: `${verb} request timed out` })
        : toKubeError(error),
  }).pipe(
    Effect.tap((response) => Effect.sync(() => settings.counter.record(verb, response.status))),
    Effect.tapError((error) => Effect.sync(() => settings.counter.record(verb, error.code))),
  );
