/**
 * The error `HandlerContext.objects.get` rejects with when the API server could not answer (no
 * response, 429, 5xx): an outage, not a bug in the handler. `promiseHandler` turns it into a
 * `retry` with ERR_API_UNAVAILABLE, so an outage never counts toward the handler defect limit.
 */
export class ObjectsUnavailable extends Error {
  readonly _tag = "ObjectsUnavailable";
  /** The request path that could not be read. */
  readonly path: string;
  constructor(path: string, message: string, options?: { readonly cause?: unknown }) {
    super(message, options);
    this.name = "ObjectsUnavailable";
    this.path = path;
  }
}

/** The error code a `retry` for an API outage records in `status.lastErrors`. */
export const ApiUnavailableCode = "ERR_API_UNAVAILABLE";
