/**
 * One error type for everything that can go wrong talking to the kube-apiserver. Our `KubeClient`
 * rejects with `ApiCallError` (status code and parsed `Status`); client-node 2.0, still used by the CLI
 * and the dev cluster, throws `ApiException` whose `body` is, for status codes missing from the OpenAPI
 * spec (409, 404, 422, 410, 429 …), the raw JSON *string* of a `Status`; network failures, aborts and
 * timeouts are plain `Error`s/`DOMException`s. `toKubeError` folds all of that into `KubeError` once,
 * so that callers match on `reason` and never parse bodies.
 */
import * as Data from "effect/Data";
import * as Predicate from "effect/Predicate";
import { ApiCallError } from "./kube-client.ts";
import { InvalidPathName } from "./names.ts";

/**
 * What the caller can do about it. `Transient` covers 5xx, request timeouts and network failures (no
 * HTTP response at all: `code` 0). Any other 4xx the apiserver answers (400, 405, 415, 422 …) is
 * `Invalid`: sending the same request again will fail the same way.
 */
export type KubeErrorReason =
  | "Conflict"
  | "NotFound"
  | "Forbidden"
  | "Unauthorized"
  | "Invalid"
  | "Gone"
  | "TooManyRequests"
  | "Transient";

export class KubeError extends Data.TaggedError("KubeError")<{
  readonly reason: KubeErrorReason;
  /** The HTTP status code; 0 when no response arrived (network error, abort, timeout). */
  readonly code: number;
  /** The `Status` message when the server sent one, else what the client said. */
  readonly message: string;
}> {}

/** Worth retrying the same request: transient failures, throttling and any 5xx. */
export const isRetryable = (error: KubeError): boolean =>
  error.reason === "Transient" || error.reason === "TooManyRequests" || error.code >= 500;

/** The reason an HTTP status code stands for (the `Status.reason` is informative only). */
export const reasonOfCode = (code: number): KubeErrorReason => {
  switch (code) {
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "NotFound";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 429:
      return "TooManyRequests";
    case 408:
      return "Transient";
    default:
      return code === 0 || code >= 500 ? "Transient" : "Invalid";
  }
};

/** The `message` of a `Status` carried as a JSON string, an object, or nothing. */
const statusMessage = (body: unknown): string | undefined => {
  let status: unknown = body;
  if (typeof body === "string") {
    try {
      status = JSON.parse(body);
    } catch {
      return body.trim() === "" ? undefined : body.slice(0, 1000);
    }
  }
  return Predicate.isObject(status) && "message" in status && typeof status.message === "string"
    ? status.message
    : undefined;
};

/** A `Status` object (as found in a watch `ERROR` event) as a `KubeError`. */
export const fromStatus = (status: unknown): KubeError => {
  const code =
    Predicate.isObject(status) && "code" in status && typeof status.code === "number" ? status.code : 0;
  return new KubeError({
    reason: reasonOfCode(code),
    code,
    message: statusMessage(status) ?? `Status ${code}`,
  });
};

/** client-node's `ApiException`, matched by shape: this module must not load client-node (kube-client.ts). */
const isApiException = (error: unknown): error is Error & { readonly code: number; readonly body: unknown } =>
  error instanceof Error &&
  "code" in error &&
  typeof error.code === "number" &&
  "body" in error &&
  "headers" in error;

/** The HTTP status code client-node's `Watch` attaches to a non-200 response, if any. */
const attachedStatusCode = (error: unknown): number | undefined =>
  Predicate.isObject(error) && "statusCode" in error && typeof error.statusCode === "number"
    ? error.statusCode
    : undefined;

const describe = (error: unknown): string => {
  if (!(error instanceof Error)) return String(error);
  // undici's "fetch failed" hides the useful part (ECONNREFUSED, certificate errors) in `cause`.
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : "";
  return `${error.name === "Error" ? "" : `${error.name}: `}${error.message}${cause}`;
};

/** Maps anything client-node throws (or rejects with) to a `KubeError`. Total: never throws. */
export const toKubeError = (error: unknown): KubeError => {
  if (error instanceof KubeError) return error;
  // Refused before sending (api-path.ts): the same request would be refused again.
  if (error instanceof InvalidPathName)
    return new KubeError({ reason: "Invalid", code: 0, message: error.message });
  if (error instanceof ApiCallError) {
    const code = error.statusCode;
    return new KubeError({
      reason: reasonOfCode(code),
      code,
      message: code === 0 ? error.message : (statusMessage(error.body) ?? error.message),
    });
  }
  if (isApiException(error)) {
    const code = error.code;
    return new KubeError({
      reason: reasonOfCode(code),
      code,
      message: statusMessage(error.body) ?? (code === 401 ? "Unauthorized" : `HTTP ${code}`),
    });
  }
  const code = attachedStatusCode(error);
  if (code !== undefined) {
    return new KubeError({ reason: reasonOfCode(code), code, message: describe(error) });
  }
  return new KubeError({ reason: "Transient", code: 0, message: describe(error) });
};
