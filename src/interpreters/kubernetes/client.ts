/**
 * One client-node request as an Effect: cancellable (the fiber's interruption aborts the fetch), bounded
 * by a timeout, counted, and failing only with `KubeError`.
 */
import {
  type HttpInfo,
  Observable,
  type RequestContext,
  type ResponseContext,
  type setHeaderOptions,
} from "@kubernetes/client-node";
import { type Duration, Effect } from "effect";
import { KubeError, toKubeError } from "./errors.ts";
import type { RequestCounter, Verb } from "./request-metrics.ts";

/** The per-request options every generated client-node method takes. */
export type ClientOptions = ReturnType<typeof setHeaderOptions>;

/** Request options that abort the request with `signal` and optionally set the Content-Type. */
export const clientOptions = (signal: AbortSignal, contentType?: string): ClientOptions => ({
  middleware: [
    {
      pre: (request: RequestContext) => {
        request.setSignal(signal);
        if (contentType !== undefined) request.setHeaderParam("Content-Type", contentType);
        return new Observable(Promise.resolve(request));
      },
      post: (response: ResponseContext) => new Observable(Promise.resolve(response)),
    },
  ],
  // Keep the authentication middleware of the KubeConfig.
  middlewareMergeStrategy: "append",
});

export interface RequestSettings {
  readonly counter: RequestCounter;
  /** Bound on one attempt; a request that takes longer is aborted and fails as `Transient`. */
  readonly timeout: Duration.Input;
}

/** Runs one request; `call` receives the options to pass to the generated method. */
export const kubeRequest = <A>(
  settings: RequestSettings,
  verb: Verb,
  call: (options: ClientOptions) => Promise<HttpInfo<A>>,
  contentType?: string,
): Effect.Effect<HttpInfo<A>, KubeError> =>
  Effect.tryPromise({
    try: (signal) => call(clientOptions(signal, contentType)),
    catch: toKubeError,
  }).pipe(
    Effect.timeoutOrElse({
      duration: settings.timeout,
      orElse: () =>
        Effect.fail(new KubeError({ reason: "Transient", code: 0, message: `${verb} request timed out` })),
    }),
    Effect.tap((info) => Effect.sync(() => settings.counter.record(verb, info.httpStatusCode))),
    Effect.tapError((error) => Effect.sync(() => settings.counter.record(verb, error.code))),
  );
