/**
 * One API request as an Effect: cancellable (the fiber's interruption aborts it), bounded by a timeout,
 * counted, and failing only with `KubeError`.
 */
import type * as Duration from "effect/Duration";
import * as Effect from "effect/Effect";
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

/** Runs one request against `client`. */
export const kubeRequest = (
  settings: RequestSettings,
  verb: Verb,
  client: KubeClient,
  request: ApiRequest,
): Effect.Effect<ApiResponse, KubeError> =>
  Effect.tryPromise({
    try: (signal) => client.request(request, signal),
    catch: toKubeError,
  }).pipe(
    Effect.timeoutOrElse({
      duration: settings.timeout,
      orElse: () =>
        Effect.fail(new KubeError({ reason: "Transient", code: 0, message: `${verb} request timed out` })),
    }),
    Effect.tap((response) => Effect.sync(() => settings.counter.record(verb, response.status))),
    Effect.tapError((error) => Effect.sync(() => settings.counter.record(verb, error.code))),
  );
